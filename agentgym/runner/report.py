"""Moved to ``agentgym.runner.summary``: a "report" is the evaluator's output, a run has a summary.

This path goes in 0.3.
"""

from agentgym._deprecated import alias, warn_renamed

alias("module", "agentgym.runner.report", "agentgym.runner.summary")
warn_renamed("agentgym.runner.report", "agentgym.runner.summary", stacklevel=3)

from agentgym.runner.summary import *  # noqa: E402,F403
from agentgym.runner.summary import __all__  # noqa: E402,F401
