"""agentgym on TRL: any agentgym env as a multi-turn ``GRPOTrainer`` rollout, by the turn rules
the verl agent loop uses too (``agentgym.integrations.turns``).

    pip install 'agentgym-rl[trl]'
    agentgym train trl_searchqa            # a tiny model learns SearchQA-v0 on CPU in minutes

``rollout_func`` plays episodes for ``GRPOTrainer(rollout_func=...)`` over prompts from
``task_dataset``; ``agentgym_reward`` pays the env's shaped reward and logs its terms;
``SearchTool`` and ``TravelPlannerTools`` are ``environment_factory`` classes for TRL's own
tool-calling loop. ``docs/trl.md`` has the API and the recipes.
"""

from __future__ import annotations

from agentgym._lazy import lazy_names as _lazy_names
from agentgym.integrations.trl._guard import TRL_VERSION, require_trl

__all__ = ["TRL_VERSION", "require_trl", "rollout_func", "AgentGymRollout", "task_dataset", "TurnConstraint",
           "schedule_clock", "agentgym_reward", "term_reward", "TagConstraint", "ReactConstraint", "TemplateConstraint",
           "SearchTool",
           "TravelPlannerTools", "word_tokenizer", "tiny_qwen2", "shuffle_rewards", "AgentGymRolloutWorker"]

_LAZY = {
    "rollout_func": "agentgym.integrations.trl.rollout",
    "AgentGymRollout": "agentgym.integrations.trl.rollout",
    "task_dataset": "agentgym.integrations.trl.rollout",
    "TurnConstraint": "agentgym.integrations.trl.rollout",
    "schedule_clock": "agentgym.integrations.trl.rollout",
    "agentgym_reward": "agentgym.integrations.trl.rewards",
    "term_reward": "agentgym.integrations.trl.rewards",
    "TagConstraint": "agentgym.integrations.trl.constraints",
    "ReactConstraint": "agentgym.integrations.trl.constraints",
    "TemplateConstraint": "agentgym.integrations.trl.constraints",
    "SearchTool": "agentgym.integrations.trl.tools",
    "TravelPlannerTools": "agentgym.integrations.trl.tools",
    "word_tokenizer": "agentgym.integrations.trl.tiny",
    "tiny_qwen2": "agentgym.integrations.trl.tiny",
    "shuffle_rewards": "agentgym.integrations.trl.controls",
    "AgentGymRolloutWorker": "agentgym.integrations.trl.async_worker",
}

# Lazy so that listing recipes and `--help` work without importing TRL and torch.
__getattr__, __dir__ = _lazy_names(__name__, _LAZY, __all__)
