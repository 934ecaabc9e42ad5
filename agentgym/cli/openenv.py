"""``agentgym openenv ENV_ID``: an env as an OpenEnv environment, on OpenEnv's own server."""

from __future__ import annotations

from typing import Annotated

import typer

from agentgym.cli._front_door import (
    EnvCalls, EnvKwargs, EnvWorkers, Imports, MaxRequestBytes, Presets, RewardPresets, front_door_fields,
    require_extra,
)
from agentgym.cli.serve import _is_loopback
from agentgym.errors import ConfigError
from agentgym.server.config import ServerConfig

__all__ = ["openenv"]


def openenv(
    env_id: Annotated[str, typer.Argument(help="The env to serve, e.g. SearchQA-v0.")],
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8002,
    presets: Presets = None,
    env_kwarg: EnvKwargs = None,
    reward_preset: RewardPresets = None,
    import_: Imports = None,
    max_sessions: Annotated[int, typer.Option(help="Concurrent OpenEnv sessions.")] = 256,
    session_ttl: Annotated[float, typer.Option(help="Idle seconds before a session's env is closed.")] = 600.0,
    request_timeout: Annotated[float, typer.Option(help="Longest reset or step, in seconds.")] = 30.0,
    env_calls: EnvCalls = "processes",
    env_workers: EnvWorkers = None,
    max_request_bytes: MaxRequestBytes = 8 * 1024 * 1024,
    insecure_no_auth: Annotated[bool, typer.Option(
        "--insecure-no-auth", help="Bind an interface other machines reach, although OpenEnv's protocol has no "
                                   "tokens: only behind a proxy that checks them.")] = False,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "warning",
) -> None:
    """Serve an env as an OpenEnv environment, on OpenEnv's own server.

    Its /ws sessions, /reset, /step, /state, and the splits and tasks of its task routes (openenv 0.10);
    the same presets, trust boundary and limits as serve.
    """
    require_extra("openenv", ("openenv", "starlette", "uvicorn"))
    if not _is_loopback(host) and not insecure_no_auth:
        raise typer.BadParameter(f"OpenEnv's protocol carries no token: serving {host} lets anyone who can "
                                 "connect run envs; pass --insecure-no-auth behind a proxy that checks tokens",
                                 param_hint="--host")
    fields = front_door_fields(env_id, presets, env_kwarg, reward_preset, import_, max_sessions, session_ttl,
                               request_timeout, env_calls, env_workers)
    fields["max_request_bytes"] = max_request_bytes
    from agentgym.server.openenv_app import create_openenv_app

    try:
        app = create_openenv_app(ServerConfig(insecure_no_auth=True, **fields), env_id)
    except ConfigError as exc:
        raise typer.BadParameter(str(exc)) from None
    import uvicorn

    from agentgym.server.http import uvicorn_config

    typer.echo(f"agentgym OpenEnv server for {env_id} on http://{host}:{port} (no tokens: OpenEnv has none)",
               err=True)
    config = app.state.server.config
    uvicorn.Server(uvicorn_config(app, header_timeout_s=config.header_timeout_s, host=host, port=port,
                                  log_level=log_level, ws_max_size=config.max_request_bytes)).run()
