"""The reward lab's cost: 10,000 TravelPlanner rollouts (1,250 groups of 8) x 5 specs x 3 schedule steps.

The rollouts are real: ``agentgym run --agent perturbed --samples-per-task 8`` on the embedded
world's validation tasks (tool-use mode), played once and kept in a folder under the temp dir.
Timed, in CPU seconds of this one process (best of ``--repeat``):

* **the lab**: ``compare(rollouts, 5 specs, steps=3)`` end to end: each rollout's episode told its
  task (``TaskContexts``), every spec shaped at every step (a step whose weights match another's is
  shaped once), and the group statistics of all 15 (spec, step) pairs;
* **the raw cost of shaping them**: the baseline, what a script does without the lab: for each of
  the 15 (spec, step), build the 10,000 episodes from their infos and ``shape_batch`` them (with
  Python's garbage collector on, as a script runs; the lab pauses it while it shapes);
* reading the folder (``Rollouts.load``), and the lab's parts each timed alone (episodes, shaping,
  statistics): the shaping is the shaper's own cost, the rest the lab's.

    python benchmarks/bench_reward_lab.py [--groups 1250] [--group-size 8] [--repeat 3] [--folder DIR]
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from pathlib import Path

import agentgym  # noqa: F401  (registers the env ids)
from agentgym.rewards import build_shaper
from agentgym.rewards.lab import Rollouts, TaskContexts, compare, group_stats
from agentgym.rewards.lab.reshape import collector_paused, episodes_of, shape_steps
from agentgym.rewards.lab.signal import SignalRow
from agentgym.runner import RunConfig, run_eval

GOAL_SECONDS = 10.0
TOTAL_STEPS = 300
STEPS = (0, 150, 270)  # the curriculum's three stages: dense, macro, sparse
SPECS = {
    "planner_r1/sparse": "planner_r1/sparse",
    "planner_r1/dense": "planner_r1/dense",
    "planner_r1/curriculum": {"preset": "planner_r1/curriculum", "total_steps": TOTAL_STEPS},
    "dense, official evaluator": {"preset": "planner_r1/dense", "terms": {
        name: {"evaluator": "official"} for name in ("commonsense_micro", "hard_micro", "commonsense_macro",
                                                     "hard_macro", "final_pass")}},
    "process: format, tools, turns, outcome": {"terms": [
        {"kind": "format", "weight": 0.2}, {"kind": "tool_call_validity", "weight": 0.2},
        {"kind": "tool_error_rate", "weight": 0.1, "penalty": True},
        {"kind": "num_turns", "weight": {"kind": "linear", "start": 0, "end": 200, "initial": 0.0, "final": 0.01},
         "penalty": True}, {"kind": "outcome", "weight": 1.0}]},
}


def rollout_folder(folder: Path | None, groups: int, group_size: int) -> Path:
    """The run folder of ``groups`` x ``group_size`` perturbed rollouts, played once and kept."""
    folder = folder or Path(tempfile.gettempdir()) / f"agentgym-bench-lab-{groups}x{group_size}"
    config = RunConfig(env_id="TravelPlanner-v0", env_kwargs={"tasks": "validation"}, selection="seed",
                       agent={"kind": "perturbed"},
                       episodes=groups * group_size, samples_per_task=group_size, concurrency=8, out=folder,
                       fsync=False)
    started = time.perf_counter()
    outcome = run_eval(config)  # resumes: a folder already played costs one read
    if not outcome.complete:
        raise SystemExit(f"the rollouts could not be played: {outcome.failed or outcome.aborted}")
    print(f"rollouts in {folder} ({time.perf_counter() - started:.1f} s to play or find)")
    return folder


def cpu(fn) -> tuple[float, object]:
    if gc.isenabled():
        gc.collect()
    start = time.process_time()
    result = fn()
    return time.process_time() - start, result


def lab(rollouts: Rollouts):
    return compare(rollouts, list(SPECS.values()), steps=list(STEPS), total_steps=TOTAL_STEPS, labels=list(SPECS))


def baseline(rollouts: Rollouts) -> int:
    """Shape every (spec, step) from the infos, as a script without the lab would."""
    contexts = TaskContexts()
    context = [contexts(r) for r in rollouts]  # what the env knows of each task: not part of shaping
    shaped = 0
    for spec in SPECS.values():
        shaper = build_shaper(spec)
        for step in STEPS:
            episodes = [r.episode(**c) for r, c in zip(rollouts, context)]
            shaped += len(shaper.shape_batch(episodes, step, TOTAL_STEPS))
    contexts.close()
    return shaped


def parts(rollouts: Rollouts) -> tuple[float, float, float]:
    """CPU seconds of the lab's three parts, each timed alone: the episodes told their tasks, the
    shaping (steps with equal weights shaped once), and the group statistics of the 15 (spec, step)."""
    contexts = TaskContexts()
    with collector_paused():  # as compare runs them
        episodes_s, episodes = cpu(lambda: episodes_of(list(rollouts), contexts))
        shaping_s, batches = cpu(lambda: [shape_steps(build_shaper(spec), episodes, STEPS, TOTAL_STEPS)
                                          for spec in SPECS.values()])
        names = [rollouts.group_name(i) for i in range(len(rollouts))]
        rows = [[SignalRow(g, b.total, b.outcome, b) for g, b in zip(names, breakdowns)]
                for batch in batches for breakdowns in batch.values()]
        stats_s = cpu(lambda: [group_stats(r) for r in rows])[0]
    contexts.close()
    return episodes_s, shaping_s, stats_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=1250)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--folder", type=Path, default=None)
    args = parser.parse_args()
    folder = rollout_folder(args.folder, args.groups, args.group_size)
    load_s, rollouts = cpu(lambda: Rollouts.load(folder))
    n = len(rollouts)
    print(f"read {n} rollouts in {len(rollouts.groups())} groups: {load_s:.2f} s CPU\n")
    runs = [cpu(lambda: lab(rollouts)) for _ in range(args.repeat)]
    lab_s, comparison = min(runs, key=lambda run: run[0])
    base_s = min(cpu(lambda: baseline(rollouts))[0] for _ in range(args.repeat))
    pairs = len(SPECS) * len(STEPS)
    verdict = "ok" if lab_s <= GOAL_SECONDS else "MISSED"
    print(f"| what (CPU seconds, best of {args.repeat}) | rollouts x (spec, step) | ours: the lab | baseline: raw "
          f"shaping | ratio | goal |")
    print("|---|---|---|---|---|---|")
    print(f"| compare: contexts + shaping + statistics | {n} x {pairs} | {lab_s:.2f} s | {base_s:.2f} s | "
          f"{base_s / lab_s:.2f}x | <= {GOAL_SECONDS:.0f} s ({verdict}) |")
    episodes_s, shaping_s, stats_s = parts(rollouts)
    for what, seconds in (("its episodes, told their tasks (timed alone)", episodes_s),
                          ("its shaping: 7 distinct (spec, stage) x 10,000 (timed alone)", shaping_s),
                          (f"its group statistics of the {pairs} (spec, step) (timed alone)", stats_s)):
        print(f"| {what} | {n} x {pairs} | {seconds:.2f} s | - | - | - |")
    print(f"\nper rollout and (spec, step): lab {lab_s / n / pairs * 1e6:.0f} us, raw shaping "
          f"{base_s / n / pairs * 1e6:.0f} us; {len(comparison.results)} results (unscheduled specs shaped once)")
    for result in comparison.results:
        s = result.stats
        print(f"  {result.at:<45} zero_var {s.zero_var:6.1%}  within_std {s.within_std:6.3f}  "
              f"spearman {s.spearman:6.3f}  inversions {s.inversions}/{s.pairs}")


if __name__ == "__main__":
    main()
