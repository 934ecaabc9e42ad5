"""Episode: one finished episode, as the reward terms read it.

The env (or the :class:`~agentgym.rewards.ShapeReward` wrapper) builds it at the end of an
episode from what it recorded; offline, build it yourself from step infos and actions::

    episode = Episode.from_infos(infos, actions=actions, prompt=first_observation,
                                 task_text=q, gold_answers=golds, outcome=1.0)

Everything derived (the answer, the report of another evaluation, an env's registered inputs
such as TravelPlanner's parsed plan, the guard verdict) is computed on first use and kept, so
terms sharing an input share the work.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

from agentgym._deprecated import RenamedKeys, alias, renamed_attribute
from agentgym.core.types import StepInfo, warn_old_info_keys
from agentgym.errors import DataError
from agentgym.rewards._base import Guards
from agentgym.rewards._registry import READERS, RENAMED_INPUTS

__all__ = ["Episode", "input_getter", "outcome_of", "step_info"]

_UNSET: Any = object()
_STEP_FIELDS = frozenset((*StepInfo.model_fields, "evaluation"))  # "evaluation": 0.1's name of "report"

Evaluator = Callable[[str | None, str], Mapping[str, Any]]
"""``(answer, evaluator) -> report dict``: re-checks the answer with another evaluator."""


class Episode:
    """One finished episode: its steps, the agent's actions and what the env knows of the task.

    Args:
        steps: the ``StepInfo`` of every step after reset (the last one ends the episode).
        actions: the agent's text for each step, in order.
        prompt: the first observation.
        task: the env's task object (TravelPlanner: the ``TravelTask``).
        task_text: the task's own words (QA envs: the question; ``question=`` before 0.2).
        gold_answers: the dataset's gold answers (QA envs; ``references=`` before 0.2).
        answer: the submitted answer; by default the final step's ``StepInfo.answer`` (the env
            records it in every action format), or None when the episode did not end with one.
        outcome: the unshaped outcome (1.0 iff solved); by default what the final report says, as
            the env pays it live (:func:`outcome_of`).
        evaluate: re-evaluates the answer with another evaluator (TravelPlanner terms use it
            when their ``evaluator`` differs from the report's, or when no report exists).
    """

    def __init__(self, steps: Sequence[StepInfo], *, actions: Sequence[str] = (), prompt: str | None = None,
                 task: Any = None, task_text: str | None = None, gold_answers: Sequence[str] = (),
                 answer: str | None = _UNSET, outcome: float | None = None,
                 evaluate: Evaluator | None = None, **renamed: Any) -> None:
        if renamed:
            task_text, gold_answers = _renamed_kwargs(renamed, task_text, gold_answers)
        self.steps = steps
        self.actions = actions
        self.prompt = prompt
        self.task = task
        self.task_text = task_text
        self.gold_answers = tuple(gold_answers)
        self._answer = answer
        self._outcome = outcome
        self._evaluate = evaluate
        self._reports: dict[Any, Any] = {}
        self._read_key: Any = _UNSET
        self._read_report: Any = None
        self._read: dict[str, Any] = {}
        self._guards: Guards | None = None  # the guards _guard_reason was checked against
        self._guard_reason: str | None = None

    @classmethod
    def from_infos(cls, infos: Sequence[Mapping[str, Any]], **context: Any) -> Episode:
        """Build from the ``info`` dicts of ``step`` (a leading reset info is skipped); raises
        ``DataError`` naming the first entry that is not a step's info dict."""
        steps = [_read_info(i, info) for i, info in enumerate(infos)]
        if steps and steps[0].action == "reset":
            steps = steps[1:]
        return cls(steps, **context)

    question = renamed_attribute("Episode", "question", "task_text")

    references = renamed_attribute("Episode", "references", "gold_answers")

    # -- derived inputs ----------------------------------------------------------------------
    @property
    def final_action(self) -> str | None:
        return self.actions[-1] if self.actions else None

    @property
    def answer(self) -> str | None:
        if self._answer is _UNSET:
            self._answer = self.steps[-1].answer if self.steps else None
        return self._answer

    @property
    def report(self) -> Mapping[str, Any] | None:
        """The env's final report, as it was produced."""
        return self.steps[-1].report if self.steps else None

    def report_for(self, evaluator: str | None) -> Mapping[str, Any] | None:
        """The final report of ``evaluator`` (re-evaluating when needed and possible)."""
        if evaluator in self._reports:
            return self._reports[evaluator]
        report = self.report
        if report is not None and (evaluator is None or _evaluator_of(report, evaluator) == evaluator):
            return report  # the env's own, found again as cheaply: kept only where work was done
        if self._evaluate is None:
            return None
        submitted = self.answer if self.steps and self.steps[-1].action == "answer" else None
        found = self._reports[evaluator] = self._evaluate(submitted, evaluator or "strict")
        return found

    def report_as(self, evaluator: str | None, read: Callable[[Mapping[str, Any]], Any]) -> Any:
        """The final report of ``evaluator`` as ``read`` makes it (None when there is none), read once."""
        return self._report_as((evaluator, read))

    def _report_as(self, key: tuple[str | None, Callable[[Mapping[str, Any]], Any]]) -> Any:
        # Terms pass one key tuple for every episode: no new tuple per episode to build and keep.
        # The first report read (most episodes read one) is kept in two attributes rather than in
        # _reports: a dict holding it is one more object for the garbage collector to re-scan.
        if key is self._read_key or key == self._read_key:
            return self._read_report
        found = self._reports.get(key, _UNSET)
        if found is _UNSET:
            report = self.report_for(key[0])
            found = None if report is None else key[1](report)
            if self._read_key is _UNSET:
                self._read_key, self._read_report = key, found
            else:
                self._reports[key] = found
        return found

    def read(self, name: str) -> Any:
        """The registered term input ``name`` (e.g. TravelPlanner's ``plan``), read once per episode."""
        if name not in self._read:
            self._read[name] = READERS[name].read(self)
        return self._read[name]

    @property
    def outcome(self) -> float:
        if self._outcome is not None:
            return float(self._outcome)
        return outcome_of(self.report)

    # -- guards ------------------------------------------------------------------------------
    def guard_reason(self, guards: Guards) -> str | None:
        """Why content terms earn nothing in this episode, or None when no guard trips."""
        if self._guards is not guards:
            self._guard_reason = self._check_guards(guards)
            self._guards = guards
        return self._guard_reason

    def _check_guards(self, guards: Guards) -> str | None:
        final = self.final_action or ""
        # No "<": no tag to count, and the (long) action need not be lowered.
        if guards.single_answer and "<" in final and final.lower().count("<answer>") > 1:
            return "guard: several <answer> tags in the final action"
        answer = self.answer
        if guards.non_empty_answer and (answer is None or not answer.strip()):
            return "guard: no answer was submitted" if answer is None else "guard: the answer is empty"
        if guards.not_copied and answer and self.prompt and _copied(answer, self.prompt, guards.min_copy_chars):
            return "guard: the answer is copied from the prompt"
        return None


def outcome_of(report: Mapping[str, Any] | None) -> float:
    """The unshaped outcome a final report records, as the env pays it live: TravelPlanner's
    ``final_pass``, short-form QA's exact match ``em`` (on the answer the env scored, whatever its
    reward ``metric``), long-form QA's ``score``; 0.0 without a report."""
    if report is None:
        return 0.0
    if "final_pass" in report:
        return 1.0 if report["final_pass"] is True else 0.0
    for key in ("em", "score"):
        value = report.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
    return 0.0


def _evaluator_of(report: Mapping[str, Any], default: str) -> Any:
    """The evaluator that wrote ``report``; older reports name it ``evaluation`` (0.1) or ``mode`` (0.1.0)."""
    return report.get("evaluator", report.get("evaluation", report.get("mode", default)))


_KWARGS = RenamedKeys("Episode kwarg", RENAMED_INPUTS)
for _old, _new in RENAMED_INPUTS.items():
    alias("Episode attribute", _old, _new)


def _renamed_kwargs(renamed: dict[str, Any], task_text: Any, gold_answers: Any) -> tuple[Any, Any]:
    """``task_text`` and ``gold_answers`` given by their 0.1 names (with a warning); any other key is a TypeError."""
    unknown = sorted(set(renamed) - set(RENAMED_INPUTS))
    if unknown:
        raise TypeError(f"Episode() got an unexpected keyword argument {unknown[0]!r}")
    given = {**({"task_text": task_text} if task_text is not None else {}),
             **({"gold_answers": gold_answers} if gold_answers else {}), **renamed}
    moved = _KWARGS.apply(given, stacklevel=5)
    return moved.get("task_text"), moved.get("gold_answers", ())


def _flatten(text: str) -> str:
    return "".join(text.split()).lower()


def _copied(answer: str, prompt: str, min_chars: int) -> bool:
    flat_prompt = _flat_prompt(prompt)
    # A flattened head of the answer is a prefix of the flattened answer: when a head is not in
    # the prompt, neither is the answer, and the (long) answer need not be flattened.
    if _flatten(answer[:16]) not in flat_prompt or _flatten(answer[: 4 * min_chars]) not in flat_prompt:
        return False
    flat = _flatten(answer)
    return len(flat) >= min_chars and flat in flat_prompt


@lru_cache(maxsize=64)
def _flat_prompt(prompt: str) -> str:
    # A group of rollouts shares one prompt; flatten it once.
    return _flatten(prompt)


def _read_info(index: int, info: Any) -> StepInfo:
    if not isinstance(info, (StepInfo, Mapping)):
        raise DataError(f"infos[{index}] is a {type(info).__name__}, not a step's info dict")
    try:
        return step_info(info)
    except ValidationError as exc:
        raise DataError(f"infos[{index}] is not a step's info dict: "
                        f"{exc.error_count()} problem(s), first: {_first_problem(exc)}") from None


def _first_problem(exc: ValidationError) -> str:
    first = exc.errors(include_url=False, include_input=False)[0]
    return f"{'.'.join(str(p) for p in first['loc']) or 'the dict'}: {first['msg']}"


def step_info(info: StepInfo | Mapping[str, Any]) -> StepInfo:
    """A ``StepInfo`` from an ``info`` dict, ignoring keys other wrappers may have added."""
    if isinstance(info, StepInfo):
        return info
    if "evaluation" in info:
        warn_old_info_keys(info)
    return StepInfo.model_validate({k: v for k, v in info.items() if k in _STEP_FIELDS})


def input_getter(name: str, spec: Any) -> Callable[[Episode, int], Any]:
    """``(episode, training step) -> value`` of the term input ``name`` for the term ``spec``."""
    if name == "report":
        evaluator = getattr(spec, "evaluator", None)  # looked up once: a missing pydantic attribute is slow
        read = getattr(spec, "read_report", None)
        if read is not None:
            key = (evaluator, read)
            return lambda ep, step: ep._report_as(key)
        return lambda ep, step: ep.report_for(evaluator)
    if name == "config":
        return lambda ep, step: spec
    if name == "training_step":
        return lambda ep, step: step
    if name == "episode":
        return lambda ep, step: ep
    if name in READERS:
        return lambda ep, step: ep.read(name)
    if name not in _ATTRIBUTE_INPUTS:
        raise KeyError(name)
    return lambda ep, step: getattr(ep, name)


_ATTRIBUTE_INPUTS = frozenset(("steps", "actions", "prompt", "task", "task_text", "gold_answers", "answer", "outcome"))
