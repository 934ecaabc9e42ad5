"""Reward shaping throughput: 1024 prompts x 8 rollouts of finished TravelPlanner trajectories.

Each trajectory is what TravelPlanner-v0 records: 4-14 tool steps (some rejected, some
unreadable), then a submitted plan with the env's evaluation report (computed beforehand, as
the env does), or a give-up, or a truncation. The plans are the real ones of
``shared/data/travelplanner/plan_sets`` (gold, one-change variants, GPT-4 runs), so the schema
term parses real plan texts. Timed: building each ``Episode`` from its steps, shaping the
batch, and turning every breakdown into the ``info["reward"]`` dict. One core, no judge.

The figure is the CPU time of this single-threaded process, best of ``--repeat`` runs
(default 5), so other work on a shared machine does not inflate it; wall time is printed
beside it. The garbage collector runs as usual over what shaping allocates; the prebuilt
trajectories (the input) are frozen out of its scans.

    python benchmarks/bench_rewards.py [--data $AGENTGYM_SHARED_DATA/travelplanner] [--groups 1024] [--group-size 8]
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

    def __init__(self, data: Path, groups: int, group_size: int, seed: int = 0) -> None:
        self.world = World.open(data)
        queries, plans = load_plans(data)
        env = gymnasium.make("TravelPlanner-v0", database=data, tasks="train")
        self.prompts = [env.reset(options={"task_index": i})[0] for i in range(len(queries))]
        rng = random.Random(seed)
        self._reports: dict[tuple[int, str | None], dict] = {}
        self.items = []
        for g in range(groups):
            qi = g % len(queries)
            for _ in range(group_size):
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


def shape_all(shaper, trajectories: Trajectories, step: int) -> tuple[float, float]:
    """(CPU seconds, wall seconds) to shape every trajectory."""
    cpu, wall = time.process_time(), time.perf_counter()
    episodes = [Episode(steps, actions=actions, prompt=trajectories.prompts[qi], task=query, answer=answer,
                        outcome=float(bool(steps[-1].report and steps[-1].report["final_pass"])),
                        evaluate=trajectories.evaluator(query))
                for query, qi, steps, actions, answer in trajectories.items]
    breakdowns = shaper.shape_batch(episodes, training_step=step)
    infos = [b.to_dict() for b in breakdowns]
    elapsed = time.process_time() - cpu, time.perf_counter() - wall
    assert len(infos) == len(trajectories.items)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    shared = os.environ.get("AGENTGYM_SHARED_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data"
    parser.add_argument("--data", default=str(Path(shared) / "travelplanner"))
    parser.add_argument("--groups", type=int, default=1024)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    data = Path(args.data)
    if not (data / "plan_sets").is_dir():
        sys.exit(f"real TravelPlanner data not found at {data}; pass --data")
    t = time.perf_counter()
    trajectories = Trajectories(data, args.groups, args.group_size)
    # The trajectories are the input, alive before shaping starts: keep the collector from
    # re-scanning them, as it would not in a trainer that shapes each episode as it ends.
    gc.collect()
    gc.freeze()
    n = len(trajectories.items)
    print(f"built {n} trajectories ({args.groups} x {args.group_size}) in {time.perf_counter() - t:.1f} s "
          f"(env reports computed once per plan, outside the timing)\n")
    print(f"| reward spec | trajectories | CPU time (best of {args.repeat}) | wall time | per trajectory | goal |")
    print("|---|---|---|---|---|---|")
    for label, spec in SPECS.items():
        shaper = build_shaper(spec)
        cpu, wall = min(shape_all(shaper, trajectories, step=120) for _ in range(args.repeat))
        verdict = "ok" if cpu <= GOAL_SECONDS else "MISSED"
        print(f"| {label} | {n} | {cpu:.3f} s | {wall:.3f} s | {cpu / n * 1e6:.0f} us | "
              f"<= {GOAL_SECONDS:.0f} s ({verdict}) |")


if __name__ == "__main__":
    main()
