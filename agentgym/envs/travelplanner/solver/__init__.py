"""An exact TravelPlanner solver: the cheapest plan that passes every constraint, or a proof
that none fits the budget.

``solve(query, world)`` searches every route (ordered cities of the destination), every split
of the trip's days between them and both transport regimes (driving throughout, or flights
and taxis), with the hotels and meals of each city solved exactly, by branch and bound on cost.
A plan it returns passes every commonsense and hard constraint of ``strict`` evaluation (with
``must_pass="both"`` also of ``official`` evaluation). ``infeasible`` is a proof: the search was
exhaustive and no plan costs at most the budget (or some part of the trip has no option at
all). The design and its exactness arguments are in ``docs/travelplanner.md`` ("Solver and
generator") and in the module docstrings.

Results:

* ``status="solved"``: ``plan`` passes; ``optimal`` says whether it is proven the cheapest
  (it is unless a limit stopped the search, ``stats.stopped``);
* ``status="infeasible"``: no plan within the budget exists; ``reason`` says why;
* ``status="timeout"``: a limit stopped the search before any plan was found.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from agentgym._deprecated import renamed_kwargs
from agentgym.envs.travelplanner.tasks import TravelTask
from agentgym.envs.travelplanner.solver._problem import MUST_PASS, read_problem, writable_city
from agentgym.envs.travelplanner.solver._render import render_plan
from agentgym.envs.travelplanner.solver._search import Search
from agentgym.envs.travelplanner.solver._transport import REGIMES
from agentgym.envs.travelplanner.world import World
from agentgym.errors import ConfigError

__all__ = ["solve", "SolveResult", "SolveStats", "MUST_PASS", "STATUSES", "writable_city"]

STATUSES = ("solved", "infeasible", "timeout")


class SolveStats(BaseModel):
    """What the search did."""

    model_config = ConfigDict(frozen=True)

    seconds: float
    candidates: int  # cities the trip may visit
    nodes: int  # partial routes expanded
    leaves: int  # complete shapes (route, stay split, regime) priced exactly
    cut: int  # subtrees pruned by the cost bound
    leg_lookups: int  # distinct (leg, day, regime) transport lookups
    stopped: bool  # a time or node limit ended the search early


class SolveResult(BaseModel):
    """The outcome of ``solve``: a plan with its cost, or why there is none."""

    model_config = ConfigDict(frozen=True)

    status: Literal["solved", "infeasible", "timeout"]
    plan: list[dict[str, Any]] | None = None
    cost: float | None = None
    optimal: bool = False
    regime: str | None = None  # "self-driving" or "flight/taxi"
    route: tuple[str, ...] = ()
    reason: str = ""
    stats: SolveStats

    @property
    def solved(self) -> bool:
        return self.status == "solved"


@renamed_kwargs({"query": "task"})
def solve(task: TravelTask | Mapping[str, Any], world: World, *, time_limit: float | None = 30.0,
          node_limit: int | None = None, must_pass: str = "strict", ignore_budget: bool = False) -> SolveResult:
    """The cheapest plan for ``task`` in ``world`` that passes the evaluators ``must_pass`` names.

    ``must_pass``: ``strict`` (the plan passes strict evaluation; proofs hold for strict) or
    ``both`` (it also passes official evaluation: only venues and flights both evaluators
    read the same way are used). ``time_limit`` (seconds) and ``node_limit`` stop the search
    early; a node limit keeps results independent of machine speed. ``ignore_budget`` finds
    the cheapest plan whatever the task's budget (the generator prices tasks this way).
    """
    if must_pass not in MUST_PASS:
        raise ConfigError("must_pass", must_pass, MUST_PASS)
    start = time.perf_counter()
    q = task if isinstance(task, TravelTask) else TravelTask.from_row(task, id="custom")
    problem = read_problem(q, world, must_pass=must_pass, ignore_budget=ignore_budget)
    search = Search(problem, time_limit=time_limit, node_limit=node_limit)
    if problem.issue is None:
        search.run()
    stats = SolveStats(seconds=time.perf_counter() - start, candidates=len(problem.candidates),
                       nodes=search.nodes, leaves=search.leaves, cut=search.cut,
                       leg_lookups=search.legs.lookups, stopped=search.stopped)
    if search.best is not None:
        plan, cost = render_plan(search, search.best)
        return SolveResult(status="solved", plan=plan, cost=cost, optimal=not search.stopped,
                           regime=search.best.regime, route=search.best.cities, stats=stats,
                           reason="cheapest plan" if not search.stopped else "best plan found before the limit")
    if search.stopped:
        return SolveResult(status="timeout", reason="the limit was reached before any plan was found", stats=stats)
    return SolveResult(status="infeasible", reason=problem.issue or _why_not(search), stats=stats)


def _why_not(search: Search) -> str:
    p = search.p
    if search.over_budget:
        return f"every plan costs more than the budget {p.budget:g} (exhaustive search)"
    regimes = [r for r in REGIMES if search.legs.allowed(r)]
    if not any(st.stay_bound(s) < math.inf for st in search.stays.values() for s in range(p.stay_days + 1)):
        return (f"no city of {p.query.dest} has an admissible accommodation with enough restaurants "
                f"and attractions for a stay")
    if not any(search.legs.best(p.org, c, 0, r) for c in p.candidates for r in regimes):
        return f"no allowed transport from {p.org} to {p.query.dest} on {p.date(0)}"
    if not any(search.legs.best(c, p.org, p.days - 1, r) for c in p.candidates for r in regimes):
        return f"no allowed transport from {p.query.dest} back to {p.org} on {p.date(p.days - 1)}"
    if search.uncovered:
        return f"no route's restaurants serve every wanted cuisine ({', '.join(p.cuisines)}) (exhaustive search)"
    return "no route, transport, accommodation and meals satisfy the constraints (exhaustive search)"
