"""GRPO, VSPO and REINFORCE++ learning curves on SearchQA-v0 through verl's own update math, on CPU.

Reproduces docs/img/learning-verl.png and its JSON (about 15 s of CPU per run, plus 7 s of setup
per seed)::

    pip install 'agentgym-rl[verl,plot]'
    python examples/learning_curves_verl.py                      # seeds 0-4, 12 steps
    python examples/learning_curves_verl.py --seeds 0 --out /tmp/curves

(``python examples/learning_curves.py --figure verl`` does the same.) Each seed builds a random
tiny Qwen2 and runs four arms from the same initial weights, 8 tasks x 4 trajectories a step,
reward ``SEARCH_REWARD`` (1 when the episode searched and then answered): GRPO, VSPO (its batch
plan and estimator), REINFORCE++ (a per-token estimator) and GRPO with rewards shuffled across
trajectories (the control). Beside the reward it draws the share of groups with zero variance and
the share of the trained batch that carries a gradient. ``agentgym.integrations.verl.preflight.learning``
documents the path and the constrained sampling.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from agentgym._plotting import COLORS, PLOT_HINT, pyplot
from agentgym.integrations.verl.preflight.learning import SEARCH_REWARD, Curve, format_curves, make_setup, run_learning

STEPS = 12
N, GROUPS = 4, 8
ARMS = {"grpo": ("grpo", False, "GRPO"), "vspo": ("vspo", False, "VSPO"),
        "reinforce_plus_plus": ("reinforce_plus_plus", False, "REINFORCE++ (per token)"),
        "shuffled": ("grpo", True, "control: GRPO, rewards shuffled")}
PANELS = (("reward", "searched, then answered (= reward)"), ("zero_variance", "share of groups with zero variance"),
          ("gradient_share", "share of the trained batch with a gradient"))


def run(seeds: list[int], steps: int) -> dict[str, list[Curve]]:
    runs: dict[str, list[Curve]] = {name: [] for name in ARMS}
    for seed in seeds:
        with tempfile.TemporaryDirectory(prefix="agentgym-learning-") as folder:
            setup = make_setup(Path(folder), seed=seed, n=N, reward=SEARCH_REWARD)
            for name, (estimator, shuffled, _) in ARMS.items():
                runs[name].append(run_learning(estimator, steps=steps, seed=seed, groups=GROUPS,
                                               shuffle_rewards=shuffled, setup=setup))
        seed_curves = [curves[-1] for curves in runs.values()]
        for key, _ in PANELS:
            print(format_curves(seed_curves, key), "\n")
    return runs


def summary(runs: dict[str, list[Curve]], seeds: list[int], steps: int) -> dict:
    out: dict = {"seeds": seeds, "steps": steps}
    for name, curves in runs.items():
        gains = [c.gain() for c in curves]
        out[name] = {"start": [round(c.start(), 3) for c in curves], "end": [round(c.end(), 3) for c in curves],
                     "gain": [round(g, 3) for g in gains],
                     "gain_spread": round(statistics.pstdev(gains), 3) if len(gains) > 1 else 0.0,
                     "cpu_seconds": [round(c.seconds, 1) for c in curves],
                     **{key: [[round(v, 3) for v in c.series(key)] for c in curves] for key, _ in PANELS}}
    return out


def plot(data: dict, out: Path) -> None:
    """The curves of ``data`` (``summary``'s): the mean over seeds thick, each seed thin; whole-number
    steps; the legend below the panels, clear of every curve."""
    plt = pyplot()
    if plt is None:
        raise SystemExit(PLOT_HINT)
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(1, len(PANELS), figsize=(15, 4.2), sharex=True)
    x = list(range(1, data["steps"] + 1))
    for ax, (key, ylabel) in zip(axes, PANELS):
        for color, name in zip(COLORS, ARMS):
            rows = data[name][key]
            mean = [sum(v) / len(v) for v in zip(*rows)]
            label = ARMS[name][2]
            ax.plot(x, mean, color=color, label=label, linewidth=2, linestyle="--" if "control" in label else "-")
            for row in rows:
                ax.plot(x, row, color=color, alpha=0.2, linewidth=0.7)
        ax.set_xlabel(f"training step ({GROUPS} tasks x {N} trajectories)")
        ax.set_title(ylabel, fontsize=10)
        ax.set_ylim(-0.02, 1.02)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9, frameon=False)
    fig.suptitle(f"SearchQA-v0 through verl's agent loop and update math: tiny random Qwen2 on CPU "
                 f"({len(data['seeds'])} seeds, thin; mean thick)", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    print(f"wrote {out}")


def figure(seeds: list[int], steps: int, out: Path) -> None:
    """The runs, ``learning-verl.json`` and ``learning-verl.png`` in the folder ``out``."""
    runs = run(seeds, steps)
    data = summary(runs, seeds, steps)
    (out / "learning-verl.json").write_text(json.dumps(data, indent=1))
    print(json.dumps({name: {k: v for k, v in arm.items() if k not in dict(PANELS)} if isinstance(arm, dict) else arm
                      for name, arm in data.items()}, indent=1))
    plot(data, out / "learning-verl.png")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "docs" / "img")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    figure(args.seeds, args.steps, args.out)


if __name__ == "__main__":
    main()
