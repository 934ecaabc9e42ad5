"""Turn pydantic's validation errors on a spec document into one ``ConfigError``.

The error names the field by its path in the document (``stages[1].terms[0].weight``), the
value found there, and what is allowed, e.g. the term kinds or the model's field names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from agentgym.errors import ConfigError
from agentgym.rewards._base import Gate, Guards, LinearWeight
from agentgym.rewards.spec import TERM_KINDS, TERM_SPECS, RewardSpec, Stage

__all__ = ["config_error_from", "MISSING"]

WEIGHT_HELP = "a number >= 0, or {kind: linear, start, end, initial, final}"
_TYPE_WORDS = {
    "float": "a number", "int": "an int", "bool": "true or false", "string": "a string",
    "list": "a list", "tuple": "a list", "dict": "a mapping", "model": "a mapping",
}
_CONSTRAINTS = {"greater_than_equal": ">= {ge}", "greater_than": "> {gt}", "less_than_equal": "<= {le}",
                "less_than": "< {lt}", "string_pattern_mismatch": "a string matching {pattern}",
                "too_short": "at least {min_length} item(s)", "finite_number": "a finite number"}


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()


def config_error_from(exc: ValidationError, document: Any) -> ConfigError:
    """The most specific problem in ``exc`` as a ConfigError on ``document``'s field path."""
    errors = exc.errors(include_url=False)
    walked = [(_walk(document, e["loc"], e["type"] == "missing"), e) for e in errors]
    (parts, value), error = max(walked, key=lambda w: (_rank(w[1]), len(w[0][0])))
    inner = (error.get("ctx") or {}).get("error")
    if isinstance(inner, ConfigError):
        path = _path(parts) if parts else ""
        # A field validator's error is already located at its field; a model validator's is not.
        field = path if path.rsplit(".", 1)[-1] == inner.field else ".".join(p for p in (path, inner.field) if p)
        return ConfigError(field, inner.value, inner.allowed)
    if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
        parts = [*parts, "kind"]
        value = value.get("kind", MISSING) if isinstance(value, Mapping) else value
    return ConfigError(_path(parts), value, _allowed(error, parts, document))


def _rank(error: Mapping[str, Any]) -> int:
    kind = error["type"]
    if isinstance((error.get("ctx") or {}).get("error"), ConfigError):
        return 5
    if kind in ("union_tag_invalid", "union_tag_not_found", "extra_forbidden"):
        return 4  # a typo'd key also makes a field "missing": name the typo
    if kind == "missing":
        return 2
    if kind.endswith(("_type", "_parsing")):
        return 1  # a union branch's type mismatch is the least telling
    return 3


def _walk(document: Any, loc: Sequence[Any], missing: bool = False) -> tuple[list[Any], Any]:
    """The part of ``loc`` that indexes into ``document`` (union tags dropped) and the value there."""
    node, parts = document, []
    for i, element in enumerate(loc):
        indexes_list = isinstance(node, Sequence) and not isinstance(node, str) and isinstance(element, int) \
            and 0 <= element < len(node)
        if (isinstance(node, Mapping) and element in node) or indexes_list:
            node = node[element]
        elif missing and i == len(loc) - 1 and isinstance(node, Mapping):
            return [*parts, element], MISSING
        else:
            continue
        parts.append(element)
    return parts, node


def _path(parts: list[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "spec"


def _allowed(error: Mapping[str, Any], parts: list[Any], document: Any) -> Any:
    kind, ctx, last = error["type"], error.get("ctx") or {}, parts[-1] if parts else None
    if last == "kind" and kind in ("union_tag_invalid", "union_tag_not_found"):
        return TERM_KINDS
    if kind == "extra_forbidden":
        return sorted(_model_at(parts[:-1], document).model_fields)
    if last == "weight":
        return WEIGHT_HELP + (" (required)" if kind == "missing" else "")
    if kind == "missing":
        return "a value (the field is required)"
    if kind == "literal_error":
        return ctx.get("expected", error["msg"])
    if kind in _CONSTRAINTS:
        return _CONSTRAINTS[kind].format(**ctx)
    for prefix, words in _TYPE_WORDS.items():
        if kind.startswith(prefix + "_"):
            return words
    return error["msg"]


def _model_at(parts: list[Any], document: Any) -> Any:
    """The spec model class that reads the mapping at ``parts``."""
    if not parts:
        return RewardSpec
    last = parts[-1]
    if last == "gate":
        return Gate
    if last == "guards":
        return Guards
    if last == "weight":
        return LinearWeight
    if isinstance(last, int) and len(parts) >= 2 and parts[-2] == "stages":
        return Stage
    node = _walk(document, parts)[1]
    kind = node.get("kind") if isinstance(node, Mapping) else None
    return next((cls for cls in TERM_SPECS if cls.model_fields["kind"].default == kind), RewardSpec)
