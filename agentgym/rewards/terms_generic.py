"""Terms for any agentgym env: format, tool-call validity and errors, turns, answer length,
the unshaped outcome, and user functions named in the spec (``kind: custom``)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import Field

from agentgym.core.types import StepInfo
from agentgym.errors import ConfigError
from agentgym.rewards._base import Flag, TermSpec
from agentgym.rewards._registry import INPUTS, Abstain, abstain, signature_inputs, term

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


class Custom(TermSpec):
    """A function of your own, named as ``module:function``; it asks for inputs by parameter name."""

    kind: Literal["custom"] = "custom"
    function: str = Field(pattern=r"^[\w.]+:[\w.]+$")
    """Import path ``package.module:function``; its parameters name the episode inputs it reads."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Free parameters, available to the function as ``config.params``."""
    content: Flag = False
    """Whether the function scores the answer's content (then the answer guards apply to it)."""

    def default_name(self) -> str:
        return self.function.rsplit(":", 1)[1]

    def is_guarded(self) -> bool:
        return self.content


def load_custom(spec: Custom) -> tuple[Callable[..., Any], tuple[str, ...]]:
    """Import a custom term's function and read the inputs it asks for."""
    module_name, _, attr = spec.function.partition(":")
    try:
        fn: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            fn = getattr(fn, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError("function", spec.function, f"an importable 'module:function' ({exc})") from exc
    try:
        return fn, signature_inputs(fn)
    except TypeError as exc:
        raise ConfigError("function", spec.function, f"a function whose parameters are among {sorted(INPUTS)}") from exc
