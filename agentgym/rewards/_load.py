"""Loading reward specs: from a dict, a preset name, YAML/JSON text or a file, bounded.

Sizes and nesting are checked before any parser runs, and whatever is wrong raises one
``ConfigError`` (of bounded length) naming the field and the allowed values.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from agentgym import _json_limits
from agentgym._toolbox import clip
from agentgym.errors import ConfigError, short_repr
from agentgym.rewards._errors import config_error_from
from agentgym.rewards.presets import PRESETS, preset_document
from agentgym.rewards.spec import RewardSpec

__all__ = ["load_spec", "load_preset", "override_preset", "MAX_SPEC_CHARS", "MAX_SPEC_DEPTH", "MAX_SPEC_NODES"]

MAX_SPEC_CHARS = 256 * 1024
"""Longest spec text or file read (the presets are about 2 KB); checked before parsing."""
MAX_SPEC_DEPTH = 32
"""Deepest nesting of mappings and lists in a spec document (the presets nest 5 deep)."""
MAX_SPEC_NODES = 20_000
"""Most values in a spec document, counting a value shared by YAML aliases once per use."""


def load_spec(source: Any) -> RewardSpec:
    """A ``RewardSpec`` from a spec, a dict, a preset name, YAML/JSON text or a .yaml/.json path.

    A dict ``{"preset": NAME, **fields}`` loads the preset and overrides its fields
    (:func:`override_preset`), e.g. ``{"preset": "planner_r1/curriculum", "total_steps": 600}`` or
    ``{"preset": "prs/long", "terms": {"llm_judge": {"base_url": URL, "max_retries": 5}}}``.
    Whatever the source, what is wrong with it raises ``ConfigError`` (with a message of bounded length).
    """
    if isinstance(source, RewardSpec):
        return source
    if isinstance(source, Mapping):
        return _from_mapping(source)
    if isinstance(source, os.PathLike):
        return _from_mapping(_read_file(Path(source)))
    if isinstance(source, str):
        return _from_text(source)
    raise ConfigError("reward", short_repr(source), _ACCEPTED)


def load_preset(name: str, **overrides: Any) -> RewardSpec:
    """The preset's ``RewardSpec`` with fields overridden as :func:`override_preset` says, e.g.
    ``total_steps=600`` or ``terms={"llm_judge": {"base_url": "http://judge:8000/v1"}}``."""
    return load_spec({"preset": name, **overrides})


def override_preset(name: str, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The preset's document with ``overrides`` applied, reaching nested fields without copying it.

    * ``terms`` as a mapping ``{term name: {field: value}}`` updates those terms' fields, in every
      stage that has the term (a list of terms replaces them all, as any other value does);
    * ``stages`` as a mapping ``{stage name: {field: value}}`` updates those stages (their ``terms``
      may be such a mapping too);
    * any other mapping merges into the preset's mapping of that name (``guards``, a term's
      ``gate``), key by key, at any depth; every other value replaces the preset's.

    A term or stage name the preset does not have is a ``ConfigError`` naming those it has.
    """
    if not isinstance(name, str) or name not in PRESETS:
        raise ConfigError("preset", name, sorted(PRESETS))
    document = preset_document(name)
    spec = RewardSpec.model_validate(document)  # the presets are valid: this names their terms and stages
    for key, value in overrides.items():
        if key == "terms" and isinstance(value, Mapping):
            stages = document.get("stages") or [document]
            _override_terms("terms", [(stage["terms"], terms) for stage, (_, terms) in zip(stages, spec.term_groups())],
                            value)
        elif key == "stages" and isinstance(value, Mapping) and spec.stages is not None:
            _override_stages(document, spec, value)
        else:
            document[key] = _merged(document.get(key), value)
    return document


def _override_terms(field: str, groups: list[tuple[list[Any], tuple[Any, ...]]], overrides: Mapping[str, Any]) -> None:
    """Apply ``{term name: fields}`` to every term of that name in ``groups``: (term documents, term specs) pairs."""
    names = list(dict.fromkeys(t.key for _, terms in groups for t in terms))
    for name, fields in overrides.items():
        if name not in names:
            raise ConfigError(f"{field}.{short_repr(name)}", fields, f"the name of one of the preset's terms: {names}")
        if not isinstance(fields, Mapping):
            raise ConfigError(f"{field}.{name}", fields, "a mapping of the term's fields to their new values")
        for documents, terms in groups:
            for j, term in enumerate(terms):
                if term.key == name:
                    documents[j] = _merged(documents[j], fields)


def _override_stages(document: dict[str, Any], spec: RewardSpec, overrides: Mapping[str, Any]) -> None:
    stages = {stage.name: i for i, stage in enumerate(spec.stages or ())}
    for name, fields in overrides.items():
        if name not in stages:
            raise ConfigError(f"stages.{short_repr(name)}", fields, f"the name of one of the preset's stages: {list(stages)}")
        if not isinstance(fields, Mapping):
            raise ConfigError(f"stages.{name}", fields, "a mapping of the stage's fields to their new values")
        i = stages[name]
        for key, value in fields.items():
            if key == "terms" and isinstance(value, Mapping):
                _override_terms(f"stages.{name}.terms", [(document["stages"][i]["terms"], spec.stages[i].terms)], value)
            else:
                document["stages"][i][key] = _merged(document["stages"][i].get(key), value)


def _merged(base: Any, override: Any) -> Any:
    """``override`` merged into ``base``: mappings key by key at any depth; anything else replaces."""
    if not (isinstance(base, Mapping) and isinstance(override, Mapping)):
        return override
    merged = dict(base)
    for key, value in override.items():
        merged[key] = _merged(merged.get(key), value)
    return merged


_ACCEPTED = ("a preset name, a .yaml/.json path, YAML or JSON text, a dict, a RewardSpec or a Shaper")


def _from_text(text: str) -> RewardSpec:
    if len(text) > MAX_SPEC_CHARS:
        raise ConfigError("reward", clip(text, 80), f"a spec of at most {MAX_SPEC_CHARS} characters "
                          f"(this one has {len(text)})")
    stripped = text.strip()
    if stripped in PRESETS:
        return _from_mapping(preset_document(stripped))
    if stripped.lower().endswith((".yaml", ".yml", ".json")) and "\n" not in stripped:
        return _from_mapping(_read_file(Path(stripped)))
    document = _parse(text, "reward", clip(text, 80))
    if not isinstance(document, Mapping):
        raise ConfigError("reward", clip(text, 80), f"{_ACCEPTED}; presets: {sorted(PRESETS)}")
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
        raise ConfigError(field, shown, f"YAML or JSON text ({clip(str(exc), 300)})") from None
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:  # e.g. a date 2024-13-45, a huge int
        raise ConfigError(field, shown, f"YAML or JSON text whose values Python can read ({clip(str(exc), 300)})") from None


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
        document = override_preset(document["preset"], {k: v for k, v in document.items() if k != "preset"})
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
