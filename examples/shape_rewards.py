"""Shape TravelPlanner-v0 episodes with a YAML reward spec and print each term's value.

Plays two episodes with a scripted agent on the embedded synthetic world: one submits the
query's reference plan, the other the same plan with a restaurant repeated, so the breakdowns
show which terms the broken constraint takes down.

    python examples/shape_rewards.py [--reward examples/shape_rewards.yaml] [--step 50]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import gymnasium

import agentgym  # noqa: F401  (registers the env ids)
from agentgym.envs.travelplanner import gold_plan_actions


def play(env, step: int, break_plan: bool) -> dict:
    env.reset(seed=0, options={"training_step": step})
    actions = gold_plan_actions(env.unwrapped.query)
    if break_plan:
        plan = json.loads(actions[-1][len("Finish["):-1])
        day = next(d for d in plan if "-" not in (d["lunch"], d["dinner"]))
        day["lunch"] = day["dinner"]  # the same restaurant twice in one day
        actions[-1] = f"Finish[{json.dumps(plan)}]"
    for action in actions:
        *_, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return info["reward"]
    raise RuntimeError("the scripted episode did not end")


def show(title: str, breakdown: dict) -> None:
    print(f"== {title}: total {breakdown['total']:.3f}, outcome {breakdown['outcome']}")
    for name, term in breakdown["terms"].items():
        raw = "-" if term["raw"] is None else f"{term['raw']:.3f}"
        note = f"  ({term['reason']})" if term["reason"] else ""
        print(f"   {name:<22} raw {raw:>6}  x {term['weight']:.3f}  = {term['contribution']:+.3f}{note}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reward", default=str(Path(__file__).with_name("shape_rewards.yaml")),
                        help="a spec file, YAML text or a preset name such as planner_r1/dense")
    parser.add_argument("--step", type=int, default=50, help="the training step to shape at")
    args = parser.parse_args()
    env = gymnasium.make("TravelPlanner-v0", reward=args.reward)
    show("reference plan", play(env, args.step, break_plan=False))
    show("plan with a repeated restaurant", play(env, args.step, break_plan=True))


if __name__ == "__main__":
    main()
