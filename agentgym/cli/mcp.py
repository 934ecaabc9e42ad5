"""``agentgym mcp ENV_ID``: an env's tools as an MCP server (stdio or streamable HTTP)."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from agentgym.cli._front_door import (
    EnvCalls, EnvKwargs, EnvWorkers, Imports, MaxRequestBytes, Presets, RewardPresets, front_door_fields,
    require_extra,
)
from agentgym.cli.serve import _is_loopback, write_token_file
from agentgym.errors import ConfigError
from agentgym.remote.protocol import default_token_path
from agentgym.server.config import TOKENS_ENV_VAR, ServerConfig

__all__ = ["mcp"]


def mcp(
    env_id: Annotated[str, typer.Argument(help="The env whose tools are served, e.g. TravelPlanner-v0.")],
    transport: Annotated[str, typer.Option(help="stdio (an MCP client starts this command) or http "
                                           "(streamable HTTP at /mcp).")] = "stdio",
    host: Annotated[str, typer.Option(help="Interface to bind (http).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port (http).")] = 8001,
    token: Annotated[list[str] | None, typer.Option(
        help=f"Accepted bearer token (http; repeat). Default: ${TOKENS_ENV_VAR}; with neither, one is generated "
             "and written to $AGENTGYM_CACHE_DIR/server/token-PORT.")] = None,
    presets: Presets = None,
    env_kwarg: EnvKwargs = None,
    reward_preset: RewardPresets = None,
    import_: Imports = None,
    max_sessions: Annotated[int, typer.Option(help="Open MCP sessions (and episodes) across all clients (503).")] = 256,
    max_sessions_per_client: Annotated[int | None, typer.Option(
        help="Open MCP sessions per token (http; 429). Default: an equal share of --max-sessions.")] = None,
    session_ttl: Annotated[float, typer.Option(help="Idle seconds before an episode is closed.")] = 600.0,
    request_timeout: Annotated[float, typer.Option(help="Longest tool call, in seconds.")] = 30.0,
    env_calls: EnvCalls = "processes",
    env_workers: EnvWorkers = None,
    max_request_bytes: MaxRequestBytes = 8 * 1024 * 1024,
    log_level: Annotated[str, typer.Option(help="uvicorn log level (http).")] = "warning",
) -> None:
    """Serve an env's tools over MCP (stdio or streamable HTTP): one episode per MCP session.

    The same presets, trust boundary and limits as serve.
    """
    require_extra("mcp", ("mcp", "starlette", "uvicorn"))
    if transport not in ("stdio", "http"):
        raise typer.BadParameter(f"{transport!r}; expected stdio or http", param_hint="--transport")
    fields = front_door_fields(env_id, presets, env_kwarg, reward_preset, import_, max_sessions, session_ttl,
                               request_timeout, env_calls, env_workers)
    fields["max_request_bytes"] = max_request_bytes
    fields["max_sessions_per_client"] = max_sessions_per_client
    from agentgym.server import mcp_app

    try:
        if transport == "stdio":  # the client started this process: it is the only one talking to it
            asyncio.run(mcp_app.run_stdio(ServerConfig(insecure_no_auth=True, **fields), env_id))
            return
        server_config = ServerConfig.with_env_tokens(tokens=tuple(token or ()), **fields)
        if not server_config.tokens:
            if not _is_loopback(host):
                raise typer.BadParameter(f"serving {host} needs tokens its clients know: pass --token or set "
                                         f"${TOKENS_ENV_VAR}", param_hint="--host")
            path = default_token_path(port)
            server_config = server_config.model_copy(update={"tokens": (write_token_file(path),)})
            typer.echo(f"token written to {path}", err=True)
        app = mcp_app.create_mcp_app(server_config, env_id, host=host)
    except ConfigError as exc:
        raise typer.BadParameter(str(exc)) from None
    import uvicorn

    from agentgym.server.http import uvicorn_config

    typer.echo(f"agentgym MCP server for {env_id} on http://{host}:{port}/mcp", err=True)
    uvicorn.Server(uvicorn_config(app, header_timeout_s=server_config.header_timeout_s, host=host, port=port,
                                  log_level=log_level)).run()
