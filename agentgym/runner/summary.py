"""The end of a run: the metrics, the per-term reward means, a table and a plot."""

from __future__ import annotations

import math
import statistics
import textwrap
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agentgym.runner.records import EpisodeRecord

__all__ = ["RunSummary", "summarize", "render", "plot"]


class RunSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    episodes: int
    completed: int
    failed: int = 0
    success_rate: float | None = None
    success_ci95: tuple[float, float] | None = None
    """Wilson score interval of the success rate."""
    mean_return: float | None = None
    mean_score: float | None = None
    mean_turns: float | None = None
    truncated_rate: float | None = None
    invalid_action_rate: float | None = None
    """Invalid actions per action taken."""
    tool_error_rate: float | None = None
    """Tool calls that failed, per action taken."""
    mean_duration_s: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    agent_errors: int = 0
    reward_terms: dict[str, float | None] = Field(default_factory=dict)
    """Mean raw value of each reward term, over the episodes where it had one (None: never scored)."""
    official: dict[str, float] = Field(default_factory=dict)
    """TravelPlanner: the six official metrics over the run's tasks (``agentgym.runner.official``)."""
    qa: dict[str, dict[str, float]] = Field(default_factory=dict)
    """Search QA: ``{"all" | data_source: {"n", "em", "f1"}}``, overall and per dataset (nq, hotpotqa...)."""


def summarize(records: Sequence[EpisodeRecord], episodes: int, failed: int = 0) -> RunSummary:
    if not records:
        return RunSummary(episodes=episodes, completed=0, failed=failed)
    verdicts = [r.success for r in records if r.success is not None]
    actions = sum(r.turns for r in records)
    scores = [r.score for r in records if r.score is not None]
    return RunSummary(
        episodes=episodes, completed=len(records), failed=failed,
        success_rate=_mean([float(v) for v in verdicts]), success_ci95=_wilson(sum(verdicts), len(verdicts)),
        mean_return=_mean([r.total_reward for r in records]), mean_score=_mean(scores),
        mean_turns=_mean([float(r.turns) for r in records]),
        truncated_rate=_mean([float(r.truncated) for r in records]),
        invalid_action_rate=sum(r.invalid_actions for r in records) / actions if actions else None,
        tool_error_rate=sum(r.tool_errors for r in records) / actions if actions else None,
        mean_duration_s=_mean([r.duration_s for r in records]),
        prompt_tokens=sum(r.usage.get("prompt_tokens", 0) for r in records),
        completion_tokens=sum(r.usage.get("completion_tokens", 0) for r in records),
        agent_errors=sum(1 for r in records if r.agent_error), reward_terms=_term_means(records),
        qa=_qa_by_source(records))


def _qa_by_source(records: Sequence[EpisodeRecord]) -> dict[str, dict[str, float]]:
    # Episodes that ended without an answer count as 0, as in Search-R1's and FlashRAG's tables.
    groups: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in records:
        ev = r.report or {}
        if not isinstance(ev.get("em"), (int, float)) and "golden_answers" not in ev:
            continue
        pair = (float(ev.get("em") or 0.0), float(ev.get("f1") or 0.0))
        groups["all"].append(pair)
        if isinstance(ev.get("data_source"), str):
            groups[ev["data_source"]].append(pair)
    return {name: {"n": len(v), "em": statistics.fmean(p[0] for p in v), "f1": statistics.fmean(p[1] for p in v)}
            for name, v in groups.items()}


def render(summary: RunSummary, console: object, title: str = "agentgym run") -> None:
    """Print the metrics table and, when the run shaped rewards, the per-term means."""
    from rich.table import Table

    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in _rows(summary):
        table.add_row(name, value)
    console.print(table)
    if summary.official:
        official = Table(title="TravelPlanner official metrics (the run's tasks)", header_style="bold")
        official.add_column("metric")
        official.add_column("value", justify="right")
        for name, value in summary.official.items():
            official.add_row(name, f"{100 * value:.1f}%")
        console.print(official)
    if summary.reward_terms:
        terms = Table(title="reward terms (mean raw value)", header_style="bold")
        terms.add_column("term")
        terms.add_column("mean", justify="right")
        for name, mean in summary.reward_terms.items():
            terms.add_row(name, "never scored" if mean is None else f"{mean:.3f}")
        console.print(terms)
    if len(summary.qa) > 1:  # more than "all": one row per dataset
        qa = Table(title="EM / F1 by data source", header_style="bold")
        for column in ("data source", "n", "EM", "F1"):
            qa.add_column(column, justify="left" if column == "data source" else "right")
        for name, row in sorted(summary.qa.items(), key=lambda item: (item[0] == "all", item[0])):
            qa.add_row(name, str(int(row["n"])), f"{row['em']:.3f}", f"{row['f1']:.3f}")
        console.print(qa)


def _rows(s: RunSummary) -> list[tuple[str, str]]:
    rows = [("episodes", f"{s.completed}/{s.episodes}" + (f" ({s.failed} failed, to retry)" if s.failed else ""))]
    if s.success_rate is not None:
        low, high = s.success_ci95 or (math.nan, math.nan)
        rows.append(("success rate", f"{s.success_rate:.1%} [{low:.1%}, {high:.1%}]"))
    for name, value, fmt in (("mean return", s.mean_return, "{:.3f}"), ("mean score", s.mean_score, "{:.3f}"),
                             ("mean turns", s.mean_turns, "{:.1f}"), ("truncated", s.truncated_rate, "{:.1%}"),
                             ("invalid actions / action", s.invalid_action_rate, "{:.1%}"),
                             ("tool errors / action", s.tool_error_rate, "{:.1%}"),
                             ("mean episode time", s.mean_duration_s, "{:.2f} s")):
        if value is not None:
            rows.append((name, fmt.format(value)))
    if s.prompt_tokens or s.completion_tokens:
        rows.append(("tokens (prompt / completion)", f"{s.prompt_tokens:,} / {s.completion_tokens:,}"))
    if s.agent_errors:
        rows.append(("agent errors (recorded)", str(s.agent_errors)))
    return rows


def plot(records: Sequence[EpisodeRecord], summary: RunSummary, path: Path, *, title: str = "agentgym run"
         ) -> Path | None:
    """Returns, turns, reward terms and action errors as a PNG; None when matplotlib is not installed.

    ``title`` names the run (env, agent, reward preset); the figure adds N and the success rate. A
    panel is drawn only where it has more than one bar (returns or turns that vary, two or more
    reward terms or error codes); what would be a single bar is a line of text under the title.
    """
    from agentgym._plotting import COLORS, hist, pyplot

    plt = pyplot()
    if plt is None:
        return None
    codes = _error_codes(records)
    panels, facts = [], []
    for values, integer, xlabel, name, mean, unit, color in (
            ([r.total_reward for r in records], False, "episode return", "return", summary.mean_return, "", 0),
            ([r.turns for r in records], True, "actions per episode", "turns", summary.mean_turns, " actions", 4)):
        if len(set(values)) > 1:
            fmt = "{:.1f}" if integer else "{:.3f}"
            panels.append(lambda ax, v=values, i=integer, x=xlabel, t=f"{name} (mean {fmt.format(mean or 0)})",
                          c=COLORS[color]: hist(ax, v, integer=i, xlabel=x, title=t, color=c))
        elif values:
            facts.append(f"{name}: {values[0]:g}{unit} in every episode")
    for shown, panel, fact in ((summary.reward_terms, _terms_panel, _terms_fact), (codes, _errors_panel, _errors_fact)):
        if len(shown) > 1:
            panels.append(lambda ax, p=panel: p(ax, summary, codes))
        elif shown:
            facts.append(fact(summary, codes))
    width = max(8.0, 5.0 * len(panels))  # room for the title and the facts above one panel
    fig, axes = plt.subplots(1, max(1, len(panels)), figsize=(width, 4.4), squeeze=False)
    for ax, draw in zip(axes[0], panels):
        draw(ax)
    fig.suptitle(_figure_title(title, summary))
    top = 1.0
    if not panels:  # nothing varies: the facts are the figure
        axes[0][0].set_axis_off()
        fig.text(0.5, 0.5, "\n".join(facts), ha="center", va="center", fontsize=10, color="#333333")
    elif facts:
        lines = textwrap.wrap("; ".join(facts), width=int(13 * width))
        fig.text(0.5, 0.915, "\n".join(lines), ha="center", va="top", fontsize=9, color="#333333")
        top = 0.93 - 0.05 * len(lines)
    fig.tight_layout(rect=(0, 0, 1, top))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _figure_title(title: str, s: RunSummary) -> str:
    text = f"{title}: N = {s.completed} episodes"
    if s.success_rate is not None:
        low, high = s.success_ci95 or (math.nan, math.nan)
        text += f", success {s.success_rate:.1%} (95% CI {low:.1%}-{high:.1%})"
    return text


def _terms_fact(summary: RunSummary, codes: dict[str, int]) -> str:
    (name, value), = summary.reward_terms.items()
    return f"reward term {name}: " + ("never scored" if value is None else f"mean {value:.3f}")


def _errors_fact(summary: RunSummary, codes: dict[str, int]) -> str:
    (code, count), = codes.items()
    return f"action errors: {count} x {code}"


def _error_codes(records: Sequence[EpisodeRecord]) -> dict[str, int]:
    codes: dict[str, int] = defaultdict(int)
    for record in records:
        for code, count in record.error_codes.items():
            codes[code] += count
    return dict(sorted(codes.items(), key=lambda kv: -kv[1]))


def _terms_panel(ax: object, summary: RunSummary, codes: dict[str, int]) -> None:
    from agentgym._plotting import hbars

    means = {k: math.nan if v is None else v for k, v in summary.reward_terms.items()}
    note = " (n/a: never scored)" if None in summary.reward_terms.values() else ""
    hbars(ax, {"mean": means}, xlabel="mean raw value" + note, ylabel="reward term", title="reward terms")


def _errors_panel(ax: object, summary: RunSummary, codes: dict[str, int]) -> None:
    from agentgym._plotting import hbars

    hbars(ax, {"count": {k: float(v) for k, v in codes.items()}}, xlabel="actions that hit the error (count)",
          ylabel="error code", title="action errors by code", fmt="{:.0f}")


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    if n == 0:
        return None
    p = successes / n
    center = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, center - half), min(1.0, center + half)


def _term_means(records: Sequence[EpisodeRecord]) -> dict[str, float | None]:
    """Mean raw value per term; a term that abstained in every episode stays, as None."""
    values: dict[str, list[float]] = defaultdict(list)
    for record in records:
        for name, value in record.reward_terms.items():
            values[name]  # noqa: B018 - every term gets its entry, scored or not
            if value is not None:
                values[name].append(value)
    return {name: statistics.fmean(v) if v else None for name, v in values.items()}
