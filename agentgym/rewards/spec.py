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

:func:`load_spec` reads any of these and rejects bad documents with a ``ConfigError`` naming
the field and the allowed values; :meth:`RewardSpec.to_dict` gives the document back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import Field, ValidationError, model_validator

from agentgym import _json_limits
from agentgym.errors import ConfigError, short_repr
from agentgym.rewards._base import Guards, LinearWeight, NonNegative, SpecModel, TermSpec
from agentgym.rewards._errors import config_error_from
from agentgym.rewards.judge import LLMJudge
from agentgym.rewards.terms_generic import (
    AnswerLength,
    Custom,
    Format,
    NumTurns,
    Outcome,
    ToolCallValidity,
    ToolErrorRate,
)
from agentgym.rewards.terms_qa import ExactMatch, LengthAwareBleu, SubEM, TokenF1
from agentgym.rewards.terms_travelplanner import (
    CommonsenseMacro,
    CommonsenseMicro,
    Constraint,
    FinalPass,
    HardMacro,
    HardMicro,
    Schema,
)

__all__ = ["RewardSpec", "Stage", "Term", "TERM_SPECS", "TERM_KINDS", "load_spec"]

TERM_SPECS: tuple[type[TermSpec], ...] = (
    Format, ToolCallValidity, ToolErrorRate, NumTurns, AnswerLength, Outcome,
    Schema, CommonsenseMicro, HardMicro, CommonsenseMacro, HardMacro, FinalPass, Constraint,
    ExactMatch, SubEM, TokenF1, LengthAwareBleu, LLMJudge, Custom,
)
TERM_KINDS = tuple(cls.model_fields["kind"].default for cls in TERM_SPECS)

Term = Annotated[
    Format | ToolCallValidity | ToolErrorRate | NumTurns | AnswerLength | Outcome
    | Schema | CommonsenseMicro | HardMicro | CommonsenseMacro | HardMacro | FinalPass | Constraint
    | ExactMatch | SubEM | TokenF1 | LengthAwareBleu | LLMJudge | Custom,
    Field(discriminator="kind"),
]
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
    total_steps: int | None = Field(default=None, ge=1, strict=True)
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


# -- loading --------------------------------------------------------------------------------
MAX_SPEC_CHARS = 256 * 1024
"""Longest spec text or file read (the presets are about 2 KB); checked before parsing."""
MAX_SPEC_DEPTH = 32
"""Deepest nesting of mappings and lists in a spec document (the presets nest 5 deep)."""
MAX_SPEC_NODES = 20_000
"""Most values in a spec document, counting a value shared by YAML aliases once per use."""


def load_spec(source: Any) -> RewardSpec:
    """A ``RewardSpec`` from a spec, a dict, a preset name, YAML/JSON text or a .yaml/.json path.

    A dict ``{"preset": NAME, **fields}`` loads the preset and replaces its top-level fields,
    e.g. ``{"preset": "planner_r1/curriculum", "total_steps": 600}``. Whatever the source,
    what is wrong with it raises ``ConfigError`` (with a message of bounded length).
    """
    if isinstance(source, RewardSpec):
        return source
    if isinstance(source, Mapping):
        return _from_mapping(source)
    if isinstance(source, os.PathLike):
        return _from_mapping(_read_file(Path(source)))
    if isinstance(source, str):
        return _from_text(source)
    raise ConfigError("reward", _short(source), _ACCEPTED)


_ACCEPTED = ("a preset name, a .yaml/.json path, YAML or JSON text, a dict, a RewardSpec or a Shaper")


def _from_text(text: str) -> RewardSpec:
    from agentgym.rewards.presets import PRESETS, preset_document

    if len(text) > MAX_SPEC_CHARS:
        raise ConfigError("reward", _short(text), f"a spec of at most {MAX_SPEC_CHARS} characters "
                          f"(this one has {len(text)})")
    stripped = text.strip()
    if stripped in PRESETS:
        return _from_mapping(preset_document(stripped))
    if stripped.lower().endswith((".yaml", ".yml", ".json")) and "\n" not in stripped:
        return _from_mapping(_read_file(Path(stripped)))
    document = _parse(text, "reward", _short(text))
    if not isinstance(document, Mapping):
        raise ConfigError("reward", _short(text), f"{_ACCEPTED}; presets: {sorted(PRESETS)}")
    return _from_mapping(document)


def _parse(text: str, field: str, shown: Any) -> Any:
    """The YAML or JSON document in ``text``, its nesting checked before the parser recurses."""
    stripped = text.strip()
    if stripped.startswith("{"):  # JSON first: YAML 1.1 reads JSON numbers such as 1e-05 as strings
        try:
            return _json_limits.loads(stripped, max_depth=MAX_SPEC_DEPTH)
        except _json_limits.JSONLimitError as exc:
            raise ConfigError(field, shown, f"a spec document nested at most {MAX_SPEC_DEPTH} deep ({exc})") from None
        except ValueError:
            pass  # not JSON: YAML flow style reads it, or says what is wrong
    try:
        _check_yaml_depth(text)
        return yaml.safe_load(text)
    except ConfigError:
        raise
    except yaml.YAMLError as exc:
        raise ConfigError(field, shown, f"YAML or JSON text ({_clip(exc)})") from None
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:  # e.g. a date 2024-13-45, a huge int
        raise ConfigError(field, shown, f"YAML or JSON text whose values Python can read ({_clip(exc)})") from None


def _check_yaml_depth(text: str) -> None:
    """Refuse deep nesting from the parser's events (a flat loop) before the recursive composer runs."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_SPEC_DEPTH:
                raise ConfigError("reward", f"YAML text nested more than {MAX_SPEC_DEPTH} deep",
                                  f"at most {MAX_SPEC_DEPTH} levels of mappings and lists")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def _read_file(path: Path) -> Mapping[str, Any]:
    try:
        if not path.is_file():
            raise ConfigError("reward", str(path), "a spec file (a regular .yaml/.json file that exists)")
        with path.open("rb") as f:
            data = f.read(MAX_SPEC_CHARS + 1)
    except OSError as exc:
        raise ConfigError("reward", str(path), f"a readable spec file ({exc.strerror})") from None
    if len(data) > MAX_SPEC_CHARS:
        raise ConfigError("reward", str(path), f"a spec file of at most {MAX_SPEC_CHARS} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError("reward", str(path), f"a UTF-8 text file (byte {exc.start} is not UTF-8)") from None
    document = _parse(text, "reward", str(path))
    if not isinstance(document, Mapping):
        raise ConfigError("reward", str(path), "a file holding one spec document (a mapping)")
    return document


def _from_mapping(document: Mapping[str, Any]) -> RewardSpec:
    _check_shape(document)
    if "preset" in document:
        from agentgym.rewards.presets import PRESETS, preset_document

        name = document["preset"]
        if not isinstance(name, str) or name not in PRESETS:
            raise ConfigError("preset", name, sorted(PRESETS))
        document = {**preset_document(name), **{k: v for k, v in document.items() if k != "preset"}}
    try:
        return RewardSpec.model_validate(dict(document))
    except ValidationError as exc:
        raise config_error_from(exc, document) from None


def _check_shape(document: Any) -> None:
    """Refuse documents too deep or too large to validate (an iterative walk, bounded by the limits)."""
    stack, nodes = [(document, 1)], 0
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if nodes > MAX_SPEC_NODES:
            raise ConfigError("reward", f"a document of more than {MAX_SPEC_NODES} values",
                              f"at most {MAX_SPEC_NODES} values (YAML aliases count once per use)")
        if isinstance(node, Mapping):
            children = [*node.keys(), *node.values()]
        elif isinstance(node, (list, tuple)):
            children = list(node)
        else:
            continue
        if children and depth >= MAX_SPEC_DEPTH:
            raise ConfigError("reward", f"a document nested more than {MAX_SPEC_DEPTH} deep",
                              f"at most {MAX_SPEC_DEPTH} levels")
        stack.extend((child, depth + 1) for child in children)


def _clip(exc: BaseException, limit: int = 300) -> str:
    text = str(exc)
    return text if len(text) <= limit else text[:limit] + "..."


def _short(value: Any, limit: int = 80) -> Any:
    text = value if isinstance(value, str) else short_repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
