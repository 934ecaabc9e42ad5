"""The task splits, drawn by the procedural generator on the world just written.

The tables are written first (their bytes do not depend on the queries); the world is then
opened from them (building the usual table cache, which later opens of the folder reuse), and
``generator.TaskGenerator`` continues with the same random generator: each task is drawn at
the official level mix, solved exactly for its cheapest plan (the reference plan), and priced
from it with the scale's budget slack.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from agentgym.envs.travelplanner.generator import GeneratorConfig, TaskGenerator
from agentgym.envs.travelplanner.synthetic._scale import WorldScale
from agentgym.envs.travelplanner.world import World
from agentgym.errors import DataError


_EVERY_S = 5.0  # seconds between progress lines within a split


def make_splits(root: Path, sc: WorldScale, rng: np.random.Generator,
                say: Callable[[str], None] = lambda line: None) -> dict[str, list[dict[str, Any]]]:
    """train / validation / test rows, each ordered easy 3/5/7, medium 3/5/7, hard 3/5/7."""
    config = GeneratorConfig(budget_slack_min=sc.budget_slack_min, budget_slack_max=sc.budget_slack_max,
                             hard_transport_share=sc.hard_transport_share, first_date=sc.first_date,
                             n_days=sc.n_days)
    per_group = {"train": sc.train_per_group, "validation": sc.validation_per_group, "test": sc.test_per_group}
    say("opening the world (parsing its tables into the cache)")
    world = World.open(root)
    try:
        generator = TaskGenerator(world, seed=rng, config=config)
        splits: dict[str, list[dict[str, Any]]] = {}
        for split, count in per_group.items():
            say(f"drawing the {split} tasks ({9 * count} tasks, each solved for its gold plan)")
            rows = splits[split] = []
            shown = time.monotonic()
            for row in generator.groups(count):
                rows.append(row)
                if time.monotonic() - shown >= _EVERY_S:
                    say(f"{split}: {len(rows)} of {9 * count} tasks")
                    shown = time.monotonic()
        return splits
    except DataError as exc:
        raise DataError(f"{exc}; raise route_fraction or distance_pair_fraction") from None
    finally:
        world.forget()  # the folder may be a temporary one about to be renamed into place
