"""Moved to ``agentgym.server.live_server`` (one ``testing`` module is enough: ``agentgym.testing``); this path goes in 0.3."""

from agentgym._deprecated import alias, warn_renamed

alias("module", "agentgym.server.testing", "agentgym.server.live_server")
warn_renamed("agentgym.server.testing", "agentgym.server.live_server", stacklevel=3)

from agentgym.server.live_server import *  # noqa: E402,F403
from agentgym.server.live_server import __all__  # noqa: E402,F401
