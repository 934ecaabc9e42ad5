"""Serve agentgym envs over HTTP to other processes and machines: ``agentgym serve``.

    agentgym serve --host 0.0.0.0 --port 8000 --presets presets.yaml   # tokens from $AGENTGYM_SERVER_TOKENS
    env = agentgym.remote.RemoteEnv("http://host:8000", "TravelPlanner-v0", token="...", preset="tp-train")

``create_app(config)`` builds the ASGI app (needs ``pip install 'agentgym-rl[server]'``); it speaks
the wire format of ``agentgym.remote.protocol``, as the client does. ``EnvServer`` (``core``) is
the one core every door sits on (HTTP, MCP, OpenEnv): sessions, seq and replay, and where env calls
run (``executors``: worker processes by default); ``presets`` and ``boundary`` what the operator fixes
and what a client may set. See ``docs/server.md`` (its "Security model" section for the trust boundary).
"""

from __future__ import annotations

from agentgym._deprecated import module_aliases as _module_aliases
from agentgym._lazy import lazy_names as _lazy_names
from agentgym.server.config import ServerConfig

__all__ = ["ServerConfig", "create_app", "EnvServer"]

# Lazy: importing the config must not need starlette (nor the core its executors).
_lazy_getattr, __dir__ = _lazy_names(__name__, {"create_app": "agentgym.server.app",
                                                "EnvServer": "agentgym.server.core"}, __all__)
__getattr__ = _module_aliases(__name__, {"ServerSettings": "ServerConfig"}, _lazy_getattr)
