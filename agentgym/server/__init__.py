"""Serve agentgym envs over HTTP to other processes and machines: ``agentgym serve``.

    agentgym serve --host 0.0.0.0 --port 8000 --presets presets.yaml   # tokens from $AGENTGYM_SERVER_TOKENS
    env = agentgym.remote.RemoteEnv("http://host:8000", "TravelPlanner-v0", token="...", preset="tp-train")

``create_app(config)`` builds the ASGI app (needs ``pip install 'agentgym-rl[server]'``); it speaks
the wire format of ``agentgym.remote.protocol``, as the client does; ``presets`` and ``boundary`` what the
operator fixes and what a client may set; ``worker_pool`` the env worker processes. See
``docs/server.md`` (its "Security model" section for the trust boundary).
"""

from __future__ import annotations

from agentgym._deprecated import module_aliases as _module_aliases
from agentgym._lazy import lazy_names as _lazy_names
from agentgym.server.config import ServerConfig

__all__ = ["ServerConfig", "create_app", "EnvServer"]

# Lazy: importing the config must not need starlette.
_lazy_getattr, __dir__ = _lazy_names(__name__, dict.fromkeys(("create_app", "EnvServer"), "agentgym.server.app"),
                                     __all__)
__getattr__ = _module_aliases(__name__, {"ServerSettings": "ServerConfig"}, _lazy_getattr)
