"""Reward shaping throughput on finished TravelPlanner trajectories, beside a hand-written reward.

Each trajectory is what TravelPlanner-v0 records: 4-14 tool steps (some rejected, some
unreadable), then a submitted plan with the env's evaluation report (computed beforehand, as
the env does), or a give-up, or a truncation. The plans are the real ones of
``shared/data/travelplanner/plan_sets`` (gold, one-change variants, GPT-4 runs), so the schema
term parses real plan texts. Timed for agentgym: building each ``Episode`` from its steps,
shaping the batch in one ``shape_batch`` call, and turning every breakdown into the
``info["reward"]`` dict. One core, no judge. What the env knows of a task (its prompt, and the
``evaluate`` callable for another evaluator) is made once per task, as a batch loader would.

Two tables:

* every bundled spec (and one with the 13 constraint terms) on 1024 x 8 trajectories;
* ``planner_r1/dense`` at each batch size (``--sizes``, default 1k, 8k, 32k and 100k
  trajectories), beside ``planner_r1/dense`` written by hand: a function a user would write,
  reading the same report dict and parsing the same plan text (``json.loads``) for the schema
  gate. It is checked to give the same total on every trajectory. The "report only" column is
  the same function without the plan parse (it reads only the report dict, so it differs where
  the schema fails): the floor of reading the figures at all. The "collector paused" column is
  agentgym again with Python's garbage collector off: the difference is what its full
  collections cost, re-scanning the episodes and breakdowns the batch holds.

The figure is the CPU time of this single-threaded process, best of ``--repeat`` runs
(default 5), so other work on a shared machine does not inflate it; wall time is printed
beside it. The garbage collector runs as usual over what shaping allocates; the prebuilt
trajectories (the input) are frozen out of its scans. Every batch size is a prefix of one
input of the largest size, so each is measured over the same heap.

    python benchmarks/bench_rewards.py [--data $AGENTGYM_SHARED_DATA/travelplanner] [--sizes 1024,8192,32768,100000]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import time
from pathlib import Path

import gymnasium

import agentgym  # noqa: F401  (registers the env ids)
from agentgym import ActionError, ErrorCode, StepInfo, ToolCall, ToolResult
from agentgym.envs.travelplanner.evaluation import COMMONSENSE, HARD, evaluate
from agentgym.envs.travelplanner.tasks import TravelTask
from agentgym.envs.travelplanner.world import World
from agentgym.rewards import Episode, build_shaper

GOAL_SECONDS = 1.0
ONE_TERM = [(kind, {}) for kind in ("final_pass", "commonsense_micro", "schema", "format", "tool_call_validity")] + \
    [("constraint", {"constraint": "valid_cost"})]
GOAL_US = 20.0
SPEC_BATCH = 1024 * 8
SPECS = {
    "planner_r1/sparse": "planner_r1/sparse",
    "planner_r1/dense": "planner_r1/dense",
    "planner_r1/curriculum": {"preset": "planner_r1/curriculum", "total_steps": 300},
    "dense + format/tool/turn terms + 13 constraints": {"terms": [
        *({"kind": k, "weight": 1.0} for k in ("schema", "commonsense_micro", "hard_micro", "commonsense_macro",
                                               "hard_macro", "final_pass")),
        {"kind": "format", "weight": 0.1, "cap": 0.1},
        {"kind": "tool_call_validity", "weight": 0.1, "gate": {"term": "outcome"}},
        {"kind": "tool_error_rate", "weight": 0.1, "penalty": True},
        {"kind": "num_turns", "weight": 0.01, "penalty": True},
        *({"kind": "constraint", "constraint": c, "weight": 0.0} for c in COMMONSENSE + HARD),
    ]},
}


def load_plans(data: Path) -> tuple[list[TravelTask], dict[str, list[str]]]:
    """The train queries and, per query text, every real plan text for it."""
    queries = [TravelTask.from_row(json.loads(line), id=f"train-{i}")
               for i, line in enumerate((data / "queries" / "train.jsonl").read_text().splitlines())]
    plans: dict[str, list[str]] = {q.text: [] for q in queries}
    for path in sorted((data / "plan_sets").glob("*train*.jsonl")):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            if row["query"]["query"] in plans and row["plan"] is not None:
                plans[row["query"]["query"]].append(json.dumps(row["plan"]))
    return queries, plans


def tool_steps(rng: random.Random) -> tuple[list[StepInfo], list[str]]:
    steps, actions = [], []
    for turn in range(1, rng.randint(4, 14) + 1):
        roll = rng.random()
        if roll < 0.1:
            steps.append(StepInfo(turn=turn, action="invalid", error=ActionError(
                code=ErrorCode.UNPARSEABLE_ACTION, message="Could not find an action in your reply.")))
            actions.append("I should look for flights")
        else:
            error = ErrorCode.INVALID_ARGUMENT if roll < 0.2 else None
            steps.append(StepInfo(turn=turn, action="tool", tool_call=ToolCall(
                name="RestaurantSearch", arguments={"city": "Dallas"}),
                tool_result=ToolResult(content="Name  Average Cost ...", n_rows=20, error=error)))
            actions.append("RestaurantSearch[Dallas]")
    return steps, actions


class Trajectories:
    """Finished trajectories; the env's reports are computed once per (query, plan) here, as the env would."""

    def __init__(self, data: Path, n: int, group_size: int, seed: int = 0) -> None:
        self.world = World.open(data)
        queries, plans = load_plans(data)
        env = gymnasium.make("TravelPlanner-v0", database=data, tasks="train")
        self.prompts = [env.reset(options={"task_index": i})[0] for i in range(len(queries))]
        self.evaluators = [self.evaluator(q) for q in queries]
        rng = random.Random(seed)
        self._reports: dict[tuple[int, str | None], dict] = {}
        self.items = []
        for i in range(n):  # groups of group_size rollouts of one query
            qi = i // group_size % len(queries)
            self.items.append(self._trajectory(qi, queries[qi], plans[queries[qi].text], rng))

    def _trajectory(self, qi: int, query: TravelTask, plans: list[str], rng: random.Random):
        steps, actions = tool_steps(rng)
        roll, turn = rng.random(), len(steps) + 1
        if roll < 0.05:  # truncated: no final report
            return query, qi, steps, actions, None
        plan = None if roll < 0.1 else rng.choice(plans)
        report = self._report(qi, query, plan)
        kind = "answer" if plan is not None else "give_up"
        steps.append(StepInfo(turn=turn, action=kind, terminated_reason=kind, report=report))
        # a fresh string per rollout, as each rollout's text is its own
        text = None if plan is None else "".join([plan[:1], plan[1:]])
        actions.append(f"Finish[{text}]" if text is not None else "GiveUp[stuck]")
        return query, qi, steps, actions, text

    def _report(self, qi: int, query: TravelTask, plan: str | None) -> dict:
        key = (qi, plan)
        if key not in self._reports:
            self._reports[key] = evaluate(plan, query, self.world, evaluator="strict").model_dump(mode="json")
        return self._reports[key]

    def evaluator(self, query: TravelTask):
        return lambda plan, evaluation: evaluate(plan, query, self.world, evaluator=evaluation).model_dump(mode="json")


def shape_all(shaper, trajectories: Trajectories, items: list, step: int) -> tuple[float, float]:
    """(CPU seconds, wall seconds) to shape ``items`` in one batch and dump every breakdown."""
    cpu, wall = time.process_time(), time.perf_counter()
    episodes = [Episode(steps, actions=actions, prompt=trajectories.prompts[qi], task=query, answer=answer,
                        outcome=float(bool(steps[-1].report and steps[-1].report["final_pass"])),
                        evaluate=trajectories.evaluators[qi])
                for query, qi, steps, actions, answer in items]
    breakdowns = shaper.shape_batch(episodes, training_step=step)
    infos = [b.to_dict() for b in breakdowns]
    elapsed = time.process_time() - cpu, time.perf_counter() - wall
    assert len(infos) == len(items)
    return elapsed


# -- the baseline: planner_r1/dense written by hand --------------------------------------------

_DAY_KEYS = frozenset(("days", "current_city", "transportation", "breakfast", "attraction", "lunch", "dinner",
                       "accommodation"))
_FIGURES = ("commonsense_micro", "hard_micro", "commonsense_pass", "hard_pass", "final_pass")


def schema_ok(plan, days: int) -> bool:
    """The official day-dict schema: ``days`` day dicts (trailing {} allowed), days 1..D, non-empty strings."""
    if not isinstance(plan, list):
        return False
    while plan and plan[-1] == {}:
        plan = plan[:-1]
    if len(plan) != days:
        return False
    for i, day in enumerate(plan, 1):
        if not isinstance(day, dict) or day.keys() != _DAY_KEYS or type(day["days"]) is not int or day["days"] != i:
            return False
        for key, value in day.items():
            if key != "days" and (not isinstance(value, str) or not value.strip()):
                return False
    return True


def dense_by_hand(steps, answer: str | None, days: int, parse: bool = True) -> dict:
    """planner_r1/dense's total and raw figures, from the final report dict and the plan text."""
    report = steps[-1].report if steps else None
    if parse:
        try:
            schema = answer is not None and schema_ok(json.loads(answer), days)
        except ValueError:
            schema = False
    else:
        schema = report is not None and report["delivered"]
    if not schema or report is None:
        return {"total": 0.0, "schema": float(schema)}
    figures = {name: float(report[name]) for name in _FIGURES}
    return {"total": sum(figures.values()), "schema": 1.0, **figures}


def by_hand(items: list, parse: bool = True) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    out = [dense_by_hand(steps, answer, query.days, parse) for query, _, steps, _, answer in items]
    elapsed = time.process_time() - cpu, time.perf_counter() - wall
    assert len(out) == len(items)
    return elapsed


def check_same_totals(trajectories: Trajectories, items: list) -> None:
    """The baseline must compute what the shaper computes, or the comparison means nothing."""
    shaper = build_shaper("planner_r1/dense")
    for query, qi, steps, actions, answer in items:
        ours = shaper.shape(Episode(steps, actions=actions, prompt=trajectories.prompts[qi], task=query,
                                    answer=answer), training_step=0).total
        theirs = dense_by_hand(steps, answer, query.days)["total"]
        assert abs(ours - theirs) < 1e-12, (ours, theirs, answer)


def best(fn, repeat: int) -> tuple[float, float]:
    return min((fn() for _ in range(repeat)), key=lambda t: t[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    shared = os.environ.get("AGENTGYM_SHARED_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data"
    parser.add_argument("--data", default=str(Path(shared) / "travelplanner"))
    parser.add_argument("--sizes", default="1024,8192,32768,100000",
                        help="batch sizes (trajectories) for the planner_r1/dense table")
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    data = Path(args.data)
    if not (data / "plan_sets").is_dir():
        sys.exit(f"real TravelPlanner data not found at {data}; pass --data")
    sizes = [int(n) for n in args.sizes.split(",")]
    t = time.perf_counter()
    trajectories = Trajectories(data, max(*sizes, SPEC_BATCH), args.group_size)
    check_same_totals(trajectories, trajectories.items[:SPEC_BATCH])
    # The trajectories are the input, alive before shaping starts: keep the collector from
    # re-scanning them, as it would not in a trainer that shapes each episode as it ends.
    gc.collect()
    gc.freeze()
    print(f"built {len(trajectories.items)} trajectories (groups of {args.group_size}) in "
          f"{time.perf_counter() - t:.1f} s (env reports computed once per plan, outside the timing); "
          f"the hand-written dense reward gives the shaper's total on the first {SPEC_BATCH}\n")

    items = trajectories.items[:SPEC_BATCH]
    print(f"| reward spec | trajectories | CPU time (best of {args.repeat}) | wall time | per trajectory | goal |")
    print("|---|---|---|---|---|---|")
    for label, spec in SPECS.items():
        shaper = build_shaper(spec)
        cpu, wall = best(lambda: shape_all(shaper, trajectories, items, step=120), args.repeat)
        verdict = "ok" if cpu <= GOAL_SECONDS else "MISSED"
        print(f"| {label} | {len(items)} | {cpu:.3f} s | {wall:.3f} s | {cpu / len(items) * 1e6:.1f} us | "
              f"<= {GOAL_SECONDS:.0f} s ({verdict}) |")

    print(f"\none term alone on the same {len(items)} trajectories (CPU time, best of {args.repeat}): what a term costs,"
          " with the Episode, the guards and the info dict around it\n")
    print("| term | per trajectory |")
    print("|---|---|")
    for kind, fields in ONE_TERM:
        shaper = build_shaper({"terms": [{"kind": kind, "weight": 1.0, **fields}]})
        cpu = best(lambda: shape_all(shaper, trajectories, items, step=120), args.repeat)[0]
        print(f"| `{kind}`{' (' + fields['constraint'] + ')' if fields else ''} | {cpu / len(items) * 1e6:.1f} us |")

    print(f"\nplanner_r1/dense per trajectory by batch size (CPU time, best of {args.repeat}); "
          f"goal: <= {GOAL_US:.0f} us at every size, flat\n")
    print("| trajectories | agentgym | hand-written | ratio | hand-written, report only | vs the first size "
          "| agentgym, collector paused | goal |")
    print("|---|---|---|---|---|---|---|---|")
    shaper, first = build_shaper("planner_r1/dense"), None
    for n in sizes:
        items = trajectories.items[:n]
        ours = best(lambda: shape_all(shaper, trajectories, items, step=120), args.repeat)[0] / n * 1e6
        theirs = best(lambda: by_hand(items), args.repeat)[0] / n * 1e6
        floor = best(lambda: by_hand(items, parse=False), args.repeat)[0] / n * 1e6
        gc.disable()  # where the rest goes: full collections re-scanning what the batch holds
        paused = best(lambda: shape_all(shaper, trajectories, items, step=120), args.repeat)[0] / n * 1e6
        gc.enable()
        first = first or ours
        verdict = "ok" if ours <= GOAL_US else "MISSED"
        print(f"| {n:,} | {ours:.1f} us | {theirs:.1f} us | {ours / theirs:.2f}x slower | {floor:.1f} us | "
              f"{ours / first:.2f}x | {paused:.1f} us | <= {GOAL_US:.0f} us ({verdict}) |")


if __name__ == "__main__":
    main()
