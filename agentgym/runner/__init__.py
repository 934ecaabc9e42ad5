"""``agentgym run``: evaluate an agent on an env with resumable, crash-safe results.

    outcome = run_eval(RunConfig(env_id="TravelPlanner-v0", agent=ChatAgentConfig(base_url=..., model=...),
                                 episodes=100, concurrency=16, out=Path("runs/tp")))
    summary = summarize(list(outcome.records.values()), outcome.episodes)

See ``docs/agents.md`` for the command, the results folder and its resume semantics.
"""

from agentgym._deprecated import module_aliases as _module_aliases
from agentgym.runner.config import GoldAgentConfig, ImportedAgentConfig, PerturbedAgentConfig, RunConfig, default_out_dir
from agentgym.runner.loop import RunOutcome, run_eval, run_eval_async
from agentgym.runner.records import EpisodeRecord
from agentgym.runner.summary import RunSummary, plot, summarize
from agentgym.runner.store import ResultStore, load_results

__all__ = [
    "RunConfig", "GoldAgentConfig", "ImportedAgentConfig", "PerturbedAgentConfig", "default_out_dir", "run_eval", "run_eval_async",
    "RunOutcome", "EpisodeRecord", "RunSummary", "summarize", "plot", "ResultStore", "load_results",
]

__getattr__ = _module_aliases(__name__, {"ReferenceAgentConfig": "GoldAgentConfig"})
