"""Envs on an env server, and the wire format they speak: ``RemoteEnv``, ``AsyncRemoteEnv``.

    from agentgym.remote import RemoteEnv
    env = RemoteEnv("http://127.0.0.1:8000", "TravelPlanner-v0", token="s3cret")

``client`` holds the two clients; ``protocol`` the wire format that the client and the server
(``agentgym serve``, ``agentgym.server``) both speak, so neither imports the other.
"""

from __future__ import annotations

from agentgym._lazy import lazy_names as _lazy_names

__all__ = ["RemoteEnv", "AsyncRemoteEnv", "TOKEN_ENV_VAR"]

# Lazy: the server imports ``protocol`` without loading the client.
__getattr__, __dir__ = _lazy_names(__name__, dict.fromkeys(__all__, "agentgym.remote.client"), __all__)
