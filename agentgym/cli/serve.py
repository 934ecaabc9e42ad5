"""``agentgym serve``: run the env server with uvicorn."""

from __future__ import annotations

import importlib
import ipaddress
import os
import secrets
from pathlib import Path
from typing import Annotated

import typer

from agentgym.cli._options import parse_env_kwargs
from agentgym.errors import ConfigError, DependencyNotInstalled
from agentgym.remote.protocol import default_token_path
from agentgym.server.config import TOKENS_ENV_VAR, ServerConfig
from agentgym.server.presets import EnvPreset, Presets, load_presets

__all__ = ["serve", "write_token_file"]

_TRUST_WARNING = """\
WARNING: --trust-clients: clients may pass ANY constructor kwargs. Anyone holding a token can then
read and overwrite files as this user (tasks=/corpus=/cache_dir=/index_dir= paths), make this
server send requests anywhere with its secrets (retriever=, judge base_url/api_key_env) and run
code (custom reward terms). Use it only for clients you would give a shell on this machine."""


def serve(
    host: Annotated[str, typer.Option(help="Interface to bind; 0.0.0.0 to serve other machines.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    token: Annotated[list[str] | None, typer.Option(
        help=f"Accepted bearer token, one per client (repeat). Default: ${TOKENS_ENV_VAR}, comma-separated; "
             "with neither, a random token is generated and written to --token-out.")] = None,
    token_file: Annotated[Path | None, typer.Option(help="A file of tokens, one per line.")] = None,
    token_out: Annotated[Path | None, typer.Option(
        help="Where a generated token is written (mode 0600). Default: $AGENTGYM_CACHE_DIR/server/token-PORT, "
             "where RemoteEnv looks for it.")] = None,
    presets: Annotated[Path | None, typer.Option(
        help="The operator's env presets (YAML or JSON): server-side paths, URLs, reward specs and secrets "
             "that clients choose among by name. See docs/server.md.")] = None,
    env: Annotated[list[str] | None, typer.Option(
        "--env", help="Env id clients may create (repeat). Default: those of --presets, else every agentgym env.")]
    = None,
    env_kwarg: Annotated[list[str] | None, typer.Option(
        "--env-kwarg", "-k", help="An operator kwarg KEY=VALUE (VALUE read as JSON when it parses) for every --env "
                                  "(a preset named after the env id); repeatable. Several envs with different "
                                  "kwargs: use --presets.")] = None,
    reward_preset: Annotated[list[str] | None, typer.Option(
        help="A built-in reward preset clients may pick by name (repeat). Default: all of them.")] = None,
    import_: Annotated[list[str] | None, typer.Option(
        "--import", help="Module to import first, e.g. one that registers your own envs (repeat).")] = None,
    max_sessions: Annotated[int, typer.Option(help="Open sessions across all clients.")] = 256,
    max_sessions_per_client: Annotated[int | None, typer.Option(
        help="Open sessions per token. Default: an equal share of --max-sessions.")] = None,
    session_ttl: Annotated[float, typer.Option(help="Idle seconds before a session is closed.")] = 600.0,
    max_request_bytes: Annotated[int, typer.Option(help="Largest request body; larger ones get 413.")]
    = 8 * 1024 * 1024,
    request_timeout: Annotated[float, typer.Option(help="Longest reset/step/close, in seconds (504).")] = 30.0,
    create_timeout: Annotated[float, typer.Option(help="Longest env construction, in seconds.")] = 120.0,
    header_timeout: Annotated[float, typer.Option(help="Seconds a client has to send a request's headers.")] = 10.0,
    body_timeout: Annotated[float, typer.Option(help="Seconds a client has to send a request's body (408).")] = 15.0,
    max_body_bytes_in_flight: Annotated[int, typer.Option(
        help="Bytes of large bodies (over 64 KiB) received and held at once across connections; past it, wait 1 s, "
             "then 503.")] = 16 * 1024 * 1024,
    max_body_bytes_in_flight_per_client: Annotated[int | None, typer.Option(
        help="Declared bytes of one token's large bodies in flight; past it, wait 1 s, then 429. Default: "
             "--max-request-bytes (one largest body at a time).")] = None,
    min_body_rate: Annotated[int, typer.Option(
        help="Bytes per second a body must keep up (each block within a second), else 408.")] = 32 * 1024,
    env_calls: Annotated[str, typer.Option(
        help="Where env calls run: processes (worker processes: no call can stall the server), or in this "
             "process for trusted single-user setups: auto, inline, threads.")] = "processes",
    env_workers: Annotated[int | None, typer.Option(
        help="Worker processes for --env-calls processes. Default: the CPU count, 2 to 8.")] = None,
    env_threads: Annotated[int, typer.Option(help="Threads for in-process env calls.")] = 8,
    keep_alive: Annotated[int, typer.Option(help="Seconds an idle client connection stays open.")] = 75,
    log_level: Annotated[str, typer.Option(help="uvicorn log level (as serve-retriever's).")] = "info",
    trust_clients: Annotated[bool, typer.Option(
        "--trust-clients",
        help="Let clients pass any constructor kwargs (paths, URLs, reward specs, custom code). Dangerous.")]
    = False,
    insecure_no_auth: Annotated[bool, typer.Option(
        "--insecure-no-auth", help="Serve without any token: every process that can connect may run envs.")] = False,
) -> None:
    """Serve agentgym envs over HTTP: sessions with reset/step/close, auth, limits, /health, /metrics."""
    try:
        import uvicorn
    except ImportError:
        raise DependencyNotInstalled("the env server needs uvicorn: pip install 'agentgym-rl[server]'") from None
    for module in import_ or ():
        importlib.import_module(module)
    tokens = list(token or [])
    if token_file is not None:
        tokens += [line.strip() for line in token_file.read_text().splitlines() if line.strip()]
    loaded = _presets(presets, reward_preset, env or [], env_kwarg or [])
    fields = dict(
        tokens=tuple(tokens), env_ids=tuple(env) if env else None, presets=loaded, trust_clients=trust_clients,
        insecure_no_auth=insecure_no_auth, imports=tuple(import_ or ()), max_sessions=max_sessions,
        max_sessions_per_client=max_sessions_per_client, session_ttl_s=session_ttl,
        max_request_bytes=max_request_bytes, request_timeout_s=request_timeout, create_timeout_s=create_timeout,
        header_timeout_s=header_timeout, body_timeout_s=body_timeout, max_body_bytes_in_flight=max_body_bytes_in_flight,
        max_body_bytes_in_flight_per_client=max_body_bytes_in_flight_per_client, min_body_bytes_per_s=min_body_rate,
        env_calls=env_calls, env_threads=env_threads)
    if env_workers is not None:
        fields["env_workers"] = env_workers
    try:
        server_config = ServerConfig.with_env_tokens(**fields)
    except ConfigError as exc:
        raise typer.BadParameter(str(exc)) from None
    auth = f"{len(server_config.tokens)} token(s)"
    if not server_config.tokens and insecure_no_auth:
        auth = "NO AUTH (--insecure-no-auth)"
    elif not server_config.tokens:
        if not _is_loopback(host):
            raise typer.BadParameter(f"serving {host} needs tokens its clients know: pass --token, set "
                                     f"${TOKENS_ENV_VAR}, or --insecure-no-auth", param_hint="--host")
        path = token_out or default_token_path(port)
        server_config = server_config.model_copy(update={"tokens": (write_token_file(path),)})
        auth = f"a generated token, in {path} (RemoteEnv on this machine reads it; else export " \
               f"AGENTGYM_REMOTE_TOKEN=$(cat {path}))"
    if trust_clients:
        typer.secho(_TRUST_WARNING, err=True, fg="red", bold=True)
    from agentgym.server.app import create_app
    from agentgym.server.http import uvicorn_config

    try:
        app = create_app(server_config)
    except ConfigError as exc:
        raise typer.BadParameter(str(exc)) from None
    envs = ", ".join(app.state.server.env_ids)
    typer.echo(f"agentgym env server on http://{host}:{port} ({auth}; envs: {envs})", err=True)
    from agentgym.server.budget import return_large_blocks

    return_large_blocks()  # large request bodies go back to the system once answered
    config = uvicorn_config(app, header_timeout_s=server_config.header_timeout_s, host=host, port=port,
                            log_level=log_level, timeout_keep_alive=keep_alive)
    uvicorn.Server(config).run()


def write_token_file(path: Path) -> str:
    """A new random token, written to ``path`` readable by this user only (mode 0600)."""
    token = secrets.token_urlsafe(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w") as out:
        os.fchmod(out.fileno(), 0o600)  # an existing file keeps its mode through O_CREAT: set it
        out.write(token + "\n")
    return token


def _presets(path: Path | None, reward_presets: list[str] | None, env_ids: list[str], pairs: list[str]) -> Presets:
    try:
        loaded = load_presets(path) if path is not None else Presets()
    except ConfigError as exc:
        raise typer.BadParameter(str(exc), param_hint="--presets") from None
    if reward_presets:
        loaded = loaded.model_copy(update={"reward_presets": tuple(reward_presets)})
    if pairs:
        if not env_ids:
            raise typer.BadParameter("--env-kwarg needs the --env ids it configures", param_hint="--env-kwarg")
        kwargs = parse_env_kwargs(pairs)
        flags = tuple(EnvPreset(name=env_id, env_id=env_id, kwargs=kwargs) for env_id in env_ids)
        loaded = loaded.model_copy(update={"presets": (*flags, *loaded.presets)})
    return loaded


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
