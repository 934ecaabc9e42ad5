"""Serve agentgym envs over HTTP to other processes and machines: ``agentgym serve``.

    agentgym serve --host 0.0.0.0 --port 8000 --presets presets.yaml   # tokens from $AGENTGYM_SERVER_TOKENS
    env = agentgym.remote.RemoteEnv("http://host:8000", "TravelPlanner-v0", token="...", preset="tp-train")

``create_app(settings)`` builds the ASGI app (needs ``pip install 'agentgym[server]'``);
``protocol`` holds the wire format shared with the client; ``presets`` and ``boundary`` what the
operator fixes and what a client may set; ``workers`` the env worker processes. See
``docs/server.md`` (its "Security model" section for the trust boundary).
"""

from __future__ import annotations

from typing import Any

from agentgym.server.settings import ServerSettings

__all__ = ["ServerSettings", "create_app", "EnvServer"]


def __getattr__(name: str) -> Any:
    # Lazy: the client imports agentgym.server.protocol without starlette installed.
    if name in ("create_app", "EnvServer"):
        from agentgym.server import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
