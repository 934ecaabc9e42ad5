"""``compare``: the same rollouts shaped under several specs (and schedule steps), side by side.

    comparison = compare(Rollouts.load("runs/tp"), ["planner_r1/sparse", "planner_r1/dense",
                                                    "planner_r1/curriculum"], steps=[0, 100, 400], total_steps=500)
    print(comparison.text())                       # the tables, the worst inversions, the warnings
    comparison.to_dict()                           # what --json writes
    comparison.violations(["zero_var>0.5"])        # what --fail-if checks
    comparison.plot("lab/compare.png")

Each (spec, step) is one :class:`~agentgym.rewards.lab.signal.GroupStats` over the rollouts'
groups, made by the same code trainers log live (``group_metrics``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentgym.errors import ConfigError
from agentgym.rewards.lab.readers import Rollouts
from agentgym.rewards.lab.reshape import TaskContexts, collector_paused, episodes_of, shape_steps, spec_label
from agentgym.rewards.lab.signal import GroupStats, SignalRow, group_stats
from agentgym.rewards.shaper import Shaper, build_shaper

__all__ = ["compare", "Comparison", "SpecResult", "Threshold", "parse_steps", "parse_sweep"]

_OPS: dict[str, Callable[[float, float], bool]] = {">=": operator.ge, "<=": operator.le, ">": operator.gt,
                                                   "<": operator.lt, "==": operator.eq, "!=": operator.ne}
_THRESHOLD = re.compile(r"\s*([\w/.-]+)\s*(>=|<=|==|!=|>|<)\s*(-?[\d.]+(?:e-?\d+)?)\s*", re.IGNORECASE)


@dataclass(frozen=True)
class SpecResult:
    """One spec at one training step (or at several, where its schedule gives the same weights)."""

    spec: str
    step: int
    """The first of ``steps``."""
    stage: str | None
    stats: GroupStats
    steps: tuple[int, ...] = ()
    """Every compared step this result stands for (an unscheduled spec: all of them)."""

    @property
    def at(self) -> str:
        """``spec @ step`` (``@ 0..400`` when it stands for several steps), as the output names it."""
        steps = self.steps or (self.step,)
        return f"{self.spec} @ {steps[0]}" + (f"..{steps[-1]}" if len(steps) > 1 else "")


@dataclass(frozen=True)
class Threshold:
    """``metric op value``, e.g. ``zero_var>0.5``: a (spec, step) whose metric satisfies it fails the check."""

    metric: str
    op: str
    value: float

    @classmethod
    def parse(cls, text: str) -> Threshold:
        match = _THRESHOLD.fullmatch(text)
        if match is None:
            raise ConfigError("fail_if", text, "METRIC OP NUMBER, e.g. 'zero_var>0.5' (OP: > >= < <= == !=)")
        return cls(match.group(1), match.group(2), float(match.group(3)))

    def violated_by(self, metrics: Mapping[str, float]) -> str | None:
        """Why ``metrics`` fail this threshold, or None; an undefined (NaN) metric fails it."""
        if self.metric not in metrics:
            raise ConfigError("fail_if", str(self), f"a metric among {sorted(metrics)}")
        value = metrics[self.metric]
        if math.isnan(value):
            return f"{self.metric} is undefined (no group where it is defined), so {self} cannot be ruled out"
        return f"{self.metric} = {value:.4g} ({self})" if _OPS[self.op](value, self.value) else None

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.value:g}"


class Comparison:
    """Every spec at every step over the same rollouts: tables, a JSON verdict, thresholds, figures."""

    def __init__(self, results: Sequence[SpecResult], rollouts: int, groups: int, sources: Sequence[str]) -> None:
        self.results = list(results)
        self.rollouts, self.groups, self.sources = rollouts, groups, list(sources)

    def result(self, spec: str, step: int | None = None) -> SpecResult:
        """The result of ``spec`` (at ``step``, or its only step)."""
        found = [r for r in self.results if r.spec == spec and (step is None or r.step == step)]
        if len(found) != 1:
            raise KeyError(f"{spec!r} at step {step}: have {[(r.spec, r.step) for r in self.results]}")
        return found[0]

    def warnings(self) -> list[str]:
        return [f"{r.at}: {w}" for r in self.results for w in r.stats.warnings()]

    @property
    def failed(self) -> bool:
        """Whether something outside the model failed in any shaping (a dead judge)."""
        return any(r.stats.failed > 0 for r in self.results)

    def violations(self, thresholds: Iterable[str | Threshold]) -> list[str]:
        """``spec @ step: why`` for every threshold a (spec, step) satisfies."""
        checks = [t if isinstance(t, Threshold) else Threshold.parse(t) for t in thresholds]
        out = []
        for r in self.results:
            metrics = r.stats.metrics()
            out += [f"{r.at}: {why}" for t in checks if (why := t.violated_by(metrics)) is not None]
        return out

    def to_dict(self, thresholds: Iterable[str | Threshold] = ()) -> dict[str, Any]:
        """The JSON document ``--json`` writes: every metric, the terms, the worst inversions, the verdict."""
        violations = self.violations(thresholds)
        return _finite({"rollouts": self.rollouts, "groups": self.groups, "sources": self.sources,
                        "results": [{"spec": r.spec, "step": r.step, "steps": list(r.steps), "stage": r.stage,
                                     "metrics": r.stats.metrics(),
                                     "terms": {name: dataclasses.asdict(t) for name, t in r.stats.terms.items()},
                                     "worst_inversions": [w.to_dict() for w in r.stats.worst],
                                     "warnings": r.stats.warnings()} for r in self.results],
                        "warnings": self.warnings(),
                        "verdict": {"passed": not violations and not self.failed, "violations": violations,
                                    "failed": self.failed}})

    def to_json(self, thresholds: Iterable[str | Threshold] = ()) -> str:
        return json.dumps(self.to_dict(thresholds), indent=2, allow_nan=False)

    def text(self, *, width: int = 160) -> str:
        """The tables, the worst inversions and the warnings, as plain text."""
        from agentgym.rewards.lab._tables import plain_text

        return plain_text(self.render, width)

    def render(self, console: Any) -> None:
        """Print the comparison on a rich console."""
        from agentgym.rewards.lab._tables import render_comparison

        render_comparison(self, console)

    def plot(self, path: str | Path) -> Path | None:
        """The figures as one PNG at ``path`` (None without matplotlib)."""
        from agentgym.rewards.lab.figures import plot_comparison

        return plot_comparison(self, Path(path))


def compare(rollouts: Rollouts | Sequence[Any], specs: Sequence[Any], *, steps: Sequence[int] | None = None,
            total_steps: int | None = None, env_id: str | None = None, env_kwargs: Mapping[str, Any] | None = None,
            labels: Sequence[str] | None = None, worst: int = 5) -> Comparison:
    """Shape ``rollouts`` under each of ``specs`` at each of ``steps`` and measure the signal.

    Args:
        rollouts: a :class:`Rollouts` (``Rollouts.load``), or rollouts to group by their ``group``.
        specs: anything ``build_shaper`` takes: preset names, dicts, YAML/JSON text, paths, shapers.
        steps: the training steps to shape at (default: 0).
        total_steps: the run's length, for specs whose schedule is in fractions of it.
        env_id: the env of rollouts that name none.
        env_kwargs: kwargs that replace the recorded ones (e.g. where the data lives on this machine).
        labels: how the output names each spec (default: the preset name, file, or spec ``name``).
        worst: widest inversions kept per (spec, step).
    """
    rollouts = rollouts if isinstance(rollouts, Rollouts) else Rollouts(rollouts)
    if not specs:
        raise ConfigError("specs", [], "at least one reward spec to compare")
    steps = list(steps) if steps is not None else [0]
    shapers = [build_shaper(spec) for spec in specs]
    names = _unique(list(labels) if labels is not None else [spec_label(s, sh, i)
                                                             for i, (s, sh) in enumerate(zip(specs, shapers))])
    contexts = TaskContexts(env_id, env_kwargs)
    results = []
    try:
        with collector_paused():
            episodes = episodes_of(list(rollouts), contexts)
            for name, shaper in zip(names, shapers):
                _check_total(shaper, name, total_steps)
                results += _results(name, shaper, rollouts, episodes, steps, total_steps, worst)
    finally:
        contexts.close()
    return Comparison(results, len(rollouts), len(rollouts.groups()), rollouts.paths)


def _results(name: str, shaper: Shaper, rollouts: Rollouts, episodes: list[Any], steps: list[int],
             total_steps: int | None, worst: int) -> list[SpecResult]:
    """One spec's results: one per distinct shaping (steps that shared one are one result)."""
    shaped = shape_steps(shaper, episodes, steps, total_steps)
    by_shaping: dict[int, list[int]] = {}
    for step, breakdowns in shaped.items():
        by_shaping.setdefault(id(breakdowns), []).append(step)
    out = []
    for same in by_shaping.values():
        rows = [SignalRow(rollouts.group_name(i), b.total, b.outcome, b, r.sample, r.task_id)
                for i, (r, b) in enumerate(zip(rollouts, shaped[same[0]]))]
        out.append(SpecResult(name, same[0], shaper.stage_at(same[0], total_steps), group_stats(rows, worst=worst),
                              tuple(same)))
    return out


def parse_steps(text: str) -> list[int]:
    """``"0,100,400"`` -> ``[0, 100, 400]``."""
    try:
        steps = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ConfigError("steps", text, "training steps separated by commas, e.g. 0,100,400") from None
    if not steps or any(s < 0 for s in steps):
        raise ConfigError("steps", text, "one or more training steps >= 0, separated by commas")
    return steps


def parse_sweep(text: str) -> list[int]:
    """``"a:b:k"`` -> ``k`` training steps evenly spaced from ``a`` to ``b`` (both included, rounded)."""
    parts = text.split(":")
    try:
        start, stop, count = int(parts[0]), int(parts[1]), int(parts[2])
        if len(parts) != 3:
            raise ValueError
    except (ValueError, IndexError):
        raise ConfigError("sweep", text, "START:STOP:COUNT, e.g. 0:500:6 (six steps from 0 to 500)") from None
    if start < 0 or stop < start or count < 1:
        raise ConfigError("sweep", text, "0 <= START <= STOP and COUNT >= 1")
    if count == 1:
        return [start]
    return list(dict.fromkeys(round(start + (stop - start) * k / (count - 1)) for k in range(count)))


def _check_total(shaper: Shaper, name: str, total_steps: int | None) -> None:
    if shaper.needs_total_steps and total_steps is None:
        raise ConfigError("total_steps", None, f"an int >= 1: {name!r} is scheduled in fractions of the run; give "
                          "the run's length (--total-steps T) or set total_steps in the spec")


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} #{seen[name]}")
    return out


def _finite(value: Any) -> Any:
    """``value`` with every NaN (an undefined figure) as None, for JSON."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value
