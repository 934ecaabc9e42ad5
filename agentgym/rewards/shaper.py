"""Shaper: evaluates a RewardSpec on finished episodes and explains every total.

For the stage in force at the training step, each term gives a raw value (or abstains), which
becomes ``contribution = ±weight * raw`` (``-`` for penalties), capped at ``cap`` in magnitude.
A gated term contributes 0 unless its gate's raw value reaches ``at_least``; a content term
scores 0 when an answer guard trips. The total is the sum of the contributions, divided by the
weights of the terms that did not abstain when ``normalize: weights``, then clipped.
"""

from __future__ import annotations

import math
import warnings
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from agentgym._toolbox import is_number, short
from agentgym.errors import ConfigError, DataError
from agentgym.rewards._base import LinearWeight, TermSpec, check_training_step
from agentgym._deprecated import RenamedKeys
from agentgym.rewards._registry import READERS, RENAMED_INPUTS, TERMS, Abstain
from agentgym.rewards.episode import Episode, input_getter
from agentgym.rewards._load import load_spec
from agentgym.rewards.spec import RewardSpec
from agentgym.rewards.terms_generic import Custom, load_custom

__all__ = ["Shaper", "RewardBreakdown", "TermValue", "build_shaper"]

_tuple = tuple.__new__  # builds TermValues without NamedTuple's Python-level __new__ (hot path)


class TermValue(NamedTuple):
    """One term's part of a total."""

    raw: float | None
    """The term's value before weighting; None when it abstained, was gated off or is inactive."""
    weight: float
    """The weight in force at the training step (0 for a term of another stage)."""
    contribution: float
    """What the term added to the total (before normalization and clipping)."""
    abstained: bool = False
    """True when the term had no opinion; it then counts in neither the sum nor the normalization."""
    reason: str | None = None
    """Why the term abstained, was gated off, was zeroed by a guard, or is inactive."""
    failure: str | None = None
    """A ``FailureReason`` value when the term abstained because something outside the model failed."""

    def to_dict(self) -> dict[str, Any]:
        return {"raw": self.raw, "weight": self.weight, "contribution": self.contribution,
                "abstained": self.abstained, "reason": self.reason, "failure": self.failure}


@dataclass(frozen=True, slots=True)
class RewardBreakdown:
    """A shaped reward and how it was made. ``to_dict()`` is what ``info["reward"]`` holds."""

    total: float
    """The shaped reward."""
    outcome: float
    """The unshaped outcome, 1.0 iff the task was solved: filter GRPO groups on this, not on total."""
    terms: dict[str, TermValue] = field(default_factory=dict)
    """Every term of the spec, in spec order (terms of other stages appear as inactive)."""
    stage: str | None = None
    """The stage in force, for staged specs."""
    training_step: int | None = None
    """The training step the reward was shaped at (None when the trainer never set one)."""

    @property
    def abstained(self) -> list[str]:
        """Names of the terms that abstained."""
        return [name for name, t in self.terms.items() if t.abstained]

    @property
    def failures(self) -> dict[str, str]:
        """The terms that could not score because something outside the model failed, and what failed."""
        return {name: t.failure for name, t in self.terms.items() if t.failure is not None}

    @property
    def all_abstained(self) -> bool:
        """True when no term gave a value and at least one abstained (e.g. the only term is a judge that
        failed): the total 0.0 is then no opinion, not a real 0; trainers mask or flag it. Terms gated
        off or inactive in the stage have no value either; a guard's 0 is a value."""
        return any(t.abstained for t in self.terms.values()) and all(t.raw is None for t in self.terms.values())

    def to_dict(self) -> dict[str, Any]:
        """``info["reward"]``: ``abstained`` is :attr:`all_abstained`, ``abstain_reasons`` why each term abstained."""
        terms, reasons, failures, valued = {}, {}, {}, False
        for name, (raw, weight, contribution, abstained, reason, failure) in self.terms.items():  # every episode
            terms[name] = {"raw": raw, "weight": weight, "contribution": contribution, "abstained": abstained,
                           "reason": reason, "failure": failure}
            if abstained:
                reasons[name] = reason
                if failure is not None:
                    failures[name] = failure
            elif raw is not None:
                valued = True
        return {"total": self.total, "outcome": self.outcome, "stage": self.stage, "training_step": self.training_step,
                "terms": terms, "abstained": bool(reasons) and not valued, "abstain_reasons": reasons,
                "failures": failures}

    @classmethod
    def from_info(cls, info: Mapping[str, Any]) -> RewardBreakdown | None:
        """The breakdown a shaped step's ``info`` carries under ``reward``; None on an unshaped step.

        The one reader of ``info["reward"]``: a dict that is not a breakdown raises ``DataError``."""
        data = info.get("reward")
        return None if data is None else cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Any) -> RewardBreakdown:
        """The breakdown :meth:`to_dict` wrote (``info["reward"]``, a stored episode's ``reward``)."""
        try:
            terms = {str(name): _term_from_dict(t) for name, t in data["terms"].items()}
            step = data.get("training_step")
            return cls(_real(data["total"]), _real(data["outcome"]), terms, data.get("stage"),
                       None if step is None else int(step))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DataError(f"not a reward breakdown ({type(exc).__name__}: {short(str(exc))}): "
                            f"expected the dict RewardBreakdown.to_dict() writes, got {short(data)}") from None


def _term_from_dict(data: Mapping[str, Any]) -> TermValue:
    raw = data["raw"]
    failure = data.get("failure")
    return _tuple(TermValue, (None if raw is None else _real(raw), _real(data["weight"]), _real(data["contribution"]),
                              data["abstained"] is True, data.get("reason"), None if failure is None else str(failure)))


def _real(value: Any) -> float:
    if not is_number(value):
        raise ValueError(f"{short(value)} is not a finite number")
    return float(value)


@dataclass(frozen=True, slots=True)
class _Compiled:
    spec: TermSpec
    name: str
    score: Callable[[Episode, int], Any]
    """``(episode, training step) -> raw``: the term function with its inputs fetched."""
    sign: float
    guarded: bool
    gate: tuple[str, float] | None
    cap: float | None
    needs: frozenset[str]
    """What the env must provide (``TermSpec.needs`` and the env-specific inputs the function asks for)."""
    where: str
    """The term's place in the spec, e.g. ``stages[1].terms[0]``."""


@dataclass(frozen=True, slots=True)
class _Plan:
    """The terms in force at one training step, in evaluation order (gate sources first)."""

    stage: str | None
    terms: tuple[tuple[_Compiled, float], ...]
    inactive: tuple[str, ...]
    order: tuple[str, ...] | None
    """Spec order of the breakdown, when it differs from the evaluation order."""
    guarded: bool
    """Whether any term in force reads the answer's content (then the guards run)."""
    runs: tuple[tuple[str, Callable[..., TermValue]], ...]
    """``(name, run)`` for each term of ``terms``: the term compiled at its weight (:func:`_runner`)."""
    idle: tuple[tuple[str, TermValue], ...]
    """The inactive terms' values, the same in every episode."""


class Shaper:
    """Shapes episodes' rewards by a :class:`RewardSpec`. Build one with :func:`build_shaper`."""

    def __init__(self, spec: RewardSpec) -> None:
        self.spec = spec
        self._groups = [[_compile_at(f"{where}[{j}]", t) for j, t in enumerate(terms)]
                        for where, terms in spec.term_groups()]
        self._starts = [s.start for s in spec.stages] if spec.stages else [0.0]
        self._names = tuple(dict.fromkeys(c.name for group in self._groups for c in group))
        self._plans: dict[tuple[int, int | None], _Plan] = {}
        self._warned = False
        self._normalize, self._clip, self._guards = spec.normalize == "weights", spec.clip, spec.guards

    def check_env(self, env: Any) -> None:
        """Raise ``ConfigError`` naming the term and the env when a term needs what ``env`` (an agentgym
        env, its class or a wrapper of it) does not provide. Envs that declare nothing are not checked."""
        cls = env if isinstance(env, type) else type(getattr(env, "unwrapped", env))
        provides = getattr(cls, "reward_provides", None)
        if provides is None:
            return
        provides = _provided(provides)
        for c in (c for group in self._groups for c in group):
            missing = c.needs - provides
            if missing:
                offered = ", ".join(sorted(provides)) or "none"
                raise ConfigError(f"reward.{c.where} ({c.name!r})", c.spec.kind,
                                  f"a term that {cls.__name__} can score: {c.spec.kind!r} needs "
                                  f"{', '.join(sorted(missing))}, which {cls.__name__} does not provide "
                                  f"(it provides: {offered})")

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from the spec: compiled terms may hold clients (the judge) that do not pickle.
        return (Shaper, (self.spec,))

    @property
    def term_names(self) -> tuple[str, ...]:
        """Every term name the breakdowns carry, in spec order."""
        return self._names

    @property
    def needs_total_steps(self) -> bool:
        """Whether shaping needs the run's length from the trainer (fraction boundaries, none in the spec)."""
        return self.spec.unit == "fraction" and self.spec.total_steps is None

    @property
    def uses_judge(self) -> bool:
        return any(c.spec.kind == "llm_judge" for group in self._groups for c in group)

    # -- shaping -----------------------------------------------------------------------------
    def shape(self, episode: Episode, training_step: int | None = None,
              total_steps: int | None = None) -> RewardBreakdown:
        """The breakdown of one finished episode at ``training_step``."""
        return self._evaluate(self.plan_at(training_step, total_steps), episode, training_step)

    def shape_batch(self, episodes: Sequence[Episode], training_step: int | None = None,
                    total_steps: int | None = None, *, max_workers: int | None = None) -> list[RewardBreakdown]:
        """Breakdowns of many episodes at one training step; judge calls run concurrently."""
        plan = self.plan_at(training_step, total_steps)
        if not self.uses_judge or len(episodes) < 2:
            return [self._evaluate(plan, ep, training_step) for ep in episodes]
        workers = max_workers or max(c.spec.max_concurrency for g in self._groups for c in g
                                     if c.spec.kind == "llm_judge")
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(lambda ep: self._evaluate(plan, ep, training_step), episodes))

    def stage_at(self, training_step: int | None, total_steps: int | None = None) -> str | None:
        """Name of the stage in force at ``training_step`` (None for an unstaged spec)."""
        return self.plan_at(training_step, total_steps).stage

    def weights_at(self, training_step: int | None, total_steps: int | None = None) -> dict[str, float]:
        """Every term's weight at ``training_step`` (0 for terms of other stages)."""
        plan = self.plan_at(training_step, total_steps)
        weights = dict.fromkeys(self._names, 0.0)
        weights.update({c.name: w for c, w in plan.terms})
        return weights

    def plan_at(self, training_step: int | None, total_steps: int | None = None) -> _Plan:
        step = self._step(training_step)
        if total_steps is not None:
            check_training_step(step, total_steps)
        total = total_steps if total_steps is not None else self.spec.total_steps
        key = (step, total)
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) > 1024:
                self._plans.clear()
            plan = self._plans[key] = self._make_plan(step, total)
        return plan

    def _step(self, training_step: int | None) -> int:
        if training_step is None:
            if (self.spec.stages or self._has_linear()) and not self._warned:
                self._warned = True
                warnings.warn("a scheduled reward is shaped without a training step; using step 0. Pass "
                              "reset(options={'training_step': n}) or call set_training_step(n).", stacklevel=4)
            return 0
        return check_training_step(training_step)[0]

    def _has_linear(self) -> bool:
        return any(isinstance(c.spec.weight, LinearWeight) for g in self._groups for c in g)

    def _make_plan(self, step: int, total: int | None) -> _Plan:
        to_step = self._resolver(total)
        index = bisect_right([to_step(s) for s in self._starts], step) - 1
        group = self._groups[max(index, 0)]
        weighted = tuple((c, _weight(c.spec, step, to_step)) for c in group)
        active = {c.name for c in group}
        stage = self.spec.stages[max(index, 0)].name if self.spec.stages else None
        ordered = _gate_order(weighted)
        inactive = tuple(n for n in self._names if n not in active)
        reorder = inactive or tuple(c.name for c, _ in ordered) != self._names
        runs = tuple((c.name, _runner(c, w, frozenset(active))) for c, w in ordered)
        idle = tuple((n, TermValue(None, 0.0, 0.0, False, f"inactive in stage {stage!r}")) for n in inactive)
        return _Plan(stage, ordered, inactive, self._names if reorder else None, any(c.guarded for c in group),
                     runs, idle)

    def _resolver(self, total: int | None) -> Callable[[float], float]:
        if self.spec.unit == "step":
            return lambda b: b
        if total is None:
            raise ConfigError("total_steps", None, "an int >= 1: the spec's boundaries are fractions of the run; "
                              "set total_steps in the spec or pass it with the training step")
        return lambda b: round(b * total)

    def _evaluate(self, plan: _Plan, episode: Episode, training_step: int | None) -> RewardBreakdown:
        step = training_step or 0
        guard = episode.guard_reason(self._guards) if plan.guarded else None
        values: dict[str, TermValue] = {}
        for name, run in plan.runs:
            values[name] = run(episode, step, values, guard)
        total = self._combine(values)
        if plan.idle:
            values.update(plan.idle)
        if plan.order is not None:
            values = {name: values[name] for name in plan.order}
        return RewardBreakdown(total, episode.outcome, values, plan.stage, training_step)

    def _combine(self, values: dict[str, TermValue]) -> float:
        terms = values.values()
        total = sum([v.contribution for v in terms])  # sum(), as before (Python 3.12 sums floats compensated)
        if self._normalize:
            denominator = sum([v.weight for v in terms if not v.abstained])
            total = total / denominator if denominator > 0 else 0.0
        if self._clip is not None:
            low, high = self._clip
            total = min(high, max(low, total))
        return total


_PROVIDES = RenamedKeys("reward_provides", RENAMED_INPUTS)


def _provided(provides: frozenset[str]) -> frozenset[str]:
    """``reward_provides`` in today's words (an env may still say ``question``/``references``)."""
    if provides.isdisjoint(RENAMED_INPUTS):
        return provides
    return frozenset(_PROVIDES.apply(dict.fromkeys(provides), stacklevel=5))


_SHARED = 256
"""Distinct values each term keeps to share between episodes (see :func:`_runner`)."""


def _runner(c: _Compiled, weight: float, evaluated: frozenset[str]) -> Callable[..., TermValue]:
    """``run(episode, step, values, guard) -> TermValue``: one term's value at ``weight`` (gated off,
    zeroed by a guard, abstained, or weighted and capped), with what every episode shares worked
    out once. ``values`` holds the terms evaluated before (the gate sources).

    A term's values repeat across episodes (a figure of k/8, a gate's reason), so each distinct
    one is made once and shared (up to ``_SHARED`` of them; TermValues are immutable): a batch
    then leaves far fewer objects for the garbage collector to scan again and again. The keys
    tell -0.0 from 0.0, which compare equal."""
    score, scale, cap, guarded, name = c.score, c.sign * weight, c.cap, c.guarded, c.name
    source, at_least = c.gate if c.gate is not None else (None, 0.0)
    from_outcome = source == "outcome" and source not in evaluated
    shared: dict[Any, TermValue] = {}

    def made(key: Any, raw: float | None, contribution: float, abstained: bool, reason: Any,
             failure: str | None = None) -> TermValue:
        value = _tuple(TermValue, (raw, weight, contribution, abstained, reason, failure))
        if key is not None and len(shared) < _SHARED:
            shared[key] = value
        return value

    last: tuple[TermValue | None, TermValue | None] = (None, None)  # the source's last value and the gate's verdict

    def closed(episode: Episode, values: dict[str, TermValue]) -> TermValue | None:
        nonlocal last
        if from_outcome:
            return gated(episode.outcome)
        found = values[source]
        seen = last
        if seen[0] is found:  # the source's values are shared too: most episodes repeat the last one
            return seen[1]
        if found.abstained or found.raw is None:
            key = _reason_key("no value", found.reason)
            verdict = shared.get(key) or made(key, None, 0.0, False, f"gated off: {source} has no value ({found.reason})")
        else:
            verdict = gated(found.raw)
        last = (found, verdict)
        return verdict

    def gated(value: float) -> TermValue | None:
        if value >= at_least:
            return None
        key = ("closed", value) if value else ("closed at 0", math.copysign(1.0, value))
        return shared.get(key) or made(key, None, 0.0, False, f"gated off: {source} = {value:g} < {at_least:g}")

    def weighted(raw: float, reason: str | None) -> TermValue:
        contribution = scale * raw
        if cap is not None:
            contribution = max(-cap, min(cap, contribution))
        return made(raw if raw else ("zero", math.copysign(1.0, raw), reason), raw, contribution, False, reason)

    def run(episode: Episode, step: int, values: dict[str, TermValue], guard: str | None) -> TermValue:
        if source is not None:
            off = closed(episode, values)
            if off is not None:
                return off
        if guarded and guard is not None:
            return shared.get(("zero", 1.0, guard)) or weighted(0.0, guard)
        raw = score(episode, step)
        if raw is None or isinstance(raw, Abstain):
            reason = raw.reason if raw is not None else "the term abstained"
            failure = raw.failure if raw is not None else None
            key = _reason_key("abstained", reason) if failure is None else None  # a failure is never shared
            return shared.get(key) or made(key, None, 0.0, True, reason, failure)
        raw = float(raw)
        if not math.isfinite(raw):
            raise ConfigError(f"reward term {name!r} returned", raw, "a finite number or an abstention")
        return shared.get(raw if raw else ("zero", math.copysign(1.0, raw), None)) or weighted(raw, None)

    return run


def _reason_key(kind: str, reason: Any) -> tuple[str, str | None] | None:
    """The key a value with this reason is shared under; None (not shared) for a reason that is not a str."""
    return (kind, reason) if reason is None or type(reason) is str else None


def _weight(spec: TermSpec, step: int, to_step: Callable[[float], float]) -> float:
    w = spec.weight
    if isinstance(w, LinearWeight):
        return w.at(step, to_step(w.start), to_step(w.end))
    return float(w)


def _gate_order(weighted: tuple[tuple[_Compiled, float], ...]) -> tuple[tuple[_Compiled, float], ...]:
    """Terms ordered so that every gate's source is evaluated before the terms it gates."""
    by_name = {c.name: (c, w) for c, w in weighted}
    done: dict[str, tuple[_Compiled, float]] = {}

    def visit(name: str) -> None:
        if name in done or name not in by_name:
            return
        gate = by_name[name][0].spec.gate
        if gate is not None:
            visit(gate.term)
        done[name] = by_name[name]

    for c, _ in weighted:
        visit(c.name)
    return tuple(done.values())


def _compile_at(where: str, spec: TermSpec) -> _Compiled:
    """``_compile``, its errors (an unimportable custom function, a judge without a model) located in the spec."""
    try:
        return _compile(spec, where)
    except ConfigError as exc:
        field = exc.field if exc.field.startswith(where) else f"{where}.{exc.field.rpartition('.')[2]}"
        raise ConfigError(field, exc.value, exc.allowed) from exc.__cause__


# Inputs only some envs can give, and the word their ``reward_provides`` uses for them (the
# registered inputs say their own).
_INPUT_NEEDS = {"task_text": "task_text", "gold_answers": "gold_answers"}


def _compile(spec: TermSpec, where: str) -> _Compiled:
    if isinstance(spec, Custom):
        fn, inputs = load_custom(spec)
    else:
        tdef = TERMS[spec.kind]
        fn, inputs = tdef.fn, tdef.inputs
        bound = tdef.bind(spec) if tdef.bind else {}
        if bound:
            fn = _bind(fn, bound)
    gate = None if spec.gate is None else (spec.gate.term, spec.gate.at_least)
    needs = spec.needs | {_INPUT_NEEDS[name] for name in inputs if name in _INPUT_NEEDS} \
        | {READERS[name].needs for name in inputs if name in READERS}
    return _Compiled(spec, spec.key, _scorer(fn, inputs, spec), -1.0 if spec.penalty else 1.0, spec.is_guarded(),
                     gate, spec.cap, frozenset(needs), where)


def _scorer(fn: Callable[..., Any], inputs: tuple[str, ...], spec: TermSpec) -> Callable[..., Any]:
    """``(episode, step) -> fn(*inputs)``, unrolled for the common arities (this runs once per term
    per episode); a last ``config`` input is passed as the constant it is."""
    if inputs and inputs[-1] == "config":
        getters = tuple(input_getter(name, spec) for name in inputs[:-1])
        if not getters:
            return lambda ep, step: fn(spec)
        if len(getters) == 1:
            (g0,) = getters
            return lambda ep, step: fn(g0(ep, step), spec)
        if len(getters) == 2:
            g0, g1 = getters
            return lambda ep, step: fn(g0(ep, step), g1(ep, step), spec)
        return lambda ep, step: fn(*[g(ep, step) for g in getters], spec)
    getters = tuple(input_getter(name, spec) for name in inputs)
    if len(getters) == 1:
        (g0,) = getters
        return lambda ep, step: fn(g0(ep, step))
    if len(getters) == 2:
        g0, g1 = getters
        return lambda ep, step: fn(g0(ep, step), g1(ep, step))
    if len(getters) == 3:
        g0, g1, g2 = getters
        return lambda ep, step: fn(g0(ep, step), g1(ep, step), g2(ep, step))
    return lambda ep, step: fn(*[g(ep, step) for g in getters])


def _bind(fn: Callable[..., Any], bound: dict[str, Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        return fn(*args, **bound)

    return call


def build_shaper(reward: Any, *, env: Any = None) -> Shaper:
    """A Shaper from a Shaper, a RewardSpec, a preset name, a dict, YAML/JSON text or a file path.

    With ``env`` (an env, its class or a wrapper), a spec whose terms the env cannot score is
    refused with a ``ConfigError`` naming the term and the env."""
    shaper = reward if isinstance(reward, Shaper) else Shaper(load_spec(reward))
    if env is not None:
        shaper.check_env(env)
    return shaper
