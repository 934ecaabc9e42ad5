"""Procedural TravelPlanner tasks, each with a reference plan that passes by construction.

``generate_tasks(world, n, seed=...)`` draws task specs at the official level mix (see
``_draw``), solves each one exactly for its cheapest plan (``solver.solve`` with ``must_pass="both"``,
budget ignored, with a node limit so the result does not depend on machine speed), and prices
the task from it: ``budget = ceil(cost * (1 + slack) / 100) * 100`` with the slack drawn
uniformly from ``[budget_slack_min, budget_slack_max]``. Specs without a plan are redrawn.
The reference plan becomes the row's ``annotated_plan``, so every generated task passes
both evaluators (``strict`` and ``official``) with its own plan, and the task text is
rendered from the fields in varied phrasings.

Rows are in the Hugging Face field format, ordered like the official splits (easy 3/5/7,
medium 3/5/7, hard 3/5/7), and identical for the same world, seed and config.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import date
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from agentgym.envs.travelplanner.generator._draw import (
    CITIES_FOR_DAYS,
    LEVELS,
    TRIP_DAYS,
    Atlas,
    Spec,
    draw_spec,
)
from agentgym.envs.travelplanner.generator._text import task_text
from agentgym.envs.travelplanner.tasks import TravelTask
from agentgym.envs.travelplanner.solver import solve
from agentgym.envs.travelplanner.world import World
from agentgym._deprecated import module_aliases
from agentgym._toolbox import is_int
from agentgym.errors import ConfigError, DataError

__all__ = ["GeneratorConfig", "generate_tasks", "TaskGenerator", "LEVELS", "TRIP_DAYS", "TASK_FIELDS"]

TASK_FIELDS = ("org", "dest", "days", "visiting_city_number", "date", "people_number", "local_constraint",
               "budget", "query", "level", "annotated_plan", "reference_information")
GROUPS = tuple((level, days) for level in LEVELS for days in TRIP_DAYS)


class GeneratorConfig(BaseModel):
    """Knobs of the generator; the defaults follow the official data."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    budget_slack_min: float = 0.1
    budget_slack_max: float = 0.4
    hard_transport_share: float = 1.0  # hard queries with a transportation rule (official: ~0.85)
    first_date: date = date(2022, 3, 1)
    n_days: int = 31  # trips fall within first_date .. first_date + n_days - 1
    node_limit: int = 200_000  # per solve; a spec whose search hits it is redrawn
    max_attempts: int = 2000  # draws per query before giving up on the world

    def check(self) -> GeneratorConfig:
        if not 0.0 <= self.budget_slack_min <= self.budget_slack_max:
            raise ConfigError("budget_slack_min", self.budget_slack_min,
                              f"a float in [0, budget_slack_max={self.budget_slack_max}]")
        if not 0.0 <= self.hard_transport_share <= 1.0:
            raise ConfigError("hard_transport_share", self.hard_transport_share, "a float in [0, 1]")
        if self.n_days < 7:
            raise ConfigError("n_days", self.n_days, "an int >= 7 (7-day trips)")
        for name in ("node_limit", "max_attempts"):
            if getattr(self, name) < 1:
                raise ConfigError(name, getattr(self, name), "an int >= 1")
        return self


class TaskGenerator:
    """Draws, solves and renders tasks on one world with one random generator."""

    def __init__(self, world: World, *, seed: int | np.random.Generator = 0,
                 config: GeneratorConfig | None = None) -> None:
        self.world = world
        self.config = (config or GeneratorConfig()).check()
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(_seed(seed))
        self.atlas = Atlas(world)
        self.seen: set[tuple] = set()
        self.attempts = 0

    def task(self, level: str, days: int) -> dict[str, Any]:
        """One row of the given level and trip length; raises DataError when the world has
        no feasible task of that kind within ``max_attempts`` draws."""
        if level not in LEVELS or days not in CITIES_FOR_DAYS:
            raise ConfigError("group", (level, days), [f"({lv!r}, {d})" for lv, d in GROUPS])
        cfg = self.config
        for _ in range(cfg.max_attempts):
            self.attempts += 1
            spec = draw_spec(self.rng, self.atlas, level, days, cfg.first_date, cfg.n_days, cfg.hard_transport_share)
            if spec is None:
                break
            if spec.key in self.seen:
                continue
            row = self._priced(spec)
            if row is not None:
                self.seen.add(spec.key)
                return row
        raise DataError(f"no feasible {level} {days}-day task after {cfg.max_attempts} attempts; "
                        f"the world is too sparse (too few flights, roads or venues for such trips)")

    def _priced(self, spec: Spec) -> dict[str, Any] | None:
        meta = _meta(spec, budget=0, text="")
        result = solve(TravelTask.from_row(meta), self.world, must_pass="both", ignore_budget=True,
                       time_limit=None, node_limit=self.config.node_limit)
        if not (result.solved and result.optimal):
            return None
        slack = self.rng.uniform(self.config.budget_slack_min, self.config.budget_slack_max)
        budget = int(math.ceil(result.cost * (1.0 + slack) / 100.0)) * 100
        meta = _meta(spec, budget=budget, text=task_text(self.rng, spec, budget))
        padded = result.plan + [{} for _ in range(max(7, spec.days) - len(result.plan))]
        row = {**meta, "date": repr(list(spec.dates)), "local_constraint": repr(spec.constraint),
               "annotated_plan": repr([meta, padded]), "reference_information": ""}
        return {k: row[k] for k in TASK_FIELDS}

    def groups(self, per_group: int) -> Iterator[dict[str, Any]]:
        """``per_group`` rows of each (level, days) group, in the official split order."""
        for level, days in GROUPS:
            for _ in range(per_group):
                yield self.task(level, days)


def generate_tasks(world: World, n: int | None = None, *, per_group: int | None = None,
                   seed: int | np.random.Generator = 0,
                   config: GeneratorConfig | None = None) -> list[dict[str, Any]]:
    """``n`` task rows spread evenly over the nine (level, days) groups (the first ``n % 9``
    groups get one more), or ``per_group`` of each; ordered easy 3/5/7, medium 3/5/7, hard 3/5/7."""
    if (n is None) == (per_group is None):
        raise ConfigError("n", n, "exactly one of n and per_group")
    gen = TaskGenerator(world, seed=seed, config=config)
    if per_group is not None:
        if per_group < 0:
            raise ConfigError("per_group", per_group, "an int >= 0")
        return list(gen.groups(per_group))
    if n < 0:
        raise ConfigError("n", n, "an int >= 0")
    counts = [n // len(GROUPS) + (i < n % len(GROUPS)) for i in range(len(GROUPS))]
    return [gen.task(level, days) for (level, days), count in zip(GROUPS, counts) for _ in range(count)]


def _meta(spec: Spec, *, budget: int, text: str) -> dict[str, Any]:
    return {"org": spec.org, "dest": spec.dest, "days": spec.days, "visiting_city_number": spec.visiting_city_number,
            "date": list(spec.dates), "people_number": spec.people, "local_constraint": dict(spec.constraint),
            "budget": budget, "query": text, "level": spec.level}


def _seed(seed: Any) -> int:
    if not (is_int(seed) or isinstance(seed, np.integer)) or seed < 0:
        raise ConfigError("seed", seed, "a non-negative int or a numpy Generator")
    return int(seed)


__getattr__ = module_aliases(__name__, {"QueryGenerator": "TaskGenerator", "QUERY_FIELDS": "TASK_FIELDS",
                                        "generate_queries": "generate_tasks"})
