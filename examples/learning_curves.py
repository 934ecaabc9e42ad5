"""Learning curves of a tiny model on agentgym envs through TRL's GRPOTrainer, on CPU, with controls.

    python examples/learning_curves.py                        # both envs, seeds 0 1 2: docs/learning-*.png
    python examples/learning_curves.py --env travelplanner --seeds 0 --steps 10 --out /tmp/curves

For each env and seed it trains the env's recipe (a random 2-layer Qwen2, a word-level tokenizer
trained on the env's text, sampling constrained to well-formed actions) as is and as the controls
that must learn less: rewards shuffled across each batch, and (TravelPlanner) observation tokens
left in the loss. It prints each arm's reward and behaviour at the start and the end (means of
the first and last 3 steps), the seed-to-seed spread and the CPU time, and draws the curves (mean
over seeds, each seed thin). Needs ``agentgym-rl[trl,plot]``.

* ``searchqa``: ``trl_searchqa``, 20 steps; the behaviour is searching, then answering;
* ``travelplanner``: ``trl_travelplanner``, 12 steps; the behaviour is the share of tool calls the
  env could carry out (Planner-R1's dense terms plus ``tool_call_validity``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def searched_then_answered(entry: dict) -> float:
    """Share of the step's episodes that searched at least once and then answered."""
    return sum(share for actions, share in entry["actions"].items()
               if actions.endswith("answer") and "tool" in actions.split(">"))


def valid_calls(entry: dict) -> float:
    """Mean share of an episode's tool calls the env could carry out."""
    return entry["terms"]["tool_call_validity"]


def reward(entry: dict) -> float:
    return entry["reward"]


ENVS: dict[str, dict] = {
    "searchqa": {"recipe": "trl_searchqa", "steps": 20, "arms": ("real", "shuffled"), "title": "SearchQA-v0",
                 "metrics": {"reward": reward, "search_then_answer": searched_then_answered,
                             "exact_match": lambda e: e["terms"]["exact_match"]},
                 "plots": (("mean shaped reward", reward),
                           ("share that searched, then answered", searched_then_answered))},
    "travelplanner": {"recipe": "trl_travelplanner", "steps": 12, "arms": ("real", "shuffled", "observations"),
                      "title": "TravelPlanner-v0 (ReAct, 4 actions)",
                      "metrics": {"reward": reward, "valid_calls": valid_calls},
                      "plots": (("mean shaped reward", reward),
                                ("share of tool calls the env could run", valid_calls))},
}
LABELS = {"real": "GRPO", "shuffled": "control: rewards shuffled", "observations": "control: observations trained on"}


def window(values: list[float], first: bool, size: int = 3) -> float:
    part = values[:size] if first else values[-size:]
    return sum(part) / len(part)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", choices=[*ENVS, "all"], default="all")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=None, help="GRPO steps per run (default: the env's)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "docs")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (1 is fastest on a busy machine)")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in ENVS if args.env == "all" else (args.env,):
        curves(name, ENVS[name], args.seeds, args.steps or ENVS[name]["steps"], args.out)


def curves(name: str, setup: dict, seeds: list[int], steps: int, out: Path) -> None:
    from agentgym.integrations.trl.controls import run_arm
    from agentgym.integrations.trl.train import load_recipe

    recipe = load_recipe(setup["recipe"])
    runs: dict[str, list[list[dict]]] = {arm: [] for arm in setup["arms"]}
    started = time.process_time()
    with tempfile.TemporaryDirectory() as scratch:
        for seed in seeds:
            for arm in runs:
                runs[arm].append(run_arm(recipe, arm, seed=seed, steps=steps, output_dir=scratch))
    summary = summarize(runs, setup["metrics"])
    summary["cpu_seconds"] = round(time.process_time() - started, 1)
    summary["seeds"], summary["steps"] = seeds, steps
    (out / f"learning-{name}.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    plot(runs, setup, out / f"learning-{name}.png")


def summarize(runs: dict[str, list[list[dict]]], metrics: dict[str, Callable[[dict], float]]) -> dict:
    out: dict = {}
    for arm, histories in runs.items():
        for name, metric in metrics.items():
            starts = [window([metric(e) for e in h], True) for h in histories]
            ends = [window([metric(e) for e in h], False) for h in histories]
            out[f"{arm}/{name}"] = {"start": [round(v, 3) for v in starts], "end": [round(v, 3) for v in ends],
                                    "gain": [round(e - s, 3) for s, e in zip(starts, ends)],
                                    "gain_spread": round(statistics.pstdev([e - s for s, e in zip(starts, ends)]), 3)}
    return out


def plot(runs: dict[str, list[list[dict]]], setup: dict, path: Path) -> None:
    from agentgym._plotting import COLORS, pyplot

    plt = pyplot()
    if plt is None:
        print("matplotlib is missing: no figure")
        return
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for axis, (title, metric) in zip(axes, setup["plots"]):
        for color, (arm, histories) in zip(COLORS, runs.items()):
            curves = [[metric(e) for e in h] for h in histories]
            for curve in curves:
                axis.plot(range(len(curve)), curve, color=color, alpha=0.25, linewidth=0.8)
            mean = [sum(v) / len(v) for v in zip(*curves)]
            axis.plot(range(len(mean)), mean, color=color, linewidth=2, label=LABELS[arm])
        axis.set_title(title)
        axis.set_xlabel("GRPO step (32 episodes each)")
        axis.grid(alpha=0.3)
    axes[0].legend(loc="lower right", fontsize=8)
    seeds = len(next(iter(runs.values())))
    figure.suptitle(f"{setup['title']}, tiny Qwen2 (2 layers, hidden 64) on CPU via TRL; {seeds} seeds")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
