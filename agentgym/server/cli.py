"""``agentgym serve``: run the env server with uvicorn."""

from __future__ import annotations

import importlib
import ipaddress
from pathlib import Path
from typing import Annotated

import typer

from agentgym.errors import DependencyNotInstalled
from agentgym.server.settings import TOKENS_ENV_VAR, ServerSettings

__all__ = ["serve"]


def serve(
    host: Annotated[str, typer.Option(help="Interface to bind; 0.0.0.0 to serve other machines (needs a token).")]
    = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    token: Annotated[list[str] | None, typer.Option(
        help=f"Accepted bearer token, one per client (repeat). Default: ${TOKENS_ENV_VAR}, comma-separated.")] = None,
    token_file: Annotated[Path | None, typer.Option(help="A file of tokens, one per line.")] = None,
    env: Annotated[list[str] | None, typer.Option(
        "--env", help="Env id clients may create (repeat). Default: every agentgym env.")] = None,
    import_: Annotated[list[str] | None, typer.Option(
        "--import", help="Module to import first, e.g. one that registers your own envs (repeat).")] = None,
    max_sessions: Annotated[int, typer.Option(help="Open sessions across all clients.")] = 256,
    max_sessions_per_client: Annotated[int | None, typer.Option(help="Open sessions per token.")] = None,
    session_ttl: Annotated[float, typer.Option(help="Idle seconds before a session is closed.")] = 600.0,
    max_request_bytes: Annotated[int, typer.Option(help="Largest request body; larger ones get 413.")]
    = 8 * 1024 * 1024,
    request_timeout: Annotated[float, typer.Option(help="Longest reset/step/close, in seconds (504).")] = 30.0,
    create_timeout: Annotated[float, typer.Option(help="Longest env construction, in seconds.")] = 120.0,
    env_calls: Annotated[str, typer.Option(
        help="Where reset/step run: auto (inline on the event loop until a session's calls prove slow), "
             "inline, or threads (for envs that wait on I/O).")] = "auto",
    env_threads: Annotated[int, typer.Option(help="Threads for env creation, closing and non-inline calls.")] = 8,
    keep_alive: Annotated[int, typer.Option(help="Seconds an idle client connection stays open.")] = 75,
    log_level: Annotated[str, typer.Option(help="uvicorn log level (as serve-retriever's).")] = "info",
    insecure_no_auth: Annotated[bool, typer.Option(
        help="Serve a non-loopback interface without tokens (anyone who can connect can run envs).")] = False,
) -> None:
    """Serve agentgym envs over HTTP: sessions with reset/step/close, auth, limits, /health, /metrics."""
    try:
        import uvicorn
    except ImportError:
        raise DependencyNotInstalled("the env server needs uvicorn: pip install 'agentgym[server]'") from None
    for module in import_ or ():
        importlib.import_module(module)
    tokens = list(token or [])
    if token_file is not None:
        tokens += [line.strip() for line in token_file.read_text().splitlines() if line.strip()]
    settings = ServerSettings.with_env_tokens(
        tokens=tuple(tokens), env_ids=tuple(env) if env else None, max_sessions=max_sessions,
        max_sessions_per_client=max_sessions_per_client, session_ttl_s=session_ttl,
        max_request_bytes=max_request_bytes, request_timeout_s=request_timeout, create_timeout_s=create_timeout,
        env_calls=env_calls, env_threads=env_threads)
    if not settings.tokens and not _is_loopback(host) and not insecure_no_auth:
        raise typer.BadParameter(f"serving {host} without a token would let anyone run envs here; pass --token, "
                                 f"set ${TOKENS_ENV_VAR}, or --insecure-no-auth", param_hint="--host")
    from agentgym.server.app import create_app

    auth = f"{len(settings.tokens)} token(s)" if settings.tokens else "no auth"
    typer.echo(f"agentgym env server on http://{host}:{port} ({auth}; envs: {', '.join(create_app_env_ids(settings))})",
               err=True)
    # No proxy-header rewriting: the server never uses the client's address.
    uvicorn.run(create_app(settings), host=host, port=port, log_level=log_level, access_log=False,
                timeout_keep_alive=keep_alive, proxy_headers=False)


def create_app_env_ids(settings: ServerSettings) -> tuple[str, ...]:
    from agentgym.core.registration import ENV_IDS

    return settings.env_ids or ENV_IDS


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
