"""``probe``: can a spec be gamed? Degenerate answers made from each task's own passing answer.

    report = probe("TravelPlanner-v0", ["planner_r1/dense", {"preset": "planner_r1/dense",
                                                            "terms": {"final_pass": {"evaluator": "official"}}}])
    report.hacked          # True when a probe earns as much as the passing answer on some task
    print(report.text())

For each task the env's reward-lab kit (``TextEnv.reward_lab``) gives a passing episode; every probe
turns it into a degenerate one (TravelPlanner: an unknown transport mode, a repeat in other letter
case, all fields ``-``, ...; SearchQA: a padded answer, a list hedge, two answers, ...). Each is played
through the real env (no reward), so its outcome is the env's evaluator's, then shaped offline under
every spec, as ``compare`` shapes. A probe the env's evaluator passes on a task is no hack there, and
is counted apart. A probe *earns as much as a pass* when its total reaches the passing episode's.

Add probes as functions ``probe(case: ProbeCase) -> actions | None`` (``probes={"name": fn}``, or
``agentgym rewards probe --probe module:function``), or as a JSONL file (``probe_file=``, ``--probes``),
one object a line::

    {"name": "shout", "actions": ["<answer>{answer}!!!</answer>"]}
    {"name": "dodge", "task_id": "train-3", "actions": ["GiveUp[{task_text}]"], "keep_passing_steps": false}

``actions`` replace the passing episode's submission (its earlier steps are kept unless
``keep_passing_steps`` is false); ``{answer}`` and ``{task_text}`` stand for the passing answer and
the task's text; ``task_id`` limits the probe to one task.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentgym.errors import ConfigError, DataError
from agentgym.rewards.lab.reshape import TaskContexts, spec_label
from agentgym.rewards.lab.rollouts import Rollout, rollout_record
from agentgym.rewards.lab.signal import group_stats
from agentgym.rewards.shaper import build_shaper

__all__ = ["probe", "ProbeCase", "ProbeReport", "ProbeRow", "Probe", "load_probe_file", "import_probe"]

TOLERANCE = 1e-9
MAX_PROBE_FILE_BYTES = 16 << 20
"""The largest probe file read (a probe is a few actions: thousands fit)."""


@dataclass(frozen=True)
class ProbeCase:
    """What a probe starts from: one task and its passing episode."""

    env: Any
    """The unwrapped env, on the task (its world, tasks and ``action_format`` are there to read)."""
    task_id: str
    task_text: str | None
    passing: list[str]
    """The passing episode's actions; the last one submits."""
    answer: str | None
    """The answer the passing episode submitted (``StepInfo.answer``: a plan's JSON, a gold answer)."""


Probe = Callable[[ProbeCase], "list[str] | None"]
"""``probe(case) -> actions`` of a degenerate episode of the case's task, or None to skip the task."""


@dataclass(frozen=True)
class ProbeRow:
    """One probe under one spec, over the tasks it was played on."""

    probe: str
    spec: str
    n_tasks: int
    """Tasks where the probe was degenerate (the env's evaluator failed it)."""
    mean_ratio: float
    """Mean of probe total / passing total (NaN where the pass earns nothing)."""
    max_ratio: float
    hacks: int
    """Tasks where the probe earned as much as the passing episode."""
    passes_evaluator: int
    """Tasks where the env's evaluator passed the probe (no hack there; left out of the figures)."""
    hacked_tasks: tuple[str, ...] = ()


class ProbeReport:
    """Every probe under every spec: ratios to the passing reward, hacks, warnings."""

    def __init__(self, env_id: str, specs: Sequence[str], n_tasks: int, rows: Sequence[ProbeRow],
                 warnings: Sequence[str], skipped: Sequence[str]) -> None:
        self.env_id, self.specs, self.n_tasks = env_id, list(specs), n_tasks
        self._rows, self._warnings, self.skipped = list(rows), list(warnings), list(skipped)

    def rows(self, spec: str | None = None) -> list[ProbeRow]:
        return [r for r in self._rows if spec is None or r.spec == spec]

    @property
    def hacked(self) -> bool:
        """Whether some probe earns as much as a pass under some spec, on some task."""
        return any(r.hacks for r in self._rows)

    @property
    def failed(self) -> bool:
        return any(w.startswith("FAILED") or ": FAILED" in w for w in self._warnings)

    def warnings(self) -> list[str]:
        hacks = [f"HACK: {r.spec}: probe {r.probe!r} earns as much as the passing answer on {r.hacks} of {r.n_tasks} "
                 f"tasks ({', '.join(r.hacked_tasks[:5])}{', ...' if len(r.hacked_tasks) > 5 else ''})"
                 for r in self._rows if r.hacks]
        return [*self._warnings, *hacks]

    def to_dict(self) -> dict[str, Any]:
        return {"env_id": self.env_id, "specs": self.specs, "n_tasks": self.n_tasks, "skipped": self.skipped,
                "probes": [{**r.__dict__, "mean_ratio": _finite(r.mean_ratio), "max_ratio": _finite(r.max_ratio),
                            "hacked_tasks": list(r.hacked_tasks)} for r in self._rows],
                "warnings": self.warnings(), "verdict": {"passed": not self.hacked and not self.failed,
                                                         "hacked": self.hacked, "failed": self.failed}}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, allow_nan=False)

    def render(self, console: Any) -> None:
        from agentgym.rewards.lab._tables import render_probes

        render_probes(self, console)

    def text(self, *, width: int = 160) -> str:
        from agentgym.rewards.lab._tables import plain_text

        return plain_text(self.render, width)

    def plot(self, path: str | Path) -> Path | None:
        from agentgym.rewards.lab.figures import plot_probes

        return plot_probes(self, Path(path))


def probe(env_id: str, specs: Sequence[Any], *, n_tasks: int = 10, env_kwargs: Mapping[str, Any] | None = None,
          probes: Mapping[str, Probe] | None = None, probe_file: str | os.PathLike[str] | None = None,
          builtin: bool = True, step: int = 0, total_steps: int | None = None,
          labels: Sequence[str] | None = None) -> ProbeReport:
    """Play the probe suite on the first ``n_tasks`` tasks of ``env_id`` and shape it under each spec.

    Args:
        specs: anything ``build_shaper`` takes.
        n_tasks: how many of the env's tasks (``task_index`` 0, 1, ...) to probe.
        env_kwargs: the env's kwargs (never ``reward``: shaping is offline).
        probes: probes of your own, by name (module docstring).
        probe_file: a JSONL file of probes of your own (module docstring).
        builtin: include the env's own suite.
        step: the training step to shape at (a scheduled spec's clock).
        total_steps: the run's length, for a schedule in fractions of it.
        labels: how the output names each spec (default: the preset name, file, or spec ``name``).
    """
    import gymnasium

    import agentgym  # noqa: F401  (registers the env ids)

    kwargs = {k: v for k, v in (env_kwargs or {}).items() if k != "reward"}
    shapers = [build_shaper(spec) for spec in specs]
    names = list(labels) if labels is not None else [spec_label(s, sh, i) for i, (s, sh) in
                                                     enumerate(zip(specs, shapers))]
    env = gymnasium.make(env_id, **kwargs)
    try:
        kit = type(env.unwrapped).reward_lab_kit()
        suite: dict[str, Probe] = {**(kit.PROBES if builtin else {}), **dict(probes or {})}
        if probe_file is not None:
            suite.update(load_probe_file(probe_file))
        if not suite:
            raise ConfigError("probes", [], "at least one probe (the built-in suite, a function or a JSONL file)")
        played, skipped = _play_suite(env, env_id, kwargs, kit, suite, n_tasks)
    finally:
        env.close()
    contexts = TaskContexts(env_id, kwargs)
    rows, warnings = [], []
    try:
        for name, shaper in zip(names, shapers):
            if shaper.needs_total_steps and total_steps is None:
                raise ConfigError("total_steps", None, f"an int >= 1: {name!r} is scheduled in fractions of the run")
            everything = [r for _, pass_rollout, by_probe in played for r in (pass_rollout, *by_probe.values())]
            breakdowns = shaper.shape_batch([r.episode(**contexts(r)) for r in everything], step, total_steps)
            stats = group_stats((r.task_id, b.total, b.outcome, b) for r, b in zip(everything, breakdowns))
            warnings += [f"{name}: {w}" for w in stats.warnings()]
            totals = {id(r): b.total for r, b in zip(everything, breakdowns)}
            rows += _rows(name, suite, played, totals)
    finally:
        contexts.close()
    return ProbeReport(env_id, names, len(played), rows, warnings, skipped)


def _play_suite(env: Any, env_id: str, kwargs: dict[str, Any], kit: Any, suite: Mapping[str, Probe],
                n_tasks: int) -> tuple[list[tuple[str, Rollout, dict[str, Rollout]]], list[str]]:
    unwrapped = env.unwrapped
    count = min(n_tasks, len(getattr(unwrapped, "tasks", ())) or n_tasks)
    played, skipped = [], []
    for index in range(count):
        env.reset(options={"task_index": index})
        task_id = getattr(unwrapped.task, "id", str(index))
        passing = kit.passing_actions(unwrapped)
        if not passing:
            skipped.append(f"{task_id}: no passing answer to probe from")
            continue
        pass_rollout = _play(env, env_id, kwargs, index, passing, "pass")
        if pass_rollout.outcome < 1.0 - TOLERANCE:
            skipped.append(f"{task_id}: the passing answer fails the env's evaluator (outcome {pass_rollout.outcome:g})")
            continue
        case = ProbeCase(unwrapped, task_id, getattr(unwrapped.task, "text", None), list(passing),
                         pass_rollout.infos[-1].get("answer") if pass_rollout.infos else None)
        by_probe = {}
        for name, fn in suite.items():
            try:
                actions = fn(case)
            except Exception as exc:
                raise ConfigError(f"probe {name!r}", type(exc).__name__, f"a probe that returns actions or None "
                                  f"(it raised on task {task_id}: {exc})") from exc
            if actions:
                by_probe[name] = _play(env, env_id, kwargs, index, list(actions), name)
        played.append((task_id, pass_rollout, by_probe))
    return played, skipped


def _play(env: Any, env_id: str, kwargs: dict[str, Any], index: int, actions: list[str], name: str) -> Rollout:
    """Play ``actions`` from a reset to task ``index`` (until the env ends the episode) as a rollout."""
    prompt, _ = env.reset(options={"task_index": index})
    infos, played = [], []
    for action in actions:
        _, _, terminated, truncated, info = env.step(action)
        infos.append(info)
        played.append(action)
        if terminated or truncated:
            break
    return Rollout.from_record(rollout_record(prompt, played, infos, group=f"task-{index}", sample=0,
                                              env_id=env_id, env_kwargs=kwargs), source=name)


def _rows(spec: str, suite: Mapping[str, Probe], played: list[tuple[str, Rollout, dict[str, Rollout]]],
          totals: dict[int, float]) -> list[ProbeRow]:
    rows = []
    for name in suite:
        ratios, hacked, passes = [], [], 0
        for task_id, pass_rollout, by_probe in played:
            rollout = by_probe.get(name)
            if rollout is None:
                continue
            if rollout.outcome >= 1.0 - TOLERANCE:
                passes += 1
                continue
            probe_total, pass_total = totals[id(rollout)], totals[id(pass_rollout)]
            ratios.append(probe_total / pass_total if pass_total > TOLERANCE else math.nan)
            if probe_total >= pass_total - TOLERANCE:
                hacked.append(task_id)
        defined = [r for r in ratios if not math.isnan(r)]
        rows.append(ProbeRow(name, spec, len(ratios), sum(defined) / len(defined) if defined else math.nan,
                             max(defined) if defined else math.nan, len(hacked), passes, tuple(hacked)))
    return rows


def load_probe_file(path: str | os.PathLike[str]) -> dict[str, Probe]:
    """The probes of a JSONL file (module docstring), by name; a malformed line is a ``DataError``."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            data = f.read(MAX_PROBE_FILE_BYTES + 1)
        lines = data.decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read the probe file {path}: {exc}") from None
    if len(data) > MAX_PROBE_FILE_BYTES:
        raise DataError(f"the probe file {path} is larger than {MAX_PROBE_FILE_BYTES} bytes")
    found: dict[str, list[dict[str, Any]]] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise DataError(f"{path}:{number} is not JSON ({exc})") from None
        unknown = set(row) - {"name", "actions", "task_id", "keep_passing_steps"} if isinstance(row, dict) else set()
        if not isinstance(row, dict) or unknown or not isinstance(row.get("name"), str) or not row["name"] \
                or not isinstance(row.get("actions"), list) or not all(isinstance(a, str) for a in row["actions"]):
            raise DataError(f"{path}:{number} is not a probe: expected {{\"name\": str, \"actions\": [str, ...], "
                            f"\"task_id\"?: str, \"keep_passing_steps\"?: bool}}"
                            + (f" (unknown keys {sorted(unknown)})" if unknown else ""))
        found.setdefault(row["name"], []).append(row)
    return {name: _file_probe(rows) for name, rows in found.items()}


def _file_probe(rows: list[dict[str, Any]]) -> Probe:
    def run(case: ProbeCase) -> list[str] | None:
        row = next((r for r in rows if r.get("task_id") in (None, case.task_id)), None)
        if row is None:
            return None
        actions = [a.replace("{answer}", case.answer or "").replace("{task_text}", case.task_text or "")
                   for a in row["actions"]]
        return (case.passing[:-1] if row.get("keep_passing_steps", True) else []) + actions

    return run


def import_probe(target: str) -> tuple[str, Probe]:
    """``(name, function)`` of a ``module:function`` probe, imported with the current folder on the path."""
    module, _, name = target.partition(":")
    if not module or not name:
        raise ConfigError("probe", target, "module:function, e.g. myprobes:shout")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError("probe", target, f"an importable module:function ({exc})") from None
    if not callable(fn):
        raise ConfigError("probe", target, "a callable probe(case) -> actions | None")
    return name, fn


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value
