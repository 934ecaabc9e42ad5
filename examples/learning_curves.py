"""Learning curves of a tiny model on agentgym envs through TRL's GRPOTrainer, on CPU, with controls.

    python examples/learning_curves.py                      # SearchQA-v0, seeds 0 1 2: writes docs/learning-*.png
    python examples/learning_curves.py --seeds 0 --steps 10 --out /tmp/curves

For each seed it trains the ``trl_searchqa`` recipe (a random 2-layer Qwen2, a word-level tokenizer
trained on the env's text, sampling constrained to well-formed tag actions) twice: as is, and
with rewards shuffled across each batch (the control that must not learn). It prints each arm's
reward and search-then-answer share at the start and the end, the seed-to-seed spread and the
CPU time, and draws the curves (mean over seeds, each seed thin). Needs ``agentgym[trl,plot]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path


def searched_then_answered(entry: dict) -> float:
    """Share of the step's episodes that searched at least once and then answered."""
    return sum(share for actions, share in entry["actions"].items()
               if actions.endswith("answer") and "tool" in actions.split(">"))


def window(values: list[float], first: bool, size: int = 3) -> float:
    part = values[:size] if first else values[-size:]
    return sum(part) / len(part)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "docs")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (1 is fastest on a busy machine)")
    args = parser.parse_args()

    import torch

    from agentgym.integrations.trl.controls import run_arm
    from agentgym.integrations.trl.train import load_recipe

    torch.set_num_threads(args.threads)
    recipe = load_recipe("trl_searchqa")
    runs: dict[str, list[list[dict]]] = {"real": [], "shuffled": []}
    started = time.process_time()
    with tempfile.TemporaryDirectory() as scratch:
        for seed in args.seeds:
            for arm in runs:
                runs[arm].append(run_arm(recipe, arm, seed=seed, steps=args.steps, output_dir=scratch))
    cpu = time.process_time() - started
    summary = summarize(runs)
    summary["cpu_seconds"] = round(cpu, 1)
    summary["seeds"], summary["steps"] = args.seeds, args.steps
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "learning-searchqa.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    plot(runs, args.out / "learning-searchqa.png")


def summarize(runs: dict[str, list[list[dict]]]) -> dict:
    out: dict = {}
    for arm, histories in runs.items():
        for name, metric in (("reward", lambda e: e["reward"]), ("search_then_answer", searched_then_answered),
                             ("exact_match", lambda e: e["terms"]["exact_match"])):
            starts = [window([metric(e) for e in h], True) for h in histories]
            ends = [window([metric(e) for e in h], False) for h in histories]
            out[f"{arm}/{name}"] = {"start": [round(v, 3) for v in starts], "end": [round(v, 3) for v in ends],
                                    "gain": [round(e - s, 3) for s, e in zip(starts, ends)],
                                    "gain_spread": round(statistics.pstdev([e - s for s, e in zip(starts, ends)]), 3)}
    return out


def plot(runs: dict[str, list[list[dict]]], path: Path) -> None:
    from agentgym._plotting import COLORS, pyplot

    plt = pyplot()
    if plt is None:
        print("matplotlib is missing: no figure")
        return
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for axis, (title, metric) in zip(axes, (("mean shaped reward", lambda e: e["reward"]),
                                            ("share that searched, then answered", searched_then_answered))):
        for color, (arm, histories) in zip(COLORS, runs.items()):
            curves = [[metric(e) for e in h] for h in histories]
            for curve in curves:
                axis.plot(range(len(curve)), curve, color=color, alpha=0.25, linewidth=0.8)
            mean = [sum(v) / len(v) for v in zip(*curves)]
            label = "GRPO" if arm == "real" else "control: rewards shuffled"
            axis.plot(range(len(mean)), mean, color=color, linewidth=2, label=label)
        axis.set_title(title)
        axis.set_xlabel("GRPO step (32 episodes each)")
        axis.grid(alpha=0.3)
    axes[0].legend(loc="lower right", fontsize=8)
    figure.suptitle(f"SearchQA-v0, tiny Qwen2 (2 layers, hidden 64) on CPU via TRL; {len(runs['real'])} seeds")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
