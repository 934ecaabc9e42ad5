"""GRPO and VSPO learning curves on SearchQA-v0 through verl's own update math, on CPU.

Reproduces docs/img/learning_verl.png (about 25 s of CPU per seed and arm, plus imports)::

    pip install 'agentgym-rl[verl,plot]'
    python examples/learning_curves_verl.py                      # seeds 0 1 2, 10 steps
    python examples/learning_curves_verl.py --seeds 0 --out /tmp/curves.png

Each seed builds a random tiny Qwen2 and runs three arms from the same initial weights: GRPO,
VSPO (its batch plan and estimator) and GRPO with rewards shuffled across trajectories (the
control). ``agentgym.integrations.verl.learning`` documents the path and the constrained sampling.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from agentgym._plotting import COLORS, PLOT_HINT, pyplot
from agentgym.integrations.verl.learning import Curve, format_curves, make_setup, run_learning

ARMS = (("grpo", False, "GRPO"), ("vspo", False, "VSPO"), ("grpo", True, "GRPO, rewards shuffled (control)"))
PANELS = (("reward", "mean reward per batch"), ("search_then_answer", "share that searched, then answered"))


def run(seeds: list[int], steps: int) -> dict[str, list[Curve]]:
    runs: dict[str, list[Curve]] = {label: [] for _, _, label in ARMS}
    for seed in seeds:
        with tempfile.TemporaryDirectory(prefix="agentgym-learning-") as folder:
            setup = make_setup(Path(folder), seed=seed)
            for estimator, shuffled, label in ARMS:
                runs[label].append(run_learning(estimator, steps=steps, seed=seed, shuffle_rewards=shuffled,
                                                setup=setup))
        seed_curves = [curves[-1] for curves in runs.values()]
        print(format_curves(seed_curves), "\n", format_curves(seed_curves, "search_then_answer"), "\n", sep="")
    return runs


def plot(runs: dict[str, list[Curve]], out: Path, steps: int) -> None:
    plt = pyplot()
    if plt is None:
        raise SystemExit(PLOT_HINT)
    seeds = len(next(iter(runs.values())))
    fig, axes = plt.subplots(1, len(PANELS), figsize=(10, 3.8), sharex=True)
    x = list(range(1, steps + 1))
    for ax, (key, ylabel) in zip(axes, PANELS):
        for color, (label, curves) in zip(COLORS, runs.items()):
            rows = [getattr(c, key) for c in curves]
            mean = [sum(v) / len(v) for v in zip(*rows)]
            ax.plot(x, mean, color=color, label=label, linewidth=2, linestyle="--" if "shuffled" in label else "-")
            if len(rows) > 1:
                ax.fill_between(x, [min(v) for v in zip(*rows)], [max(v) for v in zip(*rows)], color=color, alpha=0.15)
        ax.set_xlabel("training step (4 tasks x 8 trajectories)")
        ax.set_ylabel(ylabel)
        ax.set_ylim(-0.02, 1.02 if key != "reward" else 0.8)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, loc="upper left")
    band = f"mean of {seeds} seeds, band = min to max" if seeds > 1 else "one seed"
    fig.suptitle(f"SearchQA-v0 through verl's agent loop and update math: tiny random Qwen2 on CPU ({band})",
                 fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--out", type=Path, default=Path("docs/img/learning_verl.png"))
    args = parser.parse_args()
    plot(run(args.seeds, args.steps), args.out, args.steps)


if __name__ == "__main__":
    main()
