"""Serve agentgym envs over HTTP to other processes and machines: ``agentgym serve``.

    agentgym serve --host 0.0.0.0 --port 8000 --presets presets.yaml   # tokens from $AGENTGYM_SERVER_TOKENS
    env = agentgym.remote.RemoteEnv("http://host:8000", "TravelPlanner-v0", token="...", preset="tp-train")

``create_app(settings)`` builds the ASGI app (needs ``pip install 'agentgym[server]'``); it speaks
the wire format of ``agentgym.remote.protocol``, as the client does; ``presets`` and ``boundary`` what the
operator fixes and what a client may set; ``workers`` the env worker processes. See
``docs/server.md`` (its "Security model" section for the trust boundary).
"""

from __future__ import annotations

from agentgym._lazy import lazy_names as _lazy_names
from agentgym.server.settings import ServerSettings

__all__ = ["ServerSettings", "create_app", "EnvServer"]

# Lazy: importing the settings must not need starlette.
__getattr__, __dir__ = _lazy_names(__name__, dict.fromkeys(("create_app", "EnvServer"), "agentgym.server.app"),
                                  __all__)
