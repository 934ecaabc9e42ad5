"""RewardSpec: a declarative reward, as data (a dict, YAML or JSON document, or a preset name).

    name: my-reward
    normalize: none          # or "weights": divide by the weights of the terms that did not abstain
    clip: [0, 2]             # optional bounds on the total
    terms:
      - {kind: format, weight: 0.2}
      - {kind: la_bleu, weight: 0.8, gate: {term: format}}

or, scheduled over the training step, ``stages`` instead of ``terms``::

    unit: fraction           # stage starts as fractions of total_steps (or "step": absolute steps)
    total_steps: 300         # or given by the trainer with the training step
    stages:
      - {name: dense, start: 0, terms: [...]}
      - {name: sparse, start: 0.5, terms: [...]}

:func:`agentgym.rewards.load_spec` reads any of these and rejects bad documents with a
``ConfigError`` naming the field and the allowed values; :meth:`RewardSpec.to_dict` gives the
document back. This module is the schema only; loading lives in ``rewards/_load.py``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import Field, model_validator

from agentgym.errors import ConfigError
from agentgym.rewards._base import MAX_STEPS, Guards, LinearWeight, NonNegative, SpecModel, TermSpec
from agentgym.rewards import judge, terms_generic, terms_qa, terms_travelplanner
from agentgym.rewards._registry import TERMS

__all__ = ["RewardSpec", "Stage", "Term", "TERM_SPECS", "TERM_KINDS"]

_TERM_MODULES = tuple(m.__name__ for m in (terms_generic, terms_travelplanner, terms_qa, judge))
"""The modules whose imports register every term kind; the catalogue lists their kinds in this order."""



def _catalogue_order(spec: type[TermSpec]) -> int:
    return _TERM_MODULES.index(spec.__module__) if spec.__module__ in _TERM_MODULES else len(_TERM_MODULES)


TERM_SPECS: tuple[type[TermSpec], ...] = tuple(sorted((d.spec for d in TERMS.values()),
                                                      key=_catalogue_order))
"""Every term's spec model, read from the registry (the term catalogue)."""
TERM_KINDS = tuple(cls.model_fields["kind"].default for cls in TERM_SPECS)

Term = Annotated[Union[TERM_SPECS], Field(discriminator="kind")]  # noqa: UP007 (a union built from the tuple)
"""Any term spec, chosen by its ``kind``."""


class Stage(SpecModel):
    """The terms in force from ``start`` until the next stage starts."""

    name: str = Field(min_length=1)
    """Shown in the breakdown as ``stage``."""
    start: NonNegative
    """Where the stage begins, in the spec's ``unit``; the first stage starts at 0."""
    terms: tuple[Term, ...] = Field(min_length=1)
    """The stage's terms (a weighted sum)."""


class RewardSpec(SpecModel):
    """A whole reward: terms (or stages of terms), how to combine them, and the guards."""

    name: str | None = None
    description: str | None = None
    """Where the reward comes from and the choices made; shown in docs, ignored by the shaper."""
    terms: tuple[Term, ...] | None = None
    """The terms, summed with their weights. Give this or ``stages``."""
    stages: tuple[Stage, ...] | None = None
    """Piecewise schedule: each stage's terms apply from its start to the next stage's start."""
    unit: Literal["step", "fraction"] = "step"
    """Unit of every boundary (stage starts, linear weights): training steps, or fractions of total_steps."""
    total_steps: int | None = Field(default=None, ge=1, le=MAX_STEPS, strict=True)
    """Length of the run in training steps, for ``unit: fraction`` (the trainer may give it instead)."""
    normalize: Literal["none", "weights"] = "none"
    """``weights``: divide the total by the summed weights of the terms that did not abstain."""
    clip: tuple[float, float] | None = None
    """``[low, high]`` bounds on the total, applied last."""
    guards: Guards = Guards()
    """Reward-hacking guards applied to the content terms."""

    @model_validator(mode="after")
    def _coherent(self) -> RewardSpec:
        if (self.terms is None) == (self.stages is None):
            raise ConfigError("terms", None if self.terms is None else "...", "exactly one of 'terms' or 'stages'")
        if self.clip is not None and not self.clip[0] < self.clip[1]:
            raise ConfigError("clip", list(self.clip), "[low, high] with low < high")
        for where, terms in self.term_groups():
            _check_names(where, terms)
            _check_gates(where, terms)
        if self.stages is not None:
            _check_stages(self.stages)
        self._check_fractions()
        return self

    def term_groups(self) -> list[tuple[str, tuple[TermSpec, ...]]]:
        """``(field path, terms)`` for the plain terms or for each stage."""
        if self.terms is not None:
            return [("terms", self.terms)]
        return [(f"stages[{i}].terms", s.terms) for i, s in enumerate(self.stages or ())]

    def _check_fractions(self) -> None:
        if self.unit != "fraction":
            return
        for i, stage in enumerate(self.stages or ()):
            if stage.start > 1:
                raise ConfigError(f"stages[{i}].start", stage.start, "a fraction of the run in [0, 1] (unit: fraction)")
        for where, terms in self.term_groups():
            for j, t in enumerate(terms):
                if isinstance(t.weight, LinearWeight) and t.weight.end > 1:
                    raise ConfigError(f"{where}[{j}].weight.end", t.weight.end, "a fraction of the run in [0, 1]")

    # -- documents ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The spec as a plain document (fields left unset stay out), which :func:`load_spec` reads back."""
        return self.model_dump(mode="json", exclude_unset=True)

    def to_yaml(self) -> str:
        return yaml.dump(self.to_dict(), Dumper=_Dumper, sort_keys=False, allow_unicode=True)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)


class _Dumper(yaml.SafeDumper):
    """Writes strings holding YAML line breaks (NEL, LS, PS) escaped, so they read back unchanged."""


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = '"' if any(c in text for c in "\x85\u2028\u2029") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _represent_str)


def _check_names(where: str, terms: tuple[TermSpec, ...]) -> None:
    seen: set[str] = set()
    for j, t in enumerate(terms):
        if t.key == "outcome" and t.kind != "outcome":
            raise ConfigError(f"{where}[{j}].name", t.key, "a name other than 'outcome' (it names the unshaped outcome)")
        if t.key in seen:
            raise ConfigError(f"{where}[{j}].name", t.key, f"a name not used by another term here (taken: {sorted(seen)})")
        seen.add(t.key)


def _check_gates(where: str, terms: tuple[TermSpec, ...]) -> None:
    names = {t.key: t for t in terms}
    for j, t in enumerate(terms):
        if t.gate is None:
            continue
        if t.gate.term not in names and t.gate.term != "outcome":
            raise ConfigError(f"{where}[{j}].gate.term", t.gate.term, sorted(({*names} - {t.key}) | {"outcome"}))
        seen, current = {t.key}, t.gate.term
        while current in names and names[current].gate is not None:
            if current in seen:
                raise ConfigError(f"{where}[{j}].gate.term", t.gate.term, "a term whose gates do not lead back to it")
            seen.add(current)
            current = names[current].gate.term


def _check_stages(stages: tuple[Stage, ...]) -> None:
    if not stages:
        raise ConfigError("stages", [], "at least one stage")
    if stages[0].start != 0:
        raise ConfigError("stages[0].start", stages[0].start, "0 (the first stage starts the run)")
    names: set[str] = set()
    kinds: dict[str, str] = {}
    for i, stage in enumerate(stages):
        if i and stage.start <= stages[i - 1].start:
            raise ConfigError(f"stages[{i}].start", stage.start,
                              f"a start > {stages[i - 1].start} (where stages[{i - 1}] starts): "
                              "stages are listed in order and may not overlap")
        if stage.name in names:
            raise ConfigError(f"stages[{i}].name", stage.name, f"a name not used by another stage ({sorted(names)})")
        names.add(stage.name)
        for j, t in enumerate(stage.terms):
            if kinds.setdefault(t.key, t.kind) != t.kind:
                raise ConfigError(f"stages[{i}].terms[{j}].kind", t.kind,
                                  f"{kinds[t.key]!r}: the term named {t.key!r} has that kind in an earlier stage")
