"""Fixtures for the TravelPlanner evaluator tests (the real data fixtures live in tests/conftest.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def train_queries(real_travelplanner: Path):
    from agentgym.envs.travelplanner.tasks import load_tasks

    return load_tasks(real_travelplanner / "queries" / "train.jsonl")


@pytest.fixture(scope="session")
def validation_queries(real_travelplanner: Path):
    from agentgym.envs.travelplanner.tasks import load_tasks

    return load_tasks(real_travelplanner / "queries" / "validation.jsonl")


@pytest.fixture(scope="session")
def plan_sets(real_travelplanner: Path) -> dict[str, list[dict]]:
    """``{file name: [{"id", "query", "plan"}, ...]}`` for every file in plan_sets/."""
    folder = real_travelplanner / "plan_sets"
    return {p.name: [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
            for p in sorted(folder.glob("*.jsonl"))}


@pytest.fixture
def rockford(train_queries):
    """Train query 0 (St. Petersburg -> Rockford, 3 days, easy) and a fresh copy of its gold plan."""
    q = train_queries[0]
    return q, copy.deepcopy([dict(d) for d in q.annotated_plan])


@pytest.fixture(scope="session")
def tiny_world(tmp_path_factory: pytest.TempPathFactory):
    """A tiny synthetic world (no real data needed): for the property tests."""
    from agentgym.envs.travelplanner.tasks import load_tasks
    from agentgym.envs.travelplanner.synthetic import generate_world
    from agentgym.envs.travelplanner.world import World

    root = tmp_path_factory.mktemp("tiny-world")
    generate_world(root, seed=3, scale="tiny")
    world = World.open(root)
    return world, load_tasks("train", world_root=world.root)
