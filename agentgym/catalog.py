"""What this install offers: env ids, reward presets and terms, training recipes (``agentgym list`` prints it).

Each part is read from the package that owns it (``agentgym.ENV_IDS``, the rewards package's
``PRESETS``, the verl and TRL integrations' ``RECIPES``); a part whose package is missing or broken is
listed as empty with the reason, and never stops the command.
"""

from __future__ import annotations

import importlib
from importlib import resources
from typing import Any

__all__ = ["catalog"]

# Where each part may live, first hit wins: (module, attribute).
_PRESET_SOURCES = (("agentgym.rewards.presets", "PRESETS"), ("agentgym.rewards", "PRESETS"))
_RECIPE_SOURCES = (("agentgym.integrations.verl.train", "RECIPES"), ("agentgym.integrations.verl", "RECIPES"),
                   ("agentgym.integrations.verl.recipes", "RECIPES"))
_TRL_RECIPE_SOURCES = (("agentgym.integrations.trl.train", "RECIPES"),)
_TERM_SOURCES = (("agentgym.rewards.spec", "TERM_KINDS"),)


def catalog() -> dict[str, Any]:
    """``{"envs", "reward_presets", "reward_terms", "recipes": [...], "notes": {part: why empty}}``."""
    notes: dict[str, str] = {}
    from agentgym.registration import ENV_IDS

    return {"envs": list(ENV_IDS), "reward_presets": _names(_PRESET_SOURCES, "reward_presets", notes),
            "reward_terms": _names(_TERM_SOURCES, "reward_terms", notes),
            "recipes": [*(_names(_RECIPE_SOURCES, "recipes", notes) or _recipe_files(notes)),
                        *_names(_TRL_RECIPE_SOURCES, "trl_recipes", notes)], "notes": notes}


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
