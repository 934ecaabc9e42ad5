"""``agentgym openenv ENV_ID``: an env as an OpenEnv environment, on OpenEnv's own server."""

from __future__ import annotations

from typing import Annotated

import typer

from agentgym.cli._front_door import (
    EnvCalls, EnvKwargs, EnvWorkers, Host, Imports, LogLevel, MaxRequestBytes, MaxSessions, Port, PresetsFile,
    RequestTimeout, RewardPresets, SessionTtl, is_loopback, require_extra, serve_uvicorn, server_config,
)
from agentgym.errors import ConfigError

__all__ = ["openenv"]


def openenv(
    env_id: Annotated[str, typer.Argument(help="The env to serve, e.g. SearchQA-v0.")],
    host: Host = "127.0.0.1",
    port: Port = 8002,
    presets: PresetsFile = None,
    env_kwarg: EnvKwargs = None,
    reward_preset: RewardPresets = None,
    import_: Imports = None,
    max_sessions: MaxSessions = 256,
    session_ttl: SessionTtl = 600.0,
    request_timeout: RequestTimeout = 30.0,
    env_calls: EnvCalls = "processes",
    env_workers: EnvWorkers = None,
    max_request_bytes: MaxRequestBytes = 8 * 1024 * 1024,
    insecure_no_auth: Annotated[bool, typer.Option(
        "--insecure-no-auth", help="Bind an interface other machines reach, although OpenEnv's protocol has no "
                                   "tokens: only behind a proxy that checks them.")] = False,
    log_level: LogLevel = "warning",
) -> None:
    """Serve an env as an OpenEnv environment, on OpenEnv's own server.

    Its /ws sessions, /reset, /step, /state, and the splits and tasks of its task routes (openenv 0.10);
    the same presets, trust boundary and limits as serve.
    """
    require_extra("openenv", ("openenv", "starlette", "uvicorn"))
    if not is_loopback(host) and not insecure_no_auth:
        raise typer.BadParameter(f"OpenEnv's protocol carries no token: serving {host} lets anyone who can "
                                 "connect run envs; pass --insecure-no-auth behind a proxy that checks tokens",
                                 param_hint="--host")
    config = server_config([env_id], presets, env_kwarg, reward_preset, import_, insecure_no_auth=True,
                           max_sessions=max_sessions, session_ttl=session_ttl, request_timeout=request_timeout,
                           env_calls=env_calls, env_workers=env_workers, max_request_bytes=max_request_bytes)
    from agentgym.server.openenv_app import create_openenv_app

    try:
        app = create_openenv_app(config, env_id)
    except ConfigError as exc:
        raise typer.BadParameter(str(exc)) from None
    typer.echo(f"agentgym OpenEnv server for {env_id} on http://{host}:{port} (no tokens: OpenEnv has none)",
               err=True)
    serve_uvicorn(app, config.header_timeout_s, host=host, port=port, log_level=log_level,
                  ws_max_size=config.max_request_bytes)
