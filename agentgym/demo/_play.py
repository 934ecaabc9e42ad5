"""Play the demo's episodes and collect what it reports."""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium

from agentgym._plotting import PLOT_HINT
from agentgym.agents.base import run_episode
from agentgym.agents.scripted import FirstListingAgent, SolverAgent, TopTitleAgent
from agentgym.envs.travelplanner.evaluation import COMMONSENSE, HARD, EvaluationReport, aggregate
from agentgym.envs.travelplanner.synthetic import world_label
from agentgym.envs.travelplanner.world import DATABASE_ENV_VAR
from agentgym.errors import DependencyNotInstalled
from agentgym.rewards.shaper import RewardBreakdown

__all__ = ["DemoResult", "run_demo", "TRAVEL_PRESET", "QA_PRESET"]

TRAVEL_PRESET = "planner_r1/dense"
QA_PRESET = "prs/short"


@dataclass
class AgentSummary:
    """What one agent achieved over its episodes (its figures, and one line per episode it played)."""

    name: str
    metrics: dict[str, float] = field(default_factory=dict)
    constraint_pass_rates: dict[str, float] = field(default_factory=dict)
    constraint_counts: dict[str, int] = field(default_factory=dict)
    """Queries each constraint was checked on: all of them for commonsense, those that set it for hard."""
    reward_terms: dict[str, float] = field(default_factory=dict)
    mean_reward: float = 0.0
    episodes: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class DemoResult:
    travelplanner: list[AgentSummary]
    """Empty when the TravelPlanner part was skipped (see ``skipped``)."""
    searchqa: AgentSummary | None
    seconds: float
    out_dir: Path
    episodes: int = 0
    """TravelPlanner tasks each agent played."""
    skipped: dict[str, str] = field(default_factory=dict)
    """What the demo could not do on this install, and why (a missing optional package)."""
    files: list[Path] = field(default_factory=list)
    """What it wrote into ``out_dir``."""
    presets: dict[str, str] = field(default_factory=lambda: {"TravelPlanner-v0": TRAVEL_PRESET,
                                                             "SearchQA-v0": QA_PRESET})
    """The reward preset each env was shaped with."""
    world: str = ""
    """The TravelPlanner world played: the embedded synthetic one, or the database named by the env var."""
    evaluators: dict[str, str] = field(default_factory=lambda: dict(EVALUATORS))
    """Which TravelPlanner evaluator each reported figure comes from."""


EVALUATORS = {"metrics and constraints": "official", "reward terms": "strict"}
"""The demo's env evaluates with the official evaluator; the reward preset's terms re-check strictly."""


TRAVEL_PART = f"TravelPlanner-v0 under {TRAVEL_PRESET}"
QA_PART = f"SearchQA-v0 under {QA_PRESET}"
PLOTS_PART = "plots"


def run_demo(out_dir: str | Path = "results/demo", *, episodes: int = 45, qa_episodes: int = 30) -> DemoResult:
    """Play the demo's episodes, write ``out_dir`` and return what was measured.

    A part that needs a package this install lacks (``DependencyNotInstalled``) is skipped and
    named in ``skipped`` with the reason; the other parts still run.
    """
    start = time.perf_counter()
    skipped: dict[str, str] = {}
    travel = _part(skipped, TRAVEL_PART, lambda: _travelplanner_agents(episodes)) or []
    world = world_name() if travel else ""
    qa = _part(skipped, QA_PART, lambda: _searchqa(gymnasium.make("SearchQA-v0", reward=QA_PRESET), TopTitleAgent(),
                                                   qa_episodes))
    result = DemoResult(travel, qa, time.perf_counter() - start, Path(out_dir),
                        episodes=len(travel[0].episodes) if travel else 0, skipped=skipped, world=world)
    _write(result)
    return result


def world_name() -> str:
    """How the demo's figures and tables name the TravelPlanner world it played (no machine path)."""
    return world_label(os.environ.get(DATABASE_ENV_VAR) or None)


def _part(skipped: dict[str, str], name: str, play: Any) -> Any:
    try:
        return play()
    except DependencyNotInstalled as exc:
        skipped[name] = str(exc)
        return None


def _travelplanner_agents(episodes: int) -> list[AgentSummary]:
    env = gymnasium.make("TravelPlanner-v0", evaluator="official", reward=TRAVEL_PRESET, max_turns=60)
    return [_travelplanner(env, name, agent, episodes) for name, agent in
            (("solver", SolverAgent(env)), ("first-listing baseline", FirstListingAgent(env)))]


def _episode(env: gymnasium.Env, agent: Any, index: int) -> dict[str, Any]:
    """One played episode as the demo's ``episodes.jsonl`` line shows it."""
    log = run_episode(env, agent, options={"task_index": index})
    last = log.last_info
    return {"task_id": last["task_id"], "return": log.total_reward, "actions": len(log.actions),
            "report": last.get("report"), "reward": last.get("reward")}


def _travelplanner(env: gymnasium.Env, name: str, agent: Any, episodes: int) -> AgentSummary:
    tasks = env.unwrapped.tasks[:episodes]
    played = [_episode(env, agent, i) for i in range(len(tasks))]
    reports = [EvaluationReport.model_validate(p["report"]) for p in played]
    result = AgentSummary(name=name, episodes=played)
    result.metrics = aggregate(reports, tasks).official()
    result.constraint_pass_rates, result.constraint_counts = _pass_rates(reports)
    result.reward_terms, result.mean_reward = _term_means(played)
    return result


def _searchqa(env: gymnasium.Env, agent: Any, episodes: int) -> AgentSummary:
    played = [_episode(env, agent, i) for i in range(min(episodes, len(env.unwrapped.tasks)))]
    result = AgentSummary(name="top-title agent", episodes=played)
    evaluations = [p["report"] or {} for p in played]
    result.metrics = {"Exact Match": _mean(e.get("em", 0.0) for e in evaluations),
                      "Token F1": _mean(e.get("f1", 0.0) for e in evaluations),
                      "Retrieval Hit": _mean(float(e.get("retrieval_hit", False)) for e in evaluations)}
    result.reward_terms, result.mean_reward = _term_means(played)
    return result


def _pass_rates(reports: list[EvaluationReport]) -> tuple[dict[str, float], dict[str, int]]:
    """Pass rate of each constraint and the number of tasks it was checked on."""
    rates, counts = {}, {}
    for name in COMMONSENSE:
        rates[name] = _mean(float(r.commonsense[name].passed is True) for r in reports)
        counts[name] = len(reports)
    for name in HARD:
        applicable = [r.hard[name].passed for r in reports if r.hard is not None and r.hard[name].passed is not None]
        rates[name] = _mean(float(v) for v in applicable) if applicable else float("nan")
        counts[name] = len(applicable)
    return rates, counts


def _term_means(played: list[dict[str, Any]]) -> tuple[dict[str, float], float]:
    raws: dict[str, list[float]] = defaultdict(list)
    for episode in played:
        breakdown = RewardBreakdown.from_info(episode)
        for name, term in (breakdown.terms if breakdown else {}).items():
            if not term.abstained and term.raw is not None:
                raws[name].append(term.raw)
    return {name: _mean(v) for name, v in raws.items()}, _mean(p["return"] for p in played)


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def _write(result: DemoResult) -> None:
    from agentgym.demo._plots import draw_plots

    out = result.out_dir
    out.mkdir(parents=True, exist_ok=True)
    agents = [*result.travelplanner, *([result.searchqa] if result.searchqa else [])]
    summary = {a.name: {k: v for k, v in a.__dict__.items() if k != "episodes"} for a in agents}
    with open(out / "episodes.jsonl", "w") as f:
        for agent in agents:
            for episode in agent.episodes:
                f.write(json.dumps({"agent": agent.name, **episode}) + "\n")
    plots = draw_plots(result, out)
    if plots is None:
        result.skipped[PLOTS_PART] = PLOT_HINT
    result.files = [out / "summary.json", out / "episodes.jsonl", *(plots or [])]
    (out / "summary.json").write_text(json.dumps({"seconds": result.seconds, "world": result.world,
                                                  "travelplanner_evaluators": result.evaluators, "agents": summary,
                                                  "skipped": result.skipped,
                                                  "files": [p.name for p in result.files]}, indent=2))
