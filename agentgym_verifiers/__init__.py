"""The verifiers plugin id ``agentgym-verifiers``: any agentgym env as a verifiers v1 taskset and env.

verifiers imports the package named by ``--env.taskset.id`` and takes the ``Taskset`` and ``Env``
subclasses its ``__all__`` exports; the classes live in ``agentgym.integrations.verifiers``.
"""

from agentgym.integrations.verifiers import AgentGymEnv, AgentGymTaskset

__all__ = ["AgentGymTaskset", "AgentGymEnv"]
