"""Typed records of what happened in a step: the parsed action, the tool call, its result, errors.

They are pydantic models inside agentgym and plain dicts at the Gymnasium boundary:
``StepInfo.to_info()`` gives the ``info`` dict and ``StepInfo.from_info(info)`` reads it back
(a wrapper in the env's own process asks the env for the record instead: ``TextEnv.step_info_of``).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from agentgym._deprecated import RenamedKeys, renamed_attribute
from agentgym.errors import RemoteTimeout, RetrieverError, WorkerLost, clip

__all__ = [
    "ErrorCode",
    "ActionError",
    "FailureReason",
    "Failure",
    "ToolCall",
    "ToolResult",
    "StepInfo",
    "StepView",
]


class ErrorCode(StrEnum):
    """Why an action could not be carried out. The observation explains the fix."""

    EMPTY_ACTION = "empty_action"
    ACTION_TOO_LONG = "action_too_long"
    UNPARSEABLE_ACTION = "unparseable_action"
    UNKNOWN_TOOL = "unknown_tool"
    WRONG_ARITY = "wrong_arity"
    INVALID_ARGUMENT = "invalid_argument"
    INVALID_PLAN = "invalid_plan"
    TOOL_FAILED = "tool_failed"
    RETRIEVER_FAILED = "retriever_failed"
    SEARCH_LIMIT = "search_limit"
    MULTIPLE_ANSWERS = "multiple_answers"
    """A turn gave more than one answer (SearchQA's ``tags`` and ``json`` formats take exactly one)."""


class FailureReason(StrEnum):
    """What failed outside the model, so that an episode's reward says nothing about the policy."""

    ENV_ERROR = "env_error"
    """The env raised while stepping."""
    RESET_FAILED = "reset_failed"
    """The env could not be built or reset to the task."""
    RETRIEVER_UNREACHABLE = "retriever_unreachable"
    """A search could not be carried out (the retriever is down, too slow or sent garbage)."""
    JUDGE_UNREACHABLE = "judge_unreachable"
    """An LLM judge gave no usable grade after its retries."""
    TIMEOUT = "timeout"
    """An env call outlived its timeout."""
    WORKER_LOST = "worker_lost"
    """The process hosting the env died."""


_INFO_KEYS = RenamedKeys("info key", {"evaluation": "report"})


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ActionError(_Record):
    code: ErrorCode
    """Machine-readable reason, stable across versions."""
    message: str
    """One line naming the problem and how to fix it (also shown to the agent)."""


class Failure(_Record):
    """Something outside the model failed during the episode: its reward is no reward of the policy.

    Trainers leave a failed episode out of their group baselines (it is never a reward of 0)."""

    reason: FailureReason
    """What failed, stable across versions."""
    message: str
    """One line saying what failed, for logs."""

    @classmethod
    def of_exception(cls, exc: BaseException, *, during: Literal["reset", "step"] = "step") -> Failure:
        """The failure an exception of an env call stands for."""
        if isinstance(exc, WorkerLost):
            reason = FailureReason.WORKER_LOST
        elif isinstance(exc, (RemoteTimeout, TimeoutError)):
            reason = FailureReason.TIMEOUT
        elif isinstance(exc, RetrieverError):
            reason = FailureReason.RETRIEVER_UNREACHABLE
        else:
            reason = FailureReason.RESET_FAILED if during == "reset" else FailureReason.ENV_ERROR
        return cls(reason=reason, message=clip(f"{type(exc).__name__}: {exc}", 500))


class ToolCall(_Record):
    name: str
    """Canonical tool name, e.g. ``FlightSearch``."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Arguments by parameter name, as parsed from the action text."""


class ToolResult(_Record):
    content: str
    """Text shown to the agent as the next observation."""
    n_rows: int = 0
    """Rows in a table result; 0 for messages."""
    error: ErrorCode | None = None
    """Set when the tool rejected its arguments (e.g. an unknown city or a malformed date)."""

    @property
    def ok(self) -> bool:
        return self.error is None


class StepInfo(_Record):
    """What a step did. ``info`` in ``reset``/``step`` is ``StepInfo.to_info()``."""

    turn: int
    """Number of actions taken so far in the episode (0 after reset)."""
    action: Literal["reset", "tool", "answer", "give_up", "invalid"] = "reset"
    """What kind of action the text was read as."""
    tool_call: ToolCall | None = None
    tool_result: ToolResult | None = None
    error: ActionError | None = None
    """Set when the action could not be carried out; ``error.code`` is an ``ErrorCode``."""
    terminated_reason: str | None = None
    """Why the episode ended on this step: ``answer``, ``give_up`` or ``max_turns``."""
    answer: str | None = None
    """The submitted answer (a plan, a short answer), set on the step that submitted it, in every
    action format: what reward terms score, live or offline."""
    task_id: str | None = None
    failure: Failure | None = None
    """Set when something outside the model failed in this step (a retriever or judge that did not
    answer): the episode's reward then says nothing about the policy, and trainers leave it out."""
    # "evaluation": 0.1's name, read by pydantic itself (a Python validator would cost every step).
    report: dict[str, Any] | None = Field(None, validation_alias=AliasChoices("report", "evaluation"))
    """What the env's evaluator found (env specific: TravelPlanner's ``EvaluationReport``, SearchQA's
    EM/F1), set on the terminal step. Info dicts of 0.1 call it ``evaluation``: they still read, with
    a warning from :meth:`from_info`."""
    extra: dict[str, Any] = Field(default_factory=dict)

    evaluation = renamed_attribute("StepInfo", "evaluation", "report")

    @property
    def error_code(self) -> ErrorCode | None:
        return None if self.error is None else self.error.code

    def to_info(self) -> dict[str, Any]:
        """The plain ``dict`` Gymnasium expects as ``info``."""
        return self.model_dump(mode="json")

    @staticmethod
    def view(info: Mapping[str, Any]) -> StepView:
        """A reader of ``info`` that validates nothing but the fields it is asked for (``StepView``)."""
        return StepView(info)

    @classmethod
    def from_info(cls, info: dict[str, Any]) -> StepInfo:
        """Read an ``info`` dict produced by :meth:`to_info` back into a ``StepInfo``."""
        if "evaluation" in info:
            warn_old_info_keys(info)
        return cls.model_validate(info)


class StepView:
    """The one reader of an ``info`` dict (``StepInfo.to_info()``) for code that walks many steps:
    the runner's records and the trainers' rollout results. It reads the fields without validating
    the whole ``StepInfo`` (a model per step would cost every rollout); a field of the wrong type
    reads as absent.

        view = StepInfo.view(info)
        view.action, view.error_code, view.failure, view.report
    """

    __slots__ = ("info",)

    def __init__(self, info: Mapping[str, Any]) -> None:
        self.info = info

    @property
    def action(self) -> str | None:
        return _text(self.info.get("action"))

    @property
    def task_id(self) -> str | None:
        return _text(self.info.get("task_id"))

    @property
    def terminated_reason(self) -> str | None:
        return _text(self.info.get("terminated_reason"))

    @property
    def answer(self) -> str | None:
        return _text(self.info.get("answer"))

    @property
    def error_code(self) -> str | None:
        error = self.info.get("error")
        return _text(error.get("code")) if isinstance(error, dict) else None

    @property
    def report(self) -> dict[str, Any] | None:
        report = self.info.get("report")
        return report if isinstance(report, dict) else None

    @property
    def failure(self) -> Failure | None:
        failure = self.info.get("failure")
        return Failure.model_validate(failure) if failure else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def warn_old_info_keys(info: dict[str, Any]) -> None:
    """Warn that ``info`` is a dict of 0.1 (``evaluation``, now ``report``); ``StepInfo`` still reads it."""
    _INFO_KEYS.apply({k: None for k in info if k in ("evaluation", "report")}, stacklevel=5)
