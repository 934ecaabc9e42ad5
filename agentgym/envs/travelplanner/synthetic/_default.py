"""The embedded synthetic world: what a TravelPlanner env opens when it is given no database."""

from __future__ import annotations

import os
from pathlib import Path

from agentgym.envs.travelplanner.world.cache import install, is_valid, kind_of
from agentgym.envs.travelplanner.synthetic._generate import generate_world
from agentgym.envs.travelplanner.world import DATABASE_ENV_VAR, World, cache_base

__all__ = ["default_world_path", "open_world", "world_label"]

_VERSION = "6"  # of the embedded synthetic world: bump when generation changes
_KIND = "agentgym-synthetic-world"
_DEFAULT = ("default", 0)  # (scale preset, seed)
_CHECKED: set[Path] = set()


def default_world_path(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Folder of the embedded synthetic world, under the cache; generated on first use."""
    scale, seed = _DEFAULT
    folder = cache_base(cache_dir) / "worlds" / f"synthetic-{scale}-seed{seed}-v{_VERSION}"
    if folder not in _CHECKED:
        if not is_valid(folder, _KIND, _VERSION):
            install(folder, _KIND, _VERSION, lambda tmp: generate_world(tmp, seed=seed, scale=scale))
        _CHECKED.add(folder)
    return folder


def open_world(path: str | os.PathLike[str] | None = None, *,
               cache_dir: str | os.PathLike[str] | None = None) -> World:
    """``World.open(path)``; without a path, ``$AGENTGYM_TRAVELPLANNER_DB`` if set, else the embedded world."""
    if path is None:
        path = os.environ.get(DATABASE_ENV_VAR) or default_world_path(cache_dir)
    return World.open(path, cache_dir=cache_dir)


def world_label(root: str | os.PathLike[str] | None) -> str:
    """How tables and figures name a world, with no absolute path (they are shared beyond this
    machine): the embedded synthetic world (also for None), or ``database <its folder's name>/``."""
    if root is None or kind_of(Path(root)) == _KIND:
        return "embedded synthetic world"
    return f"database {Path(root).name}/"
