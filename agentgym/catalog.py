"""``agentgym list``: what this install offers: env ids, reward presets, training recipes.

Each part is read from the package that owns it (``agentgym.ENV_IDS``, the rewards package's
``PRESETS``, the verl integration's ``RECIPES``); a part whose package is missing or broken is
listed as empty with the reason, and never stops the command.
"""

from __future__ import annotations

import importlib
import json
from importlib import resources
from typing import Annotated, Any

import typer

__all__ = ["catalog", "list_command"]

# Where each part may live, first hit wins: (module, attribute).
_PRESET_SOURCES = (("agentgym.rewards.presets", "PRESETS"), ("agentgym.rewards", "PRESETS"))
_RECIPE_SOURCES = (("agentgym.integrations.verl.train", "RECIPES"), ("agentgym.integrations.verl", "RECIPES"),
                   ("agentgym.integrations.verl.recipes", "RECIPES"))


def catalog() -> dict[str, Any]:
    """``{"envs": [...], "reward_presets": [...], "recipes": [...], "notes": {part: why empty}}``."""
    notes: dict[str, str] = {}
    from agentgym.registration import ENV_IDS

    return {"envs": list(ENV_IDS), "reward_presets": _names(_PRESET_SOURCES, "reward_presets", notes),
            "recipes": _names(_RECIPE_SOURCES, "recipes", notes) or _recipe_files(notes), "notes": notes}


def _names(sources: tuple[tuple[str, str], ...], part: str, notes: dict[str, str]) -> list[str]:
    for module_name, attribute in sources:
        try:
            value = getattr(importlib.import_module(module_name), attribute)
        except ImportError as exc:
            notes[part] = f"{module_name} is not importable ({exc})"
            continue
        except AttributeError:
            continue
        except Exception as exc:  # a broken optional part must not break the listing
            notes[part] = f"{module_name} failed to import: {type(exc).__name__}: {exc}"
            continue
        names = list(value() if callable(value) else value)
        notes.pop(part, None)
        return [str(n) for n in names]
    notes.setdefault(part, "not available in this install")
    return []


def _recipe_files(notes: dict[str, str]) -> list[str]:
    # Fallback: the recipe YAML files shipped with the verl integration (``_*.yaml`` are bases).
    try:
        folder = resources.files("agentgym.integrations.verl").joinpath("recipes")
        names = sorted(p.name.rsplit(".", 1)[0] for p in folder.iterdir()
                       if p.name.endswith((".yaml", ".yml")) and not p.name.startswith("_"))
    except (ImportError, FileNotFoundError, NotADirectoryError, TypeError):
        return []
    if names:
        notes.pop("recipes", None)
    return names


def list_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """List the env ids, reward presets and training recipes."""
    found = catalog()
    if as_json:
        typer.echo(json.dumps(found, indent=2))
        return
    from rich.text import Text

    from agentgym._console import plain_console

    console = plain_console()
    for part, title, how in (("envs", "env ids", "gymnasium.make(ID), agentgym run ID"),
                             ("reward presets", "reward presets", "--reward NAME, reward=NAME"),
                             ("recipes", "training recipes", "agentgym train NAME")):
        key = part.replace(" ", "_")
        console.print(Text.assemble((title, "bold"), "  ", (how, "dim")))
        for name in found[key]:
            console.print(f"  {name}")
        if not found[key]:
            console.print(f"  none: {found['notes'].get(key, 'not available')}", style="dim")
