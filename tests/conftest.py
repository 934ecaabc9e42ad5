"""Shared fixtures: an isolated cache folder, the embedded world, and the real shared data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("AGENTGYM_SHARED_DATA", REPO.parent / "shared" / "data"))
TRAVELPLANNER_DATA = SHARED_DATA / "travelplanner"


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    # Tests never read or write the user's ~/.cache.
    if "AGENTGYM_CACHE_DIR" not in os.environ:
        os.environ["AGENTGYM_CACHE_DIR"] = str(tmp_path_factory.mktemp("agentgym-cache"))
    os.environ.pop("AGENTGYM_TRAVELPLANNER_DB", None)
    os.environ.pop("AGENTGYM_TRAVELPLANNER_QUERIES", None)
    os.environ.pop("AGENTGYM_TRAVELPLANNER_TASKS", None)


@pytest.fixture(scope="session")
def real_travelplanner() -> Path:
    """The real TravelPlanner data folder; tests using it skip when it is absent."""
    if not (TRAVELPLANNER_DATA / "database").is_dir():
        pytest.skip(f"real TravelPlanner data not found at {TRAVELPLANNER_DATA}; "
                    "set AGENTGYM_SHARED_DATA to the folder holding travelplanner/")
    return TRAVELPLANNER_DATA


@pytest.fixture(scope="session")
def real_world(real_travelplanner: Path):
    from agentgym.envs.travelplanner.world import World

    return World.open(real_travelplanner)



# -- learning tests' seeds (learning_helpers.py): the extra ones run only when asked for -------------
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "extra_seed: a learning test's seed beyond the first (learning_helpers.py)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the learning tests' extra seeds unless ``-m`` names ``learning_slow``."""
    if "learning_slow" in (config.getoption("markexpr") or ""):
        return
    extra = [item for item in items if item.get_closest_marker("extra_seed")]
    if extra:
        config.hook.pytest_deselected(items=extra)
        items[:] = [item for item in items if not item.get_closest_marker("extra_seed")]
