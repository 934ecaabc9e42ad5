"""``agentgym mcp ENV_ID``: an env's tools as an MCP server (stdio or streamable HTTP)."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from agentgym.cli._front_door import (
    EnvCalls, EnvKwargs, EnvWorkers, Host, Imports, LogLevel, MaxRequestBytes, MaxSessions, MaxSessionsPerClient,
    Port, PresetsFile, RequestTimeout, RewardPresets, SessionTtl, Token, TokenFile, TokenOut, read_tokens,
    require_extra, serve_uvicorn, server_config, with_tokens,
)
from agentgym.errors import ConfigError

__all__ = ["mcp"]


def mcp(
    env_id: Annotated[str, typer.Argument(help="The env whose tools are served, e.g. TravelPlanner-v0.")],
    transport: Annotated[str, typer.Option(help="stdio (an MCP client starts this command) or http "
                                           "(streamable HTTP at /mcp).")] = "stdio",
    host: Host = "127.0.0.1",
    port: Port = 8001,
    token: Token = None,
    token_file: TokenFile = None,
    token_out: TokenOut = None,
    presets: PresetsFile = None,
    env_kwarg: EnvKwargs = None,
    reward_preset: RewardPresets = None,
    import_: Imports = None,
    max_sessions: MaxSessions = 256,
    max_sessions_per_client: MaxSessionsPerClient = None,
    session_ttl: SessionTtl = 600.0,
    request_timeout: RequestTimeout = 30.0,
    env_calls: EnvCalls = "processes",
    env_workers: EnvWorkers = None,
    max_request_bytes: MaxRequestBytes = 8 * 1024 * 1024,
    log_level: LogLevel = "warning",
) -> None:
    """Serve an env's tools over MCP (stdio or streamable HTTP): one episode per MCP session.

    The same presets, trust boundary and limits as serve; the host, port and token flags are for http.
    """
    require_extra("mcp", ("mcp", "starlette", "uvicorn"))
    if transport not in ("stdio", "http"):
        raise typer.BadParameter(f"{transport!r}; expected stdio or http", param_hint="--transport")
    flags = dict(max_sessions=max_sessions, max_sessions_per_client=max_sessions_per_client, session_ttl=session_ttl,
                 request_timeout=request_timeout, env_calls=env_calls, env_workers=env_workers,
                 max_request_bytes=max_request_bytes)
    from agentgym.server import mcp_app

    try:
        if transport == "stdio":  # the client started this process: it is the only one talking to it
            config = server_config([env_id], presets, env_kwarg, reward_preset, import_, insecure_no_auth=True,
                                   **flags)
            asyncio.run(mcp_app.run_stdio(config, env_id))
            return
        config = server_config([env_id], presets, env_kwarg, reward_preset, import_, read_tokens(token, token_file),
                               **flags)
        config, auth = with_tokens(config, host, port, token_out, no_auth_flag=False)
        app = mcp_app.create_mcp_app(config, env_id, host=host)
    except ConfigError as exc:
        raise typer.BadParameter(str(exc)) from None
    typer.echo(f"agentgym MCP server for {env_id} on http://{host}:{port}/mcp ({auth})", err=True)
    serve_uvicorn(app, config.header_timeout_s, host=host, port=port, log_level=log_level)
