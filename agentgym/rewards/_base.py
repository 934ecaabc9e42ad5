"""The pieces every reward spec is built from: strict frozen models, weights, gates.

Each model forbids unknown keys and is frozen, so a spec is data: it validates once, hashes,
pickles, and dumps back to the document it was read from (unset fields left out, ``kind`` kept).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    Strict,
    model_serializer,
    model_validator,
)

from agentgym._toolbox import is_int
from agentgym.errors import ConfigError

__all__ = ["SpecModel", "LinearWeight", "Gate", "Guards", "TermSpec", "Number", "NonNegative", "Positive", "Flag",
           "Weight", "MAX_STEPS", "check_training_step"]

MAX_STEPS = 10**12
"""Largest training step or run length a spec or trainer may give (larger ones overflow float math)."""

Number = Annotated[float, Strict(), Field(allow_inf_nan=False)]
"""A finite number; ints are accepted, strings and booleans are not."""
NonNegative = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]
Positive = Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]
Flag = Annotated[bool, Strict()]
"""true or false; the strings "yes", "true", ... are not accepted."""


def check_training_step(step: Any, total_steps: Any = None) -> tuple[int, int | None]:
    """Validate a training step (int >= 0) and an optional run length (int >= 1), both <= MAX_STEPS."""
    if not is_int(step) or not 0 <= step <= MAX_STEPS:
        raise ConfigError("training_step", step, f"an int in [0, {MAX_STEPS:.0e}]")
    if total_steps is not None and (not is_int(total_steps) or not 1 <= total_steps <= MAX_STEPS):
        raise ConfigError("total_steps", total_steps, f"an int in [1, {MAX_STEPS:.0e}], or None")
    return step, total_steps


class SpecModel(BaseModel):
    """Base of every spec model: frozen, no unknown keys, dumps keep their ``kind``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_serializer(mode="wrap")
    def _keep_kind(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        kind = getattr(self, "kind", None)
        # exclude_unset/exclude_defaults would drop the tag; a dumped spec must still say what it is.
        if isinstance(data, dict) and kind is not None:
            data = {"kind": kind, **{k: v for k, v in data.items() if k != "kind"}}
        return data


class LinearWeight(SpecModel):
    """A weight annealed linearly over the training step.

    ``initial`` until ``start``, ``final`` from ``end`` on, a straight line in between.
    ``start`` and ``end`` are in the spec's ``unit`` (training steps, or fractions of the run).
    """

    kind: Literal["linear"] = "linear"
    start: NonNegative
    """Where the ramp begins (the weight is ``initial`` up to here)."""
    end: NonNegative
    """Where the ramp ends (the weight is ``final`` from here on); must be > start."""
    initial: NonNegative
    """Weight before ``start``."""
    final: NonNegative
    """Weight after ``end``."""

    @model_validator(mode="after")
    def _ordered(self) -> LinearWeight:
        if self.end <= self.start:
            raise ConfigError("end", self.end, f"a boundary > start ({self.start})")
        return self

    def at(self, step: float, start: float, end: float) -> float:
        """The weight at ``step``, with the boundaries already resolved to steps."""
        if step <= start:
            return self.initial
        if step >= end:
            return self.final
        return self.initial + (self.final - self.initial) * (step - start) / (end - start)


Weight = NonNegative | LinearWeight


class Gate(SpecModel):
    """A condition on another term: the gated term counts only when it holds."""

    term: str
    """Name of a term in the same stage, or ``outcome`` (the unshaped outcome, always available)."""
    at_least: Number = 1.0
    """The condition's raw value must be >= this (1.0: the condition "passes")."""


class TermSpec(SpecModel):
    """Fields every term has. Subclasses add ``kind`` and their own parameters."""

    kind: str
    weight: Weight
    """Required. A number >= 0, or ``{kind: linear, start, end, initial, final}``."""
    name: str | None = Field(default=None, min_length=1)
    """Key of the term in the breakdown; defaults to ``default_name()`` (usually the kind)."""
    penalty: Flag = False
    """Subtract the weighted value instead of adding it (weights themselves stay >= 0)."""
    cap: Positive | None = None
    """Largest magnitude the term's contribution may reach."""
    gate: Gate | None = None
    """Count the term only when another term passes; otherwise it contributes 0."""

    guarded: ClassVar[bool] = False
    """Whether the term scores the answer's content, and so is zeroed by the answer guards."""
    read_report: ClassVar[Callable[[Mapping[str, Any]], Any] | None] = None
    """How the term reads the env's report dict (e.g. into a typed model), once per episode for every
    term sharing this reader; None: the term gets the dict as the env wrote it."""
    needs: ClassVar[frozenset[str]] = frozenset()
    """What the env must provide beyond the inputs the term's function asks for (those count too:
    ``task_text``, ``gold_answers``, ``plan``); an env lists what it provides in ``reward_provides``."""

    @property
    def key(self) -> str:
        """The term's name in the breakdown."""
        return self.name or self.default_name()

    def default_name(self) -> str:
        return self.kind

    def is_guarded(self) -> bool:
        return self.guarded


class Guards(SpecModel):
    """Reward-hacking guards: when one trips, every content term (``guarded``) scores 0."""

    single_answer: Flag = True
    """No content reward when the final action holds more than one ``<answer>`` tag."""
    non_empty_answer: Flag = True
    """No content reward when nothing (or only whitespace) was submitted."""
    not_copied: Flag = True
    """No content reward when the answer appears verbatim in the prompt (whitespace and case ignored)."""
    min_copy_chars: int = Field(default=40, ge=1, le=10**9, strict=True)
    """Answers shorter than this (without whitespace) are never called copies: short answers often are in the question."""
