"""What this install offers: env ids, reward presets and terms, training recipes (``agentgym list`` prints it).

Each part has one home, read from the public module that owns it (``_PARTS``); a part whose
module is missing or broken is listed as empty with the reason, and never stops the command.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["catalog"]

_PARTS = {
    "envs": ("agentgym.registration", "ENV_IDS"),
    "reward_presets": ("agentgym.rewards", "PRESETS"),
    "reward_terms": ("agentgym.rewards", "TERM_KINDS"),
    "recipes": ("agentgym.integrations.verl.train", "RECIPES"),
    "trl_recipes": ("agentgym.integrations.trl.train", "RECIPES"),
}
"""Each part of the catalogue: (the module that owns it, the attribute that lists it)."""


def catalog() -> dict[str, Any]:
    """``{"envs", "reward_presets", "reward_terms", "recipes": [...], "notes": {part: why empty}}``.

    ``recipes`` lists the verl recipes, then the TRL ones (``agentgym train`` runs both)."""
    notes: dict[str, str] = {}
    found = {part: _names(part, notes) for part in _PARTS}
    return {"envs": found["envs"], "reward_presets": found["reward_presets"], "reward_terms": found["reward_terms"],
            "recipes": found["recipes"] + found["trl_recipes"], "notes": notes}


def _names(part: str, notes: dict[str, str]) -> list[str]:
    module_name, attribute = _PARTS[part]
    try:
        return [str(name) for name in getattr(importlib.import_module(module_name), attribute)]
    except ImportError as exc:
        notes[part] = f"{module_name} is not importable ({exc})"
    except Exception as exc:  # a broken optional part must not break the listing
        notes[part] = f"{module_name} failed to import: {type(exc).__name__}: {exc}"
    return []
