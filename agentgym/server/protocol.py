"""Moved to ``agentgym.remote.protocol`` (the wire format the client and the server share); this path goes in 0.3."""

from agentgym._deprecated import alias, warn_renamed

alias("module", "agentgym.server.protocol", "agentgym.remote.protocol")
warn_renamed("agentgym.server.protocol", "agentgym.remote.protocol", stacklevel=3)

from agentgym.remote.protocol import *  # noqa: E402,F403
from agentgym.remote.protocol import __all__  # noqa: E402,F401
