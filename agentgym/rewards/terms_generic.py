"""Terms for any agentgym env: format, tool-call validity and errors, turns, answer length,
the unshaped outcome, and user functions named in the spec (``kind: custom``)."""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import Field, field_validator

from agentgym.core.types import StepInfo
from agentgym.errors import ConfigError
from agentgym.rewards._base import Flag, TermSpec
from agentgym.rewards._registry import INPUTS, Abstain, abstain, signature_inputs, term, term_kind

__all__ = ["Format", "ToolCallValidity", "ToolErrorRate", "NumTurns", "AnswerLength", "Outcome", "Custom"]


class Format(TermSpec):
    """1.0 iff every turn was well formed; else 0.0."""

    kind: Literal["format"] = "format"
    require_answer: Flag = True
    """Also require that the episode ended by submitting an answer."""
    balanced_tags: tuple[str, ...] = ()
    """Tags (e.g. ``think``) whose opening and closing counts must match in every action."""


@term(Format)
def format_valid(steps: Sequence[StepInfo], actions: Sequence[str], config: Format) -> float | Abstain:
    if not steps:
        return abstain("the episode has no steps")
    if any(s.action == "invalid" for s in steps):
        return 0.0
    if config.require_answer and steps[-1].action != "answer":
        return 0.0
    for tag in config.balanced_tags:
        opening, closing = f"<{tag}>", f"</{tag}>"
        if any(a.count(opening) != a.count(closing) for a in actions):
            return 0.0
    return 1.0


class ToolCallValidity(TermSpec):
    """Share of tool-call turns the env could carry out: tool calls / (tool calls + unreadable turns)."""

    kind: Literal["tool_call_validity"] = "tool_call_validity"


@term(ToolCallValidity)
def tool_call_validity(steps: Sequence[StepInfo]) -> float | Abstain:
    calls = sum(s.action == "tool" for s in steps)
    invalid = sum(s.action == "invalid" for s in steps)
    if calls + invalid == 0:
        return abstain("no tool calls were attempted")
    return calls / (calls + invalid)


class ToolErrorRate(TermSpec):
    """Share of executed tool calls that the tool rejected (unknown city, bad date, ...)."""

    kind: Literal["tool_error_rate"] = "tool_error_rate"


@term(ToolErrorRate)
def tool_error_rate(steps: Sequence[StepInfo]) -> float | Abstain:
    calls = [s for s in steps if s.action == "tool"]
    if not calls:
        return abstain("no tool calls were executed")
    failed = sum(s.error is not None or (s.tool_result is not None and s.tool_result.error is not None)
                 for s in calls)
    return failed / len(calls)


class NumTurns(TermSpec):
    """The number of actions the agent took (use ``penalty: true`` to charge for them)."""

    kind: Literal["num_turns"] = "num_turns"


@term(NumTurns)
def num_turns(steps: Sequence[StepInfo]) -> float:
    return float(len(steps))


class AnswerLength(TermSpec):
    """Length of the submitted answer in whitespace-separated words or in characters."""

    kind: Literal["answer_length"] = "answer_length"
    unit: Literal["words", "chars"] = "words"
    """What to count."""


@term(AnswerLength)
def answer_length(answer: str | None, config: AnswerLength) -> float | Abstain:
    if answer is None:
        return abstain("no answer was submitted")
    return float(len(answer.split()) if config.unit == "words" else len(answer))


class Outcome(TermSpec):
    """The unshaped outcome: 1.0 iff the env says the task was solved."""

    kind: Literal["outcome"] = "outcome"


@term(Outcome)
def outcome_term(outcome: float) -> float:
    return outcome


@term_kind
class Custom(TermSpec):
    """A function of your own, named as ``module:function``; it asks for inputs by parameter name.

    Only for specs you write yourself: the env server refuses specs that name code. Even
    locally, a name resolves only to a public callable outside the standard library (see
    :func:`load_custom`).
    """

    kind: Literal["custom"] = "custom"
    function: str
    """Import path ``package.module:function``; its parameters name the episode inputs it reads."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Free parameters, available to the function as ``config.params``."""
    content: Flag = False
    """Whether the function scores the answer's content (then the answer guards apply to it)."""

    @field_validator("function")
    @classmethod
    def _public_name(cls, name: str) -> str:
        check_function_name(name)
        return name

    def default_name(self) -> str:
        return self.function.rsplit(":", 1)[1]

    def is_guarded(self) -> bool:
        return self.content


MAX_FUNCTION_NAME = 200
_NAME_HELP = "'package.module:function' of public names (letters, digits and '_', none starting with '_')"
_STDLIB_HELP = ("a function of your own code or of a third-party package: the standard library "
                "(os, sys, subprocess, signal, builtins, ...) is never called as a reward term")


def check_function_name(name: str) -> None:
    """Refuse a ``module:function`` name that is malformed, private, or in the standard library.

    The whole standard library is refused rather than a list of its process and OS modules: too
    many of them start processes, signal, block or reach the file system (``os``, ``posix``,
    ``subprocess``, ``signal``, ``pty``, ``code``, ``pdb``, ``webbrowser``, ``time.sleep``,
    ``builtins.input``, ...) for a list to stay complete, and no reward term needs one.
    """
    module, colon, attr = name.partition(":")
    parts = [*module.split("."), *attr.split(".")]
    if len(name) > MAX_FUNCTION_NAME or not colon or ":" in attr \
            or not all(p.isidentifier() and p.isascii() and not p.startswith("_") for p in parts):
        raise ConfigError("function", name, _NAME_HELP)
    if _in_stdlib(module):
        raise ConfigError("function", name, _STDLIB_HELP)


def _in_stdlib(module: str | None) -> bool:
    top = (module or "").partition(".")[0]
    return top in sys.stdlib_module_names or top in sys.builtin_module_names


def _origins(target: Any) -> list[str | None]:
    """The modules ``target`` comes from: its own, and for a bound method its owner's."""
    found = [getattr(target, "__module__", None)]
    owner = getattr(target, "__self__", None)
    if owner is not None:
        found.append(owner.__name__ if isinstance(owner, types.ModuleType) else type(owner).__module__)
    return found


def load_custom(spec: Custom) -> tuple[Callable[..., Any], tuple[str, ...]]:
    """Import a custom term's function and read the inputs it asks for.

    The name must resolve to a public callable that is not defined in (or bound to) the
    standard library, and that asks for at least one episode input; else ``ConfigError``.
    """
    check_function_name(spec.function)
    module_name, _, attr = spec.function.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError("function", spec.function, f"an importable 'module:function' ({exc})") from exc
    except Exception as exc:  # the module's own code failed on import
        raise ConfigError("function", spec.function,
                          f"a module that imports cleanly ({type(exc).__name__}: {exc})") from exc
    if not callable(target) or isinstance(target, types.ModuleType):
        raise ConfigError("function", spec.function, f"a callable (this names a {type(target).__name__})")
    if any(_in_stdlib(origin) for origin in _origins(target)):
        raise ConfigError("function", spec.function, _STDLIB_HELP + f" ({attr} comes from {_origins(target)[-1]})")
    try:
        inputs = signature_inputs(target)
    except (TypeError, ValueError) as exc:
        raise ConfigError("function", spec.function, f"a function whose parameters are among {sorted(INPUTS)}") from exc
    if not inputs:
        raise ConfigError("function", spec.function, f"a function that asks for at least one of {sorted(INPUTS)}")
    return target, inputs
