"""The task splits, drawn by the procedural generator on the world just written.

The tables are written first (their bytes do not depend on the queries); the world is then
opened from them (building the usual table cache, which later opens of the folder reuse), and
``generator.TaskGenerator`` continues with the same random generator: each task is drawn at
the official level mix, solved exactly for its cheapest plan (the reference plan), and priced
from it with the scale's budget slack.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from agentgym.envs.travelplanner.generator import GeneratorConfig, TaskGenerator
from agentgym.envs.travelplanner.synthetic._scale import WorldScale
from agentgym.envs.travelplanner.world import World
from agentgym.errors import DataError


def make_splits(root: Path, sc: WorldScale, rng: np.random.Generator) -> dict[str, list[dict[str, Any]]]:
    """train / validation / test rows, each ordered easy 3/5/7, medium 3/5/7, hard 3/5/7."""
    config = GeneratorConfig(budget_slack_min=sc.budget_slack_min, budget_slack_max=sc.budget_slack_max,
                             hard_transport_share=sc.hard_transport_share, first_date=sc.first_date,
                             n_days=sc.n_days)
    per_group = {"train": sc.train_per_group, "validation": sc.validation_per_group, "test": sc.test_per_group}
    world = World.open(root)
    try:
        generator = TaskGenerator(world, seed=rng, config=config)
        return {split: list(generator.groups(count)) for split, count in per_group.items()}
    except DataError as exc:
        raise DataError(f"{exc}; raise route_fraction or distance_pair_fraction") from None
    finally:
        world.forget()  # the folder may be a temporary one about to be renamed into place
