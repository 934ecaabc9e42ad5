"""Play one TravelPlanner-v0 episode with a scripted agent and print the transcript.

The agent replays the query's reference plan through the env's tools, then submits it; the
env checks the plan against the 13 TravelPlanner constraints. Runs offline on the embedded
synthetic world unless AGENTGYM_TRAVELPLANNER_DB names a world folder.

    python examples/play_travelplanner.py [--seed 0] [--format react|json] [--mode tool-use|sole-planning]
"""

from __future__ import annotations

import argparse
import textwrap

import gymnasium

import agentgym  # noqa: F401  (registers the env ids)
from agentgym.envs.travelplanner import gold_plan_actions


def shorten(text: str, lines: int = 6) -> str:
    rows = text.splitlines()
    more = f"\n    ... ({len(rows) - lines} more lines)" if len(rows) > lines else ""
    return textwrap.indent("\n".join(rows[:lines]), "    ") + more


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--format", default="react", choices=["react", "json"])
    parser.add_argument("--mode", default="tool-use", choices=["tool-use", "sole-planning"])
    args = parser.parse_args()

    env = gymnasium.make("TravelPlanner-v0", action_format=args.format, mode=args.mode)
    observation, info = env.reset(seed=args.seed)
    query = env.unwrapped.task
    print(f"== {query.id} ({query.level}, {query.days} days, {query.people_number} people, budget ${query.budget})")
    print(f"   {query.text}\n")
    total = 0.0
    for action in gold_plan_actions(query, args.format, tools=args.mode == "tool-use"):
        observation, reward, terminated, truncated, info = env.step(action)
        total += reward
        print(f"[turn {info['turn']}] {action if len(action) < 120 else action[:117] + '...'}")
        print(shorten(observation))
        if terminated or truncated:
            break
    report = info["report"] or {}
    print("\n== result")
    for group in ("commonsense", "hard"):
        for name, verdict in (report.get(group) or {}).items():
            mark = {True: "pass", False: "FAIL", None: "n/a"}[verdict["passed"]]
            print(f"   {group:<11} {name:<38} {mark}")
    print(f"   final pass: {report.get('final_pass')}   return: {total}")


if __name__ == "__main__":
    main()
