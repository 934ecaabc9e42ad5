"""The natural-language query: a request sentence in one of several phrasings, then one
sentence per local constraint in a random order, all rendered from the query's fields."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import numpy as np

from agentgym.envs.travelplanner.generator._draw import Spec, pick

__all__ = ["task_text"]

_TEMPLATES_CITY = (
    "Please help me plan a trip from {org} to {dest} spanning {days} days from {dates}. "
    "The travel should be planned for {who} with a budget of {budget}.",
    "Could you create a {days}-day travel plan for {who}, departing from {org} to {dest} from {dates}? "
    "The budget is {budget}.",
    "I need a {days}-day itinerary for {who} going from {org} to {dest}, from {dates}, "
    "with a total budget of {budget}.",
    "Please provide a travel plan for {who} that departs from {org} and heads to {dest} for {days} days, "
    "from {dates}. The total budget is {budget}.",
    "Can you put together a {days}-day trip to {dest} for {who}, leaving {org} and traveling from {dates}? "
    "We can spend at most {budget}.",
    "Plan a {days}-day journey from {org} to {dest} for {who}, {dates}, within a budget of {budget}.",
)
_TEMPLATES_STATE = (
    "Can you devise a travel plan for {who} that departs from {org} and includes {n} cities in {dest}? "
    "The trip is scheduled for {days} days from {dates}. The trip's total budget is {budget}.",
    "Please help me plan a {days}-day trip for {who}, departing from {org} and visiting {n} cities in "
    "{dest} from {dates}. The budget for this trip is {budget}.",
    "We are planning a {days}-day journey for {who}, starting in {org} and covering {n} different "
    "cities in {dest} from {dates}. Our budget is {budget}.",
    "Could you draft a {days}-day travel plan for {who} departing from {org} and touring {n} cities "
    "in {dest}? The travel dates are from {dates}, and the total budget is {budget}.",
    "I'd like a {days}-day itinerary for {who} from {org} through {n} cities of {dest}, {dates}, "
    "spending no more than {budget}.",
    "Design a {days}-day tour of {n} cities in {dest} for {who}, starting and ending in {org}, "
    "from {dates}, on a budget of {budget}.",
)
_HOUSE_RULE_TEXT = {
    "smoking": ("We require accommodations where smoking is allowed.", "Our accommodation must allow smoking."),
    "parties": ("We require accommodations where parties are allowed.",
                "We plan a small get-together, so the accommodation must allow parties."),
    "children under 10": ("We will be traveling with children under 10, so the accommodation must allow them.",
                          "Our accommodation must welcome children under 10."),
    "visitors": ("Our accommodation must allow visitors.", "We need accommodations that allow visitors."),
    "pets": ("We'll be bringing our pets, so pet-friendly accommodations are a must.",
             "Our accommodation must allow pets."),
}
_ROOM_TYPE_TEXT = {
    "entire room": ("We would like to rent entire rooms for our accommodations.",
                    "Entire rooms for accommodations would be ideal."),
    "private room": ("We require accommodations that provide private rooms.",
                     "We'd like private rooms for our stay."),
    "not shared room": ("We prefer not to stay in shared rooms.",
                        "Our accommodations should not be shared rooms."),
    "shared room": ("We'd like to stay in shared rooms to save money.",
                    "Shared rooms are what we're looking for."),
}
_TRANSPORT_TEXT = {
    "no flight": ("Please note we prefer not to take any flights.",
                  "We would prefer a journey that does not involve flying."),
    "no self-driving": ("We would prefer not to drive ourselves.",
                        "Please note that self-driving is not an option for us."),
}
_CUISINE_TEXT = (
    "We'd like to try {items} cuisines during the trip.",
    "We are keen to taste {items} food along the way.",
    "Our meals should include {items} cuisines.",
)
_NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}


def task_text(rng: np.random.Generator, spec: Spec, budget: int) -> str:
    """The request sentence, then the constraint sentences in a random order."""
    text = _request(rng, spec, budget)
    extra = _constraint_sentences(rng, spec.constraint)
    return " ".join([text, *(extra[i] for i in rng.permutation(len(extra)).tolist())])


def _request(rng: np.random.Generator, spec: Spec, budget: int) -> str:
    templates = _TEMPLATES_CITY if spec.visiting_city_number == 1 and spec.days == 3 else _TEMPLATES_STATE
    k = spec.visiting_city_number
    return pick(rng, templates).format(
        org=spec.org, dest=spec.dest, days=spec.days, who=_who(rng, spec.people),
        n=_NUMBER_WORDS[k] if k in _NUMBER_WORDS and rng.random() < 0.5 else k,
        dates=_date_span(rng, date.fromisoformat(spec.dates[0]), date.fromisoformat(spec.dates[-1])),
        budget=f"${budget:,}")


def _who(rng: np.random.Generator, n: int) -> str:
    if n == 1:
        return pick(rng, ("a single person", "one person", "one traveler", "a solo traveler"))
    return pick(rng, (f"a group of {n}", f"{_NUMBER_WORDS.get(n, n)} people", f"a party of {n}"))


def _constraint_sentences(rng: np.random.Generator, c: dict) -> list[str]:
    extra: list[str] = []
    if c["house rule"]:
        extra.append(pick(rng, _HOUSE_RULE_TEXT[c["house rule"]]))
    if c["room type"]:
        extra.append(pick(rng, _ROOM_TYPE_TEXT[c["room type"]]))
    if c["cuisine"]:
        extra.append(pick(rng, _CUISINE_TEXT).format(items=_list_text(c["cuisine"])))
    if c["transportation"]:
        extra.append(pick(rng, _TRANSPORT_TEXT[c["transportation"]]))
    return extra


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _date_span(rng: np.random.Generator, first: date, last: date) -> str:
    if rng.random() < 0.75:
        return f"{first:%B} {_ordinal(first.day)} to {last:%B} {_ordinal(last.day)}, {last.year}"
    return f"{first.isoformat()} to {last.isoformat()}"


def _list_text(items: Sequence[str]) -> str:
    if len(items) == 1:
        return items[0]
    if len(items) == 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + ", and " + items[-1]
