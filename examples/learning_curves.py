"""Learning curves of a tiny model on agentgym envs through TRL's GRPOTrainer, on CPU, with controls.

    python examples/learning_curves.py                        # both envs, seeds 0 1 2: docs/learning-*.png
    python examples/learning_curves.py --env travelplanner --seeds 0 --steps 10 --out /tmp/curves
    python examples/learning_curves.py --replot               # redraw docs/learning-*.png from their JSON

For each env and seed it trains the env's recipe (a random 2-layer Qwen2, a word-level tokenizer
trained on the env's text, sampling constrained to well-formed actions) as is and as the controls
that must learn less: rewards shuffled across each batch, and (TravelPlanner) observation tokens
left in the loss. It prints each arm's reward and behaviour at the start and the end (means of
the first and last 3 steps), the seed-to-seed spread and the CPU time, and draws the curves (mean
over seeds, each seed thin). The JSON keeps every step of every run, so ``--replot`` redraws the
figures without training. Needs ``agentgym-rl[trl,plot]``.

* ``searchqa``: ``trl_searchqa``, 20 steps; the behaviour is searching, then answering;
* ``travelplanner``: ``trl_travelplanner``, 12 steps; the reward is the share of tool calls the env
  could carry out (Planner-R1's dense terms plus ``tool_call_validity``; the plan terms stay 0 for a
  model this small), and the behaviour drawn beside it is the share of episodes whose every call ran.
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


def every_call_ran(entry: dict) -> float:
    """Share of the step's episodes whose every action was a tool call the env carried out."""
    return sum(share for actions, share in entry["actions"].items() if set(actions.split(">")) == {"tool"})


def reward(entry: dict) -> float:
    return entry["reward"]


ENVS: dict[str, dict] = {
    "searchqa": {"recipe": "trl_searchqa", "steps": 20, "arms": ("real", "shuffled"), "title": "SearchQA-v0",
                 "metrics": {"reward": reward, "search_then_answer": searched_then_answered,
                             "exact_match": lambda e: e["terms"]["exact_match"]},
                 "plots": (("mean shaped reward", "reward"),
                           ("share that searched, then answered", "search_then_answer"))},
    "travelplanner": {"recipe": "trl_travelplanner", "steps": 12, "arms": ("real", "shuffled", "observations"),
                      "title": "TravelPlanner-v0 (ReAct, 4 actions)",
                      "metrics": {"reward": reward, "valid_calls": valid_calls, "every_call_ran": every_call_ran},
                      # The reward is the valid-call share here: the second panel shows another behaviour.
                      "plots": (("mean shaped reward (= share of tool calls that ran)", "reward"),
                                ("share of episodes whose every call ran", "every_call_ran"))},
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
    parser.add_argument("--replot", action="store_true", help="redraw the figures from the JSON in --out, no training")
    args = parser.parse_args()
    names = ENVS if args.env == "all" else (args.env,)
    if args.replot:
        for name in names:
            plot(json.loads((args.out / f"learning-{name}.json").read_text()), ENVS[name],
                 args.out / f"learning-{name}.png")
        return

    import torch

    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in names:
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
    print(json.dumps(summary, indent=2))
    # Every step of every run, so the figure can be redrawn (--replot) without training again.
    summary["curves"] = {arm: {metric: [[round(fn(e), 4) for e in h] for h in histories]
                               for metric, fn in setup["metrics"].items()} for arm, histories in runs.items()}
    (out / f"learning-{name}.json").write_text(json.dumps(summary, indent=2))
    plot(summary, setup, out / f"learning-{name}.png")


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


def plot(summary: dict, setup: dict, path: Path) -> None:
    """The curves of ``summary["curves"]`` (arm -> metric -> one list per seed): the mean over seeds
    thick, each seed thin; whole-number steps; the legend below the panels, clear of every curve."""
    from agentgym._plotting import COLORS, pyplot

    plt = pyplot()
    if plt is None:
        print("matplotlib is missing: no figure")
        return
    from matplotlib.ticker import MaxNLocator

    runs = summary["curves"]
    figure, axes = plt.subplots(1, len(setup["plots"]), figsize=(10, 4.0))
    for axis, (title, metric) in zip(axes, setup["plots"]):
        for color, (arm, metrics) in zip(COLORS, runs.items()):
            for curve in metrics[metric]:
                axis.plot(range(len(curve)), curve, color=color, alpha=0.25, linewidth=0.8)
            mean = [sum(v) / len(v) for v in zip(*metrics[metric])]
            axis.plot(range(len(mean)), mean, color=color, linewidth=2, label=LABELS[arm])
        axis.set_title(title, fontsize=10)
        axis.set_xlabel("GRPO step (32 episodes each)")
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        axis.set_ylim(-0.02, 1.02)
        axis.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9, frameon=False)
    seeds = len(summary["seeds"])
    figure.suptitle(f"{setup['title']}, tiny Qwen2 (2 layers, hidden 64) on CPU via TRL; "
                    f"{seeds} seed{'s' if seeds != 1 else ''}", fontsize=11)
    figure.tight_layout(rect=(0, 0.07, 1, 1))
    figure.savefig(path, dpi=110)
    plt.close(figure)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
