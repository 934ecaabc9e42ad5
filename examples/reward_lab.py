"""The reward lab on the embedded worlds: the figures and numbers of docs/reward-lab.md.

Plays groups of perturbed rollouts (``agentgym run --agent perturbed --samples-per-task``) on the
embedded TravelPlanner and SearchQA worlds, compares the presets over them, and probes them::

    python examples/reward_lab.py                          # about a minute of CPU; writes docs/img/reward-lab-*.png
    python examples/reward_lab.py --tasks 4 --samples 4 --out /tmp/lab   # a quick look

The trajectories are scripted (each task's passing answer, with seeded failure edits and invalid
calls), not sampled from a policy: the figures show what each spec can tell apart, not what a model
will write.
"""

from __future__ import annotations

import argparse
import json
import socket
from pathlib import Path

import agentgym  # noqa: F401  (registers the env ids)
from agentgym.rewards.lab import Rollouts, compare, probe
from agentgym.runner import RunConfig, run_eval

OFFICIAL_DENSE = {"preset": "planner_r1/dense", "terms": {name: {"evaluator": "official"} for name in (
    "commonsense_micro", "hard_micro", "commonsense_macro", "hard_macro", "final_pass")}}
SUB_EM = {"name": "format + sub_em", "terms": [{"kind": "format", "weight": 0.2, "balanced_tags": ["think", "search",
                                                                                                   "answer"]},
                                               {"kind": "sub_em", "weight": 0.8, "gate": {"term": "format"}}]}
TOTAL_STEPS = 300


def groups(out: Path, env_id: str, count: int, samples: int, pass_rate: float = 0.3, **env_kwargs) -> Rollouts:
    """``count`` tasks x ``samples`` perturbed rollouts in the run folder ``out`` (played once, then read)."""
    config = RunConfig(env_id=env_id, env_kwargs=env_kwargs, episodes=count * samples, samples_per_task=samples,
                       agent={"kind": "perturbed", "pass_rate": pass_rate}, out=out, fsync=False)
    outcome = run_eval(config)
    assert outcome.complete, outcome.failed
    return Rollouts.load(out)


def dead_judge() -> dict:
    with socket.socket() as s:  # a port nobody listens on: the judge is down
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return {"preset": "prs/long", "terms": {"llm_judge": {"base_url": f"http://127.0.0.1:{port}/v1", "model": "judge",
                                                          "max_retries": 0}}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=60)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--out", type=Path, default=Path("runs/reward-lab"))
    parser.add_argument("--figures", type=Path, default=Path("docs/img"))
    args = parser.parse_args()
    summary = {}

    travel = groups(args.out / "travelplanner", "TravelPlanner-v0", args.tasks, args.samples, tasks="validation")
    presets = compare(travel, ["planner_r1/sparse", "planner_r1/dense", "planner_r1/curriculum", OFFICIAL_DENSE],
                      steps=[0, 150, 270], total_steps=TOTAL_STEPS, labels=["planner_r1/sparse", "planner_r1/dense",
                                                                             "planner_r1/curriculum", "dense, official"])
    print(presets.text())
    presets.plot(args.figures / "reward-lab-travelplanner.png")
    summary["travelplanner"] = presets.to_dict()

    hard = groups(args.out / "travelplanner-12", "TravelPlanner-v0", args.tasks, args.samples, pass_rate=0.12,
                  tasks="validation")
    low = compare(hard, ["planner_r1/sparse", "planner_r1/dense"])
    print(low.text())
    summary["travelplanner_pass_rate_0.12"] = low.to_dict()

    qa = groups(args.out / "searchqa", "SearchQA-v0", args.tasks, args.samples)
    short = compare(qa, ["prs/short", SUB_EM, {"name": "exact match", "terms": [{"kind": "exact_match", "weight": 1}]}])
    print(short.text())
    short.plot(args.figures / "reward-lab-searchqa.png")
    summary["searchqa"] = short.to_dict()

    longform = groups(args.out / "longform", "SearchQA-LongForm-v0", max(2, args.tasks // 4), args.samples)
    judged = compare(longform, [dead_judge()], labels=["prs/long, judge down"])
    print(judged.text())
    summary["longform_dead_judge"] = judged.to_dict()

    for env_id, specs, labels, name in (
            ("TravelPlanner-v0", ["planner_r1/dense", OFFICIAL_DENSE], ["dense, strict", "dense, official"],
             "travelplanner"),
            ("SearchQA-v0", ["prs/short", SUB_EM], ["prs/short (LA-BLEU)", "format + sub_em"], "searchqa")):
        report = probe(env_id, specs, n_tasks=min(args.tasks, 20), labels=labels)
        print(report.text())
        report.plot(args.figures / f"reward-lab-probes-{name}.png")
        summary[f"probes_{name}"] = report.to_dict()
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(f"figures in {args.figures}, numbers in {args.out / 'summary.json'}")


if __name__ == "__main__":
    main()
