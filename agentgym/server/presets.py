"""The operator's env presets: what a server runs, fixed on the server's side.

    # presets.yaml, for: agentgym serve --presets presets.yaml
    presets:
      - name: tp-train                      # clients ask for it by name (or get an env's first preset)
        env_id: TravelPlanner-v0
        kwargs: {database: /data/travelplanner, tasks: /data/travelplanner/train.csv}
        max_turns: 30                       # the cap on a client's max_turns
      - name: wiki
        env_id: SearchQA-v0
        kwargs: {tasks: /data/nq/train.jsonl, retriever: "http://10.0.0.5:8000/retrieve"}
    rewards:                                # reward specs clients pick by name
      judged: {terms: [{kind: llm_judge, model: m, base_url: "http://judge:8000/v1", api_key_env: JUDGE_KEY}]}
    reward_presets: [planner_r1/dense, prs/short]   # the built-in presets clients may pick (default: all)

Preset kwargs are the operator's: they may name server paths, URLs, secrets (by env var name)
and reward specs, because only the operator writes this file. Clients only ever choose among them
(``agentgym.server.boundary``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentgym.errors import ConfigError

__all__ = ["EnvPreset", "Presets", "load_presets"]


class EnvPreset(BaseModel):
    """One configuration of one env, as the operator fixed it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=100)
    env_id: str
    kwargs: dict[str, Any] = Field(default_factory=dict)
    """Constructor kwargs, fixed: clients cannot override them (except the safe options, within bounds)."""
    max_turns: int | None = Field(None, ge=1)
    """The largest ``max_turns`` a client may ask for; default: the preset's own, else 100."""


class Presets(BaseModel):
    """Everything an operator's presets file holds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    presets: tuple[EnvPreset, ...] = ()
    rewards: dict[str, Any] = Field(default_factory=dict)
    """Reward specs by name, for clients to pick with ``reward="<name>"``."""
    reward_presets: tuple[str, ...] | None = None
    """Built-in reward presets clients may pick; None: all of them."""


def load_presets(path: str | Path) -> Presets:
    """Read a presets file (YAML or JSON); every mistake is a ``ConfigError`` naming the file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError("presets", str(path), f"a readable YAML or JSON file ({exc.strerror})") from None
    try:
        if path.suffix == ".json":
            document = json.loads(text)
        else:
            import yaml

            document = yaml.safe_load(text)
    except Exception as exc:  # yaml and json errors alike: the operator's file is malformed
        raise ConfigError("presets", str(path), f"valid YAML or JSON ({type(exc).__name__})") from None
    try:
        presets = Presets.model_validate(document or {})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])
        raise ConfigError("presets", str(path), f"presets, rewards and reward_presets ({problems})") from None
    names = [p.name for p in presets.presets]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError("presets", duplicates, "unique preset names")
    return presets
