"""agentgym on verl 0.9.x: run any agentgym env as a verl agent loop, train with GRPO or VSPO.

    pip install 'agentgym-rl[verl]'
    agentgym verl prepare TravelPlanner-v0 --split validation --out tp_train.parquet
    agentgym train planner_r1 data.train_files=tp_train.parquet data.val_files=tp_val.parquet --dry-run

verl loads ``agentgym.integrations.verl.plugin`` through its ``verl.plugins`` entry point in the
driver and in every Ray worker, which registers the ``agentgym`` agent loop and the ``vspo``
advantage estimator. ``preflight`` holds what runs before training, never inside it (``agentgym
verl selftest``, ``agentgym train --dry-run``). ``docs/verl.md`` has the data format, the VSPO
defaults and the recipes.

Data preparation and the recipe files import without verl; everything that touches verl's
classes raises ``DependencyNotInstalled`` with the install hint when verl is missing.
"""

from __future__ import annotations

from agentgym._lazy import lazy_names as _lazy_names
from agentgym.integrations.verl._guard import VERL_VERSION, require_verl

__all__ = ["VERL_VERSION", "require_verl", "AGENT_NAME", "AgentGymAgentLoop", "compute_vspo_advantage",
           "VSPOReplayBuffer", "VSPOReplayBufferAsync", "VSPOConfig", "AgentGymConfig", "prepare_rows", "write_parquet"]

AGENT_NAME = "agentgym"
"""The name the agent loop is registered under (the rows' ``agent_name``)."""

_LAZY = {
    "AgentGymAgentLoop": "agentgym.integrations.verl.agent_loop",
    "compute_vspo_advantage": "agentgym.integrations.verl.estimator",
    "VSPOReplayBuffer": "agentgym.integrations.verl.sampler",
    "VSPOReplayBufferAsync": "agentgym.integrations.verl.sampler",
    "VSPOConfig": "agentgym.integrations.verl.vspo",
    "AgentGymConfig": "agentgym.integrations.verl.config",
    "prepare_rows": "agentgym.integrations.verl.prepare",
    "write_parquet": "agentgym.integrations.verl.prepare",
}

# Lazy so that `agentgym verl prepare` and `--help` work without importing verl and torch.
__getattr__, __dir__ = _lazy_names(__name__, _LAZY, __all__)
