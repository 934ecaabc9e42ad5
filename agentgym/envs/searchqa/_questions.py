"""Questions over the synthetic knowledge base, with their answers and supporting passages.

Four kinds, as in HotpotQA and Search-R1's training mix:

* ``single``: one fact of one entity ("In which city was X born?"), one search.
* ``bridge``: a fact of an entity named in another entity's passage ("In which country was X
  born?" needs X's birth city, then that city's country), two searches.
* ``comparison``: a fact of two entities compared ("Who was born first, X or Y?"), two searches.
* ``profile`` (long form): describe an entity; the reference answer states its facts.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import NamedTuple

from agentgym.envs.searchqa._kb import KnowledgeBase
from agentgym.envs.searchqa._names import WORK_KINDS, with_article

__all__ = ["Draft", "draw_short", "draw_profile"]


class Draft(NamedTuple):
    kind: str
    question: str
    answers: list[str]
    support: list[str]  # entity names whose passages hold the facts


# -- single hop ------------------------------------------------------------------------------
def _single(kb: KnowledgeBase, rng: random.Random) -> Draft:
    p, c, w = kb.pick("persons", rng), kb.pick("companies", rng), kb.pick("works", rng)
    kind, _, role = WORK_KINDS[w.kind]
    options = [
        (f"In which city was {p.name} born?", [p.birth_city], [p.name]),
        (f"In what year was {p.name} born?", [str(p.birth_year)], [p.name]),
        (f"Which university did {p.name} attend?", [p.university], [p.name]),
        (f"Who founded {c.name}?", [c.founder], [c.name]),
        (f"In what year was {c.name} founded?", [str(c.founded)], [c.name]),
        (f"In which city is {c.name} headquartered?", [c.city], [c.name]),
        (f"Who is the {role} of the {kind} {w.title}?", [w.creator], [w.title]),
    ]
    city = kb.pick("cities", rng)
    options.append((f"In which country is the city of {city.name}?", [city.country], [city.name]))
    question, answers, support = rng.choice(options)
    return Draft("single", question, answers, support)


# -- bridge (two hops) -----------------------------------------------------------------------
def _bridge(kb: KnowledgeBase, rng: random.Random) -> Draft | None:
    p, c, w = kb.pick("persons", rng), kb.pick("companies", rng), kb.pick("works", rng)
    kind, _, role = WORK_KINDS[w.kind]
    founder, creator = kb.persons[c.founder], kb.persons[w.creator]
    uni = kb.universities[p.university]
    options = [
        (f"In which country was {p.name} born?", [kb.cities[p.birth_city].country], [p.name, p.birth_city]),
        (f"In what year was the founder of {c.name} born?", [str(founder.birth_year)], [c.name, founder.name]),
        (f"In which city was the {role} of the {kind} {w.title} born?", [creator.birth_city], [w.title, creator.name]),
        (f"In which city is the university that {p.name} attended?", [uni.city], [p.name, uni.name]),
        (f"In which country is the headquarters of {c.name}?", [kb.cities[c.city].country], [c.name, c.city]),
    ]
    city = kb.pick("cities", rng)
    capital = kb.countries[city.country].capital
    if capital != city.name:
        options.append((f"What is the capital of the country in which {city.name} lies?", [capital],
                        [city.name, city.country]))
    question, answers, support = rng.choice(options)
    return Draft("bridge", question, answers, support)


# -- comparison ------------------------------------------------------------------------------
def _comparison(kb: KnowledgeBase, rng: random.Random) -> Draft | None:
    which = rng.randrange(5)
    if which == 0:
        a, b = kb.pick("persons", rng), kb.pick("persons", rng)
        return _earlier(f"Who was born first, {a.name} or {b.name}?", a.name, a.birth_year, b.name, b.birth_year)
    if which == 1:
        a, b = kb.pick("companies", rng), kb.pick("companies", rng)
        return _earlier(f"Which company was founded earlier, {a.name} or {b.name}?",
                        a.name, a.founded, b.name, b.founded)
    if which == 2:
        a, b = kb.pick("works", rng), kb.pick("works", rng)
        return _earlier(f"Which came out first, {a.title} or {b.title}?", a.title, a.year, b.title, b.year)
    a, b = kb.pick("cities", rng), kb.pick("cities", rng)
    if a.name == b.name:
        return None
    if which == 3:
        bigger = a.name if a.population > b.population else b.name
        return Draft("comparison", f"Which city has the larger population, {a.name} or {b.name}?", [bigger],
                     [a.name, b.name])
    same = "yes" if a.country == b.country else "no"
    return Draft("comparison", f"Are {a.name} and {b.name} in the same country?", [same], [a.name, b.name])


def _earlier(question: str, a: str, year_a: int, b: str, year_b: int) -> Draft | None:
    if a == b or year_a == year_b:
        return None
    return Draft("comparison", question, [a if year_a < year_b else b], [a, b])


# -- long form -------------------------------------------------------------------------------
def draw_profile(kb: KnowledgeBase, rng: random.Random) -> Draft:
    """A describe-this-entity question whose reference answer states the entity's facts."""
    if rng.random() < 0.6:
        p = kb.pick("persons", rng)
        facts = [f"{p.name} is {with_article(p.occupation)} born in {p.birth_city} in {p.birth_year}.",
                 f"{p.surname} studied at {p.university}."]
        facts += [f"{p.surname} founded {name} in {kb.companies[name].founded}." for name in p.companies]
        facts += [f"{p.surname} is known for the {WORK_KINDS[kb.works[t].kind][0]} {t}." for t in p.works]
        return Draft("profile", f"Who is {p.name}? Describe their background and main achievements.",
                     [" ".join(facts)], [p.name])
    c = kb.pick("companies", rng)
    text = (f"{c.name} is {with_article(c.industry)} company headquartered in {c.city}, {kb.cities[c.city].country}. "
            f"It was founded in {c.founded} by {c.founder} and employs about {c.employees:,} people.")
    return Draft("profile", f"What is {c.name}? Describe what it does, where it is based and its history.",
                 [text], [c.name, c.city])


_KINDS: tuple[tuple[Callable[[KnowledgeBase, random.Random], Draft | None], float], ...] = (
    (_single, 0.3), (_bridge, 0.45), (_comparison, 0.25))


def draw_short(kb: KnowledgeBase, rng: random.Random) -> Draft | None:
    """A short-answer question of a kind drawn 30% single, 45% bridge, 25% comparison; None to redraw."""
    draw = rng.random()
    for make, weight in _KINDS:
        if draw < weight:
            return make(kb, rng)
        draw -= weight
    return _KINDS[-1][0](kb, rng)
