"""The term registry: each term kind maps to its spec model and to the function that scores it.

A term function declares what it reads by its parameter names (verifiers' Rubric idea); the
shaper passes exactly those, taken from the :class:`~agentgym.rewards.episode.Episode`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentgym._deprecated import alias, warn_renamed
from agentgym.rewards._base import TermSpec

__all__ = ["INPUTS", "RENAMED_INPUTS", "TermDef", "TERMS", "term", "term_kind", "Abstain", "abstain", "signature_inputs",
           "READERS", "InputReader", "episode_input"]

INPUTS = {
    "episode": "the whole Episode",
    "steps": "the StepInfo of every step after reset, in order",
    "actions": "the agent's text for every step, in order",
    "prompt": "the first observation (the task as the agent saw it)",
    "task": "the env's task object (TravelPlanner: the TravelTask)",
    "task_text": "the task's own words (QA envs: the question)",
    "gold_answers": "the dataset's gold answers (QA envs), a tuple of str",
    "answer": "the submitted answer text, or None when nothing was submitted",
    "outcome": "the unshaped outcome: 1.0 iff the task was solved",
    "report": "the env's final report (a dict), by the term's ``evaluator``",
    "config": "the term's own spec (its parameters)",
    "training_step": "the training step the trainer last set (0 when never set)",
}
"""What a term function may ask for, by parameter name."""

RENAMED_INPUTS = {"question": "task_text", "references": "gold_answers"}
"""Input names of 0.1, still given to a term that asks for them (with a warning), until 0.3."""
for _old, _new in RENAMED_INPUTS.items():
    alias("reward input", _old, _new)


class Abstain:
    """A term's "no opinion", with the reason shown in the breakdown. ``None`` also abstains.

    ``failure`` (a ``FailureReason`` value) says the term could not score because something outside
    the model failed (a judge that did not answer): the episode's reward is then not the policy's."""

    __slots__ = ("reason", "failure")

    def __init__(self, reason: str, failure: str | None = None) -> None:
        self.reason, self.failure = reason, failure

    def __repr__(self) -> str:
        if self.failure is not None:
            return f"abstain({self.reason!r}, failure={self.failure!r})"
        return f"abstain({self.reason!r})"


def abstain(reason: str, *, failure: str | None = None) -> Abstain:
    """Return this from a term to abstain and say why; ``failure`` when the infrastructure failed."""
    return Abstain(reason, None if failure is None else str(failure))


TermFn = Callable[..., "float | Abstain | None"]


@dataclass(frozen=True)
class TermDef:
    """A registered term kind."""

    kind: str
    spec: type[TermSpec]
    fn: TermFn | None
    """None for a kind whose spec names its own function (``custom``)."""
    inputs: tuple[str, ...]
    bind: Callable[[TermSpec], dict[str, Any]] | None = None
    """Builds resources the function needs (e.g. the judge client), passed as keyword arguments."""


TERMS: dict[str, TermDef] = {}
"""Every term kind, registered by the modules that define them: the one term catalogue
(``agentgym.rewards.spec.TERM_SPECS`` and the package's exports are read from it)."""


def signature_inputs(fn: Callable[..., Any], *, bound: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The episode inputs ``fn`` asks for; raises TypeError for a name that is not an input."""
    names = tuple(p for p in inspect.signature(fn).parameters if p not in bound)
    for old in (n for n in names if n in RENAMED_INPUTS):
        warn_renamed(f"the reward input {old!r} (asked for by {getattr(fn, '__name__', fn)!r})",
                     repr(RENAMED_INPUTS[old]), stacklevel=4)
    names = tuple(RENAMED_INPUTS.get(n, n) for n in names)
    unknown = [n for n in names if n not in INPUTS]
    if unknown:
        raise TypeError(f"term {getattr(fn, '__name__', fn)!r} asks for {unknown}; "
                        f"a term may ask for {sorted(INPUTS)}")
    return names


def term(spec: type[TermSpec], *, bind: Callable[[TermSpec], dict[str, Any]] | None = None,
         bound: tuple[str, ...] = ()) -> Callable[[TermFn], TermFn]:
    """Register ``fn`` as the scorer of ``spec``'s kind."""
    kind = spec.model_fields["kind"].default

    def register(fn: TermFn) -> TermFn:
        TERMS[kind] = TermDef(kind, spec, fn, signature_inputs(fn, bound=bound), bind)
        return fn

    return register


def term_kind(spec: type[TermSpec]) -> type[TermSpec]:
    """Register ``spec``'s kind without a function of its own: each spec names the function (``custom``)."""
    kind = spec.model_fields["kind"].default
    TERMS[kind] = TermDef(kind, spec, None, ())
    return spec


@dataclass(frozen=True)
class InputReader:
    """How an env-specific term input is read from an episode (TravelPlanner's ``plan``)."""

    read: Callable[[Any], Any]
    """``read(episode) -> value``, called at most once per episode."""
    needs: str
    """What the env must provide for it (a word of ``reward_provides``)."""


READERS: dict[str, InputReader] = {}
"""Term inputs that an env's term module registers; the generic ``Episode`` knows none by name."""


def episode_input(name: str, description: str, *, needs: str) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    """Register ``read(episode)`` as the term input ``name``, read once per episode, for envs that provide ``needs``."""

    def register(read: Callable[[Any], Any]) -> Callable[[Any], Any]:
        INPUTS[name] = description
        READERS[name] = InputReader(read, needs)
        return read

    return register
