"""Moved to ``agentgym.integrations.verl.preflight.learning`` (a learning proof, run before training and never
inside it, like the selftest it builds on); this path goes in 0.3."""

from agentgym._deprecated import alias, warn_renamed

alias("module", "agentgym.integrations.verl.learning", "agentgym.integrations.verl.preflight.learning")
warn_renamed("agentgym.integrations.verl.learning", "agentgym.integrations.verl.preflight.learning", stacklevel=3)

from agentgym.integrations.verl.preflight.learning import *  # noqa: E402,F403
from agentgym.integrations.verl.preflight.learning import __all__  # noqa: E402,F401
