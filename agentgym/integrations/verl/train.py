"""``agentgym train RECIPE [overrides...]``: verl's PPO entry point with one of the bundled recipes.

A recipe is a Hydra config (``recipes/<name>.yaml``) on top of verl's ``ppo_trainer``; overrides
are verl's usual ``key=value`` arguments. A variant (``planner_r1_async``) is a small YAML of
overrides over another recipe (``VARIANTS``), applied as overrides before the user's, since Hydra
lets only the primary config set its search path. ``--dry-run`` composes the config in-process (no Ray, no
GPU), prints it resolved and checks that every referenced file, registry entry and key exists,
then what the run will meet: its length, reward stages and a few rows played (``preflight``).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from agentgym._toolbox import nearest_key, require_choice
from agentgym.errors import ConfigError

__all__ = ["RECIPES", "recipe_dir", "recipe_text", "compose_recipe", "resolved_yaml", "launch_command"]

RECIPES = ("grpo", "planner_r1", "prs_vspo", "planner_r1_async", "prs_vspo_async", "planner_r1_separate_async")
"""The bundled recipes: GRPO baseline, Planner-R1 on TravelPlanner, PRS + VSPO on search QA, and the
two latter trained asynchronously (verl's colocate_async; Planner-R1 also separate_async)."""
VARIANTS = {"planner_r1_async": "planner_r1", "prs_vspo_async": "prs_vspo",
            "planner_r1_separate_async": "planner_r1_async"}
"""Each variant recipe and the recipe its overrides apply to."""

_UNKNOWN_KEY = re.compile(r"Could not override '([^']+)'")
"""Hydra's message for an override of a key the config does not have."""


@contextlib.contextmanager
def recipe_dir() -> Iterator[Path]:
    """The folder of the recipe YAML files, as a real path (Hydra needs one)."""
    with resources.as_file(resources.files("agentgym.integrations.verl").joinpath("recipes")) as path:
        yield Path(path)


def recipe_text(name: str) -> str:
    """A recipe's YAML, comments included."""
    _check_name(name)
    return resources.files("agentgym.integrations.verl").joinpath("recipes", f"{name}.yaml").read_text("utf-8")


def compose_recipe(name: str, overrides: Sequence[str] = ()) -> Any:
    """The full verl config of a recipe with ``overrides`` applied (Hydra's rules: unknown keys fail,
    a misspelt one as a ``ConfigError`` naming the key it is closest to)."""
    _check_name(name)
    from hydra import compose, initialize_config_dir
    from hydra.errors import ConfigCompositionException

    base, variant = _resolve(name)
    with recipe_dir() as folder, initialize_config_dir(config_dir=str(folder), version_base=None):
        try:
            return compose(config_name=base, overrides=[*variant, *overrides])
        except ConfigCompositionException as exc:
            unknown = _UNKNOWN_KEY.match(str(exc))
            if unknown is None:
                raise
            from omegaconf import OmegaConf

            keys = OmegaConf.to_container(compose(config_name=base, overrides=variant))
            raise _unknown_key(unknown.group(1), overrides, keys) from None


def _unknown_key(key: str, overrides: Sequence[str], keys: dict[str, Any]) -> ConfigError:
    """An override of a key verl's config does not have: "did you mean", not Hydra's "append it with +"."""
    given = next((o for o in overrides if o.partition("=")[0].lstrip("+~") == key), key)
    meant = nearest_key(key, keys)
    if meant is not None:
        return ConfigError("override", given, f"a key of the verl config: did you mean {meant}?")
    return ConfigError("override", given, f"a key of the verl config, which has no {key} and none like it (a key "
                       f"of your own takes a '+': +{given})")


def resolved_yaml(config: Any) -> str:
    """The config as YAML with every interpolation resolved (raises on a missing mandatory value)."""
    from omegaconf import OmegaConf

    return OmegaConf.to_yaml(config, resolve=True)


def launch_command(name: str, overrides: Sequence[str], folder: Path) -> list[str]:
    """The command that runs verl's trainer with the recipe (what ``agentgym train`` execs)."""
    base, variant = _resolve(name)
    return [sys.executable, "-m", "verl.trainer.main_ppo", f"--config-path={folder}", f"--config-name={base}",
            *variant, *overrides]


def launch(name: str, overrides: Sequence[str]) -> None:
    """Replace this process with verl's trainer (Ray starts, or joins ``RAY_ADDRESS``), once the
    overrides compose here: a misspelt key is one line, before anything starts."""
    _check_keys(name, overrides)
    with recipe_dir() as folder:
        command = launch_command(name, overrides, folder)
        os.execv(command[0], command)


def _check_keys(name: str, overrides: Sequence[str]) -> None:
    """``ConfigError`` for an override of a key verl's config does not have. Anything else Hydra
    refuses (and its own flags, ``--cfg job``) is left to verl's entry point, which reports it."""
    try:
        compose_recipe(name, [o for o in overrides if not o.startswith("-")])
    except ConfigError:
        raise
    except Exception:  # noqa: S110  (verl's Hydra says it again, in its own words)
        pass


def _resolve(name: str) -> tuple[str, list[str]]:
    """The Hydra config a recipe starts from and the overrides its variant files add, base first."""
    if name not in VARIANTS:
        return name, []
    base, variant = _resolve(VARIANTS[name])
    from omegaconf import OmegaConf

    overlay = OmegaConf.create(recipe_text(name))
    return base, [*variant, *_dotlist(OmegaConf.to_container(overlay))]


def _dotlist(node: Any, prefix: str = "") -> list[str]:
    if isinstance(node, dict):
        return [item for key, value in node.items() for item in _dotlist(value, f"{prefix}{key}.")]
    value = "null" if node is None else str(node).lower() if isinstance(node, bool) else str(node)
    return [f"{prefix[:-1]}={value}"]


def _check_name(name: str) -> None:
    require_choice("recipe", name, RECIPES)
