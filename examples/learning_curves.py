"""Every learning figure of docs/learning.md: a tiny model on agentgym envs, on CPU, with controls.

    python examples/learning_curves.py                       # every figure, seeds 0-4 -> docs/img/learning-*.png
    python examples/learning_curves.py --figure plans --seeds 0 --steps 10 --out /tmp/curves

Each figure trains its arms for each seed, one run after another (torch on one thread): the real
run and the controls that must learn less, or the two rewards a paper compares. It writes
``learning-<figure>.json`` (every run's curves, CPU seconds per run, start/end/gain per seed and
their spread) and ``learning-<figure>.png`` (mean over seeds, each seed thin), and prints the
summary. The learning tests (``pytest -m learning_slow``) run the same functions on the same
seeds, so their margins come from these numbers. Needs ``agentgym-rl[trl,plot]`` (``verl``:
``agentgym-rl[verl,plot]``).

* ``searchqa``: ``trl_searchqa`` as shipped, 20 steps: search, then answer;
* ``travelplanner``: ``trl_travelplanner`` as shipped, 12 steps: calls the env can run;
* ``answers``: SearchQA-v0 with every gold writable after a search, 100 steps: the recipe's
  reward, the same shuffled, binary exact match, PRS's staged reward;
* ``plans``: TravelPlanner-v0 plans through the plan template, 30 steps: Planner-R1 dense,
  sparse, dense shuffled; the zero-variance share of each;
* ``schedule``: a reward whose stage changes halfway, 12 steps, with and without a frozen clock;
* ``verl``: SearchQA-v0 through verl's agent loop and update math (``learning_curves_verl.py``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs" / "img"


def searched_then_answered(entry: dict) -> float:
    """Share of the step's episodes that searched at least once and then answered."""
    return sum(share for actions, share in entry["actions"].items()
               if actions.endswith("answer") and "tool" in actions.split(">"))


def term(name: str) -> Callable[[dict], float]:
    return lambda entry: entry["terms"][name] or 0.0


def every_call_ran(entry: dict) -> float:
    """Share of the step's episodes whose every action was a tool call the env carried out."""
    return sum(share for actions, share in entry["actions"].items() if set(actions.split(">")) == {"tool"})


def reward(entry: dict) -> float:
    return entry["reward"]


def zero_variance(entry: dict) -> float:
    return entry["zero_variance"]


@dataclass(frozen=True)
class Figure:
    title: str
    steps: int
    window: int
    """Steps averaged for the start and the end."""
    arms: dict[str, str]
    """Run name -> legend label."""
    metrics: dict[str, Callable[[dict], float]]
    plots: tuple[tuple[str, str], ...]
    """(metric, panel title) per panel."""
    run: Callable[[str, int, str, int], list[dict]]
    """(run name, seed, scratch folder, steps) -> the run's history."""


def _recipe_run(name: str) -> Callable:
    def run(arm: str, seed: int, folder: str, steps: int) -> list[dict]:
        from agentgym.integrations.trl.controls import run_arm
        from agentgym.integrations.trl.train import load_recipe

        return run_arm(load_recipe(name), arm, seed=seed, steps=steps, output_dir=folder)

    return run


def _answers(arm: str, seed: int, folder: str, steps: int) -> list[dict]:
    from agentgym.integrations.trl.learning import run_answers

    return run_answers(seed, folder, steps=steps, arms=(arm,))[arm]


def _plans(arm: str, seed: int, folder: str, steps: int) -> list[dict]:
    from agentgym.integrations.trl.learning import run_plans

    return run_plans(seed, folder, steps=steps, arms=(arm,))[arm]


def _schedule(arm: str, seed: int, folder: str, steps: int) -> list[dict]:
    from agentgym.integrations.trl.learning import run_schedule

    history, stages = run_schedule(seed, folder, steps=steps, frozen_clock=arm == "frozen")
    for entry, stage in zip(history, stages):
        entry["stage"] = stage
    return history


FIGURES: dict[str, Figure] = {
    "searchqa": Figure(
        "SearchQA-v0, trl_searchqa as shipped", 20, 3,
        {"real": "GRPO", "shuffled": "control: rewards shuffled"},
        {"reward": reward, "search_then_answer": searched_then_answered, "exact_match": term("exact_match")},
        (("reward", "mean shaped reward"), ("search_then_answer", "share that searched, then answered")),
        _recipe_run("trl_searchqa")),
    "travelplanner": Figure(
        "TravelPlanner-v0, trl_travelplanner as shipped (ReAct, 4 actions)", 12, 3,
        {"real": "GRPO", "shuffled": "control: rewards shuffled", "observations": "control: observations trained on"},
        {"reward": reward, "valid_calls": term("tool_call_validity"), "every_call_ran": every_call_ran},
        # The reward is the valid-call share here: the second panel shows another behaviour.
        (("reward", "mean shaped reward (= share of tool calls that ran)"),
         ("every_call_ran", "share of episodes whose every call ran")),
        _recipe_run("trl_travelplanner")),
    "answers": Figure(
        "SearchQA-v0, every gold a word of the passage a search returns (one-word answers)", 100, 10,
        {"shaped": "trl_searchqa's reward", "em": "binary exact match", "prs": "PRS staged (prs/short)",
         "shuffled": "control: trl_searchqa's reward shuffled"},
        {"exact_match": term("exact_match"), "reward": reward, "zero_variance": zero_variance,
         "search_then_answer": searched_then_answered},
        (("exact_match", "exact match"), ("search_then_answer", "share that searched, then answered"),
         ("zero_variance", "share of groups with zero variance")),
        _answers),
    "plans": Figure(
        "TravelPlanner-v0 plans through the plan template (4 tasks, 3 days)", 30, 5,
        {"dense": "Planner-R1 dense", "sparse": "Planner-R1 sparse (final pass)", "shuffled": "control: dense shuffled"},
        {"hard_micro": term("hard_micro"), "final_pass": term("final_pass"),
         "commonsense_micro": term("commonsense_micro"), "zero_variance": zero_variance},
        (("hard_micro", "hard-constraint micro (the budget)"), ("final_pass", "final pass rate"),
         ("zero_variance", "share of groups with zero variance")),
        _plans),
    "schedule": Figure(
        "SearchQA-v0, a reward whose stage changes halfway (format, then exact match)", 12, 3,
        {"staged": "schedule clock as trained", "frozen": "control: clock frozen at step 0"},
        {"reward": reward, "format": term("format"), "exact_match": term("exact_match"),
         "answer_stage": lambda e: float(e["stage"] == "answer")},
        (("reward", "mean reward paid"), ("answer_stage", "stage read from the logs: 1 = answer")),
        _schedule),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figure", choices=[*FIGURES, "verl", "all"], default="all")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--steps", type=int, default=None, help="steps per run (default: the figure's)")
    parser.add_argument("--out", type=Path, default=DOCS)
    parser.add_argument("--replot", action="store_true", help="redraw the figures from their JSON in --out, no training")
    args = parser.parse_args()
    if args.replot:
        for name in (*FIGURES, "verl") if args.figure == "all" else (args.figure,):
            data = json.loads((args.out / f"learning-{name}.json").read_text())
            if name == "verl":
                _verl().plot(data, args.out / "learning-verl.png")
            else:
                plot(data["curves"], FIGURES[name], len(data["seeds"]), args.out / f"learning-{name}.png")
        return

    import torch

    torch.set_num_threads(1)  # the fastest on a busy machine, and the same sums every run
    args.out.mkdir(parents=True, exist_ok=True)
    for name in (*FIGURES, "verl") if args.figure == "all" else (args.figure,):
        if name == "verl":
            verl = _verl()
            verl.figure(args.seeds, args.steps or verl.STEPS, args.out)
        else:
            curves(name, FIGURES[name], args.seeds, args.steps or FIGURES[name].steps, args.out)


def _verl():
    """``learning_curves_verl.py`` beside this script (it needs the verl extra)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import learning_curves_verl

    return learning_curves_verl


def curves(name: str, figure: Figure, seeds: list[int], steps: int, out: Path) -> None:
    runs: dict[str, list[list[dict]]] = {arm: [] for arm in figure.arms}
    seconds: dict[str, list[float]] = {arm: [] for arm in figure.arms}
    with tempfile.TemporaryDirectory() as scratch:
        for seed in seeds:
            for arm in figure.arms:
                started = time.process_time()
                runs[arm].append(figure.run(arm, seed, scratch, steps))
                seconds[arm].append(round(time.process_time() - started, 1))
    summary = summarize(runs, figure.metrics, figure.window)
    summary.update(seeds=seeds, steps=steps, cpu_seconds_per_run=seconds,
                   curves={arm: {name: [[round(metric(e), 4) for e in h] for h in histories]
                                 for name, metric in figure.metrics.items()} for arm, histories in runs.items()})
    (out / f"learning-{name}.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "curves"}, indent=1))
    plot(summary["curves"], figure, len(seeds), out / f"learning-{name}.png")


def summarize(runs: dict[str, list[list[dict]]], metrics: dict[str, Callable[[dict], float]], size: int) -> dict:
    out: dict = {}
    for arm, histories in runs.items():
        for name, metric in metrics.items():
            values = [[metric(e) for e in h] for h in histories]
            starts = [sum(v[:size]) / size for v in values]
            ends = [sum(v[-size:]) / size for v in values]
            gains = [e - s for s, e in zip(starts, ends)]
            out[f"{arm}/{name}"] = {"start": [round(v, 3) for v in starts], "end": [round(v, 3) for v in ends],
                                    "gain": [round(g, 3) for g in gains], "mean": [round(sum(v) / len(v), 3) for v in values],
                                    "gain_spread": round(statistics.pstdev(gains), 3) if len(gains) > 1 else 0.0}
    return out


def plot(curves: dict[str, dict[str, list[list[float]]]], figure: Figure, seeds: int, path: Path) -> None:
    """``curves``: run name -> metric -> one curve per seed. The mean over seeds thick, each seed
    thin; whole-number steps; the legend below the panels, clear of every curve."""
    from agentgym._plotting import COLORS, PLOT_HINT, pyplot

    plt = pyplot()
    if plt is None:
        print(PLOT_HINT)
        return
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(1, len(figure.plots), figsize=(5 * len(figure.plots), 4.2))
    for axis, (metric, title) in zip(axes, figure.plots):
        for color, arm in zip(COLORS, figure.arms):
            series = curves[arm][metric]
            for curve in series:
                axis.plot(range(len(curve)), _smooth(curve, figure.window), color=color, alpha=0.25, linewidth=0.7)
            mean = [sum(v) / len(v) for v in zip(*series)]
            axis.plot(range(len(mean)), _smooth(mean, figure.window), color=color, linewidth=2,
                      label=figure.arms[arm], linestyle="--" if "control" in figure.arms[arm] else "-")
        axis.set_title(title, fontsize=10)
        axis.set_xlabel("GRPO step")
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        axis.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9, frameon=False)
    smooth = f"; every curve a trailing mean over {figure.window} steps" if figure.window > 3 else ""
    fig.suptitle(f"{figure.title}\ntiny random Qwen2 on CPU via TRL's GRPOTrainer: {seeds} seed{'s' if seeds != 1 else ''} "
                 f"(thin), their mean (thick){smooth}", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")


def _smooth(values: list[float], size: int) -> list[float]:
    """A trailing mean over ``size`` steps (the curve the start/end windows read), for long noisy runs."""
    if size <= 3:
        return values
    return [sum(values[max(0, i - size + 1):i + 1]) / len(values[max(0, i - size + 1):i + 1]) for i in range(len(values))]


if __name__ == "__main__":
    main()
