"""Named reward specs shipped with agentgym, one YAML file each under ``rewards/presets/``.

=========================  =================================================================
``planner_r1/sparse``      final pass only
``planner_r1/dense``       schema, commonsense/hard micro and macro, final pass; weight 1 each
``planner_r1/curriculum``  dense, then macro-focused, then sparse, in equal thirds of the run
``prs/short``              format, then length-aware BLEU gated on format
``prs/long``               format, then an LLM judge gated on format
=========================  =================================================================

Each file's header comments give its source and the choices made where the paper is silent;
``docs/rewards.md`` has the full account.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml

from agentgym.errors import ConfigError

__all__ = ["PRESETS", "preset_document", "preset_text"]

PRESETS = ("planner_r1/sparse", "planner_r1/dense", "planner_r1/curriculum", "prs/short", "prs/long")


def preset_text(name: str) -> str:
    """The preset's YAML file, comments included (copy it to start a spec of your own)."""
    if name not in PRESETS:
        raise ConfigError("preset", name, PRESETS)
    return resources.files(__name__).joinpath(f"{name}.yaml").read_text(encoding="utf-8")


@cache
def _document(name: str) -> str:
    return preset_text(name)


def preset_document(name: str) -> dict[str, Any]:
    """The preset as a fresh plain dict."""
    return yaml.safe_load(_document(name))
