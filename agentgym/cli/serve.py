"""``agentgym serve``: run the env server with uvicorn."""

from __future__ import annotations

from typing import Annotated

import typer

from agentgym.cli._front_door import (
    BodyTimeout, EnvCalls, EnvKwargs, EnvWorkers, HeaderTimeout, Host, Imports, LogLevel, MaxRequestBytes,
    MaxSessions, MaxSessionsPerClient, Port, PresetsFile, RequestTimeout, RewardPresets, SessionTtl, Token, TokenFile,
    TokenOut, read_tokens, serve_uvicorn, server_config, with_tokens, write_token_file,
)
from agentgym.errors import ConfigError, DependencyNotInstalled

__all__ = ["serve", "write_token_file"]

_TRUST_WARNING = """\
WARNING: --trust-clients: clients may pass ANY constructor kwargs. Anyone holding a token can then
read and overwrite files as this user (tasks=/corpus=/cache_dir=/index_dir= paths), make this
server send requests anywhere with its secrets (retriever=, judge base_url/api_key_env) and run
code (custom reward terms). Use it only for clients you would give a shell on this machine."""


def serve(
    host: Host = "127.0.0.1",
    port: Port = 8000,
    token: Token = None,
    token_file: TokenFile = None,
    token_out: TokenOut = None,
    presets: PresetsFile = None,
    env: Annotated[list[str] | None, typer.Option(
        "--env", help="Env id clients may create (repeat). Default: those of --presets, else every agentgym env.")]
    = None,
    env_kwarg: EnvKwargs = None,
    reward_preset: RewardPresets = None,
    import_: Imports = None,
    max_sessions: MaxSessions = 256,
    max_sessions_per_client: MaxSessionsPerClient = None,
    session_ttl: SessionTtl = 600.0,
    max_request_bytes: MaxRequestBytes = 8 * 1024 * 1024,
    request_timeout: RequestTimeout = 30.0,
    create_timeout: Annotated[float, typer.Option(help="Longest env construction, in seconds.")] = 120.0,
    header_timeout: HeaderTimeout = 10.0,
    body_timeout: BodyTimeout = 15.0,
    max_body_bytes_in_flight: Annotated[int, typer.Option(
        help="Bytes of large bodies (over 64 KiB) received and held at once across connections; past it, wait 1 s, "
             "then 503.")] = 16 * 1024 * 1024,
    max_body_bytes_in_flight_per_client: Annotated[int | None, typer.Option(
        help="Declared bytes of one token's large bodies in flight; past it, wait 1 s, then 429. Default: "
             "--max-request-bytes (one largest body at a time).")] = None,
    min_body_rate: Annotated[int, typer.Option(
        help="Bytes per second a body must keep up (each block within a second), else 408.")] = 32 * 1024,
    env_calls: EnvCalls = "processes",
    env_workers: EnvWorkers = None,
    env_threads: Annotated[int, typer.Option(help="Threads for in-process env calls.")] = 8,
    keep_alive: Annotated[int, typer.Option(help="Seconds an idle client connection stays open.")] = 75,
    log_level: LogLevel = "info",
    trust_clients: Annotated[bool, typer.Option(
        "--trust-clients",
        help="Let clients pass any constructor kwargs (paths, URLs, reward specs, custom code). Dangerous.")]
    = False,
    insecure_no_auth: Annotated[bool, typer.Option(
        "--insecure-no-auth", help="Serve without any token: every process that can connect may run envs.")] = False,
) -> None:
    """Serve agentgym envs over HTTP: sessions with reset/step/close, auth, limits, /health, /metrics."""
    try:
        import uvicorn  # noqa: F401
    except ImportError:
        raise DependencyNotInstalled("the env server needs uvicorn: pip install 'agentgym-rl[server]'") from None
    config = server_config(
        env, presets, env_kwarg, reward_preset, import_, read_tokens(token, token_file), trust_clients=trust_clients,
        insecure_no_auth=insecure_no_auth, max_sessions=max_sessions, max_sessions_per_client=max_sessions_per_client,
        session_ttl=session_ttl, max_request_bytes=max_request_bytes, request_timeout=request_timeout,
        create_timeout=create_timeout, header_timeout=header_timeout, body_timeout=body_timeout,
        max_body_bytes_in_flight=max_body_bytes_in_flight,
        max_body_bytes_in_flight_per_client=max_body_bytes_in_flight_per_client, min_body_rate=min_body_rate,
        env_calls=env_calls, env_workers=env_workers, env_threads=env_threads)
    config, auth = with_tokens(config, host, port, token_out)
    if trust_clients:
        typer.secho(_TRUST_WARNING, err=True, fg="red", bold=True)
    from agentgym.server.app import create_app

    try:
        app = create_app(config)
    except ConfigError as exc:
        raise typer.BadParameter(str(exc)) from None
    envs = ", ".join(app.state.server.env_ids)
    typer.echo(f"agentgym env server on http://{host}:{port} ({auth}; envs: {envs})", err=True)
    from agentgym.server.budget import return_large_blocks

    return_large_blocks()  # large request bodies go back to the system once answered
    serve_uvicorn(app, config.header_timeout_s, host=host, port=port, log_level=log_level,
                  timeout_keep_alive=keep_alive)
