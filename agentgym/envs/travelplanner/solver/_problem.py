"""A query read once into what the search needs: the origin, the candidate cities, the trip
shape, the group size and the local constraints, all in the evaluator's terms.

Everything here mirrors how ``strict`` evaluation reads a plan (``_strict*.py``): cities are
written in their database spelling, the destination rule is ``_outside_destination``'s, and the
constraint texts are the ones ``_strict_hard`` compares. With ``must_pass="both"`` the official reading
must agree too, which rules out the few names the official parser would misread.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from agentgym.envs.travelplanner.evaluation import RULE_TEXT
from agentgym.envs.travelplanner.world.index import WorldIndex, index_for
from agentgym.envs.travelplanner.tasks import TravelTask
from agentgym.envs.travelplanner.world import World

__all__ = ["Problem", "read_problem", "MUST_PASS", "BANNED_TRANSPORT"]

MUST_PASS = ("strict", "both")
"""Which evaluators a solved plan must pass: ``strict`` alone, or ``both`` (strict and official)."""
BANNED_TRANSPORT = {"no flight": "flight", "no self-driving": "self-driving"}
# A city whose name the route parsers would split or cut cannot be written into a plan.
_UNWRITABLE = re.compile(r"\bfrom\s|\sto\s|[,;\n]|\([^()]*\)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Problem:
    """The query in solver terms. ``issue`` says why no plan can exist, when that is clear upfront."""

    query: TravelTask
    world: World
    ix: WorldIndex
    must_pass: str
    org: str
    candidates: tuple[str, ...]
    k: int  # cities to visit
    days: int
    dates: tuple[str, ...]
    people: int
    banned_rule: str | None  # the house-rule text a listing must not carry, e.g. "No pets"
    room_type: str | None
    cuisines: tuple[str, ...]  # wanted cuisines, duplicates removed
    banned_transport: str | None  # "flight" or "self-driving"
    budget: float  # math.inf when the budget is ignored
    issue: str | None = None

    @property
    def stay_days(self) -> int:
        """Days spent in a visited city without travelling, over the whole trip."""
        return self.days - self.k - 1

    def date(self, day: int) -> str | None:
        return self.dates[day] if 0 <= day < len(self.dates) else None


def read_problem(query: TravelTask, world: World, *, must_pass: str, ignore_budget: bool) -> Problem:
    ix = index_for(world)
    lc = query.local_constraint
    org = ix.canon_city(query.org) or query.org
    fields: dict[str, Any] = dict(
        query=query, world=world, ix=ix, must_pass=must_pass, org=org, k=query.visiting_city_number,
        days=query.days, dates=tuple(query.date), people=query.people_number,
        banned_rule=RULE_TEXT.get(lc.house_rule) if lc.house_rule else None, room_type=lc.room_type,
        cuisines=tuple(dict.fromkeys(lc.cuisine or ())),
        banned_transport=BANNED_TRANSPORT.get(lc.transportation.lower()) if lc.transportation else None,
        budget=math.inf if ignore_budget else float(query.budget),
    )
    issue = _shape_issue(query) or _origin_issue(query, ix, org, must_pass)
    candidates = () if issue else _candidates(query, ix, org, must_pass)
    if not issue and not candidates:
        issue = f"no city can be visited for the destination {query.dest!r}"
    return Problem(candidates=candidates, issue=issue, **fields)


def writable_city(name: str, must_pass: str, ix: WorldIndex) -> bool:
    """Whether the plan can name ``name`` so that the evaluator reads it back as that city."""
    if ix.canon_city(name) != name or _UNWRITABLE.search(name) or name != name.strip():
        return False
    if must_pass == "both":  # the official reader: 'from' marks a travel day, 'to ' needs transport
        return "from" not in name and "to " not in name and "(" not in name and name in ix.world.state_of
    return True


def _shape_issue(q: TravelTask) -> str | None:
    if q.visiting_city_number < 1:
        return f"visiting_city_number is {q.visiting_city_number}; a trip visits at least one city"
    if q.days < q.visiting_city_number + 1:
        return (f"{q.days} day(s) cannot hold the {q.visiting_city_number + 1} travel days "
                f"of a {q.visiting_city_number}-city trip")
    if q.people_number < 1:
        return f"people_number is {q.people_number}"
    return None


def _origin_issue(q: TravelTask, ix: WorldIndex, org: str, must_pass: str) -> str | None:
    if ix.canon_city(q.org) is None:
        return f"the origin {q.org!r} is not a city of the world"
    if not writable_city(org, must_pass, ix) or (must_pass == "both" and org != q.org):
        return f"the origin {q.org!r} cannot be written so that the evaluator reads it back"
    return None


def _candidates(q: TravelTask, ix: WorldIndex, org: str, must_pass: str) -> tuple[str, ...]:
    """Cities the strict route check accepts inside the trip (``_outside_destination``)."""
    world = ix.world
    dest_city, dest_state = ix.canon_city(q.dest), ix.canon_state(q.dest)
    if dest_city is not None and (dest_state is None or q.visiting_city_number == 1):
        pool = [dest_city]
    elif dest_state is not None:
        pool = sorted(c for c, s in world.state_of.items() if s == dest_state)
    else:  # strict cannot check an unknown destination: any city will do
        pool = sorted(set(world.state_of) | set(world.city_set))
    if must_pass == "both" and q.days > 3:  # the official state check compares the raw text
        pool = [c for c in pool if world.state_of.get(c) == q.dest]
    return tuple(c for c in pool if c != org and writable_city(c, must_pass, ix))
