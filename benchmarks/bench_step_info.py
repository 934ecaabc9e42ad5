"""Reading a step's record in ShapeReward: the env's own StepInfo against parsing its info dict back.

Plays TravelPlanner-v0's gold plans (embedded world, or ``--data``'s queries and database)
and, right after each ``env.step``, times what ShapeReward does to get the step's ``StepInfo``:
ours asks the env for the record it made the dict from (``step_info_of``); the baseline (what
0.1 did) validates the dict back into a ``StepInfo``. Also printed: a whole ``env.step`` and the
``to_info()`` dump every step pays at the Gymnasium boundary, for scale.

    python benchmarks/bench_step_info.py [--episodes 40] [--repeat 20]
"""

from __future__ import annotations

import argparse
import statistics
import time

from _common import row

from agentgym.envs.travelplanner.env import TravelPlannerEnv
from agentgym.envs.travelplanner.scripted import gold_plan_actions
from agentgym.rewards.episode import step_info


def _each(fn, repeat: int) -> float:
    """Median seconds of one call of ``fn`` over ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def measure(episodes: int, repeat: int) -> dict[str, list[float]]:
    env = TravelPlannerEnv()
    found: dict[str, list[float]] = {"ours": [], "baseline": [], "step": [], "dump": []}
    for index in range(min(episodes, len(env.queries))):
        env.reset(options={"query_index": index})
        for action in gold_plan_actions(env.query):
            t = time.perf_counter()
            _, _, terminated, truncated, info = env.step(action)
            found["step"].append(time.perf_counter() - t)
            record = env.step_info_of(info)
            assert record is not None and step_info(info) == record  # the same record either way
            found["ours"].append(_each(lambda: env.step_info_of(info), repeat))
            found["baseline"].append(_each(lambda: step_info(info), repeat))
            found["dump"].append(_each(record.to_info, repeat))
            if terminated or truncated:
                break
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    found = measure(args.episodes, args.repeat)
    us = {k: statistics.median(v) * 1e6 for k, v in found.items()}
    print(f"{len(found['step'])} steps of {args.episodes} TravelPlanner episodes (median per step)\n")
    print("| per step | ours | baseline | ratio | note |\n|---|---|---|---|---|")
    print(row("StepInfo for ShapeReward", us["ours"], us["baseline"], "us",
              "ours: the env's record; baseline: the info dict validated back"))
    print(f"\nfor scale: a whole env.step {us['step']:,.1f} us, of which the to_info() dump {us['dump']:,.1f} us")


if __name__ == "__main__":
    main()
