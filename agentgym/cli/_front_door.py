"""What the server commands share: their flags, each written once, and how they become a ``ServerConfig``.

``agentgym serve``, ``mcp`` and ``openenv`` (and ``serve-retriever``, for the flags it has too) take
these annotated types; a command's own defaults stay in its signature (``port: Port = 8001``).
"""

from __future__ import annotations

import importlib
import ipaddress
import os
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from agentgym.cli._options import parse_env_kwargs
from agentgym.errors import ConfigError, DependencyNotInstalled
from agentgym.remote.protocol import default_token_path
from agentgym.server.config import TOKENS_ENV_VAR, ServerConfig
from agentgym.server.presets import EnvPreset, Presets, load_presets

__all__ = ["Host", "Port", "Token", "TokenFile", "TokenOut", "PresetsFile", "EnvKwargs", "RewardPresets", "Imports",
           "MaxSessions", "MaxSessionsPerClient", "SessionTtl", "MaxRequestBytes", "RequestTimeout",
           "HeaderTimeout", "BodyTimeout", "EnvCalls", "EnvWorkers", "LogLevel", "server_config", "with_tokens",
           "read_tokens", "presets_from_flags", "write_token_file", "is_loopback", "serve_uvicorn", "require_extra"]

Host = Annotated[str, typer.Option(help="Interface to bind; 0.0.0.0 to serve other machines.")]
Port = Annotated[int, typer.Option(help="TCP port.")]
Token = Annotated[list[str] | None, typer.Option(
    help=f"Accepted bearer token, one per client (repeat). Default: ${TOKENS_ENV_VAR}, comma-separated; "
         "with neither, a random token is generated and written to --token-out.")]
TokenFile = Annotated[Path | None, typer.Option(help="A file of tokens, one per line.")]
TokenOut = Annotated[Path | None, typer.Option(
    help="Where a generated token is written (mode 0600). Default: $AGENTGYM_CACHE_DIR/server/token-PORT, "
         "where RemoteEnv looks for it.")]
PresetsFile = Annotated[Path | None, typer.Option(
    "--presets", help="The operator's env presets (YAML or JSON): server-side paths, URLs, reward specs and "
                      "secrets that clients choose among by name. See docs/server.md.")]
EnvKwargs = Annotated[list[str] | None, typer.Option(
    "--env-kwarg", "-k", help="An operator kwarg KEY=VALUE (VALUE read as JSON when it parses) for each served env "
                              "(a preset named after the env id); repeatable. Several envs with different kwargs: "
                              "use --presets.")]
RewardPresets = Annotated[list[str] | None, typer.Option(
    help="A built-in reward preset clients may pick by name (repeat). Default: all of them.")]
Imports = Annotated[list[str] | None, typer.Option(
    "--import", help="Module to import first, e.g. one that registers your own envs (repeat).")]
MaxSessions = Annotated[int, typer.Option(help="Open sessions across all clients (503 past it).")]
MaxSessionsPerClient = Annotated[int | None, typer.Option(
    help="Open sessions per token (429 past it). Default: an equal share of --max-sessions.")]
SessionTtl = Annotated[float, typer.Option(help="Idle seconds before a session is closed.")]
MaxRequestBytes = Annotated[int, typer.Option(help="Largest request body or message; larger ones get 413.")]
RequestTimeout = Annotated[float, typer.Option(help="Longest reset/step/close, in seconds (504).")]
HeaderTimeout = Annotated[float, typer.Option(help="Seconds a client has to send a request's headers.")]
BodyTimeout = Annotated[float, typer.Option(help="Seconds a client has to send a request's body (408).")]
EnvCalls = Annotated[str, typer.Option(
    help="Where env calls run: processes (worker processes: no call can stall the server), or in this "
         "process for trusted single-user setups: auto, inline, threads.")]
EnvWorkers = Annotated[int | None, typer.Option(
    help="Worker processes for --env-calls processes. Default: the CPU count, 2 to 8.")]
LogLevel = Annotated[str, typer.Option(help="uvicorn log level.")]

_FIELDS = {"session_ttl": "session_ttl_s", "request_timeout": "request_timeout_s", "create_timeout": "create_timeout_s",
           "header_timeout": "header_timeout_s", "body_timeout": "body_timeout_s",
           "min_body_rate": "min_body_bytes_per_s"}
"""A flag's ``ServerConfig`` field, where their names differ (the flags drop the unit)."""


def server_config(env_ids: Sequence[str] | None, presets: Path | None, env_kwarg: list[str] | None,
                  reward_preset: list[str] | None, import_: list[str] | None, tokens: Sequence[str] | None = None,
                  **flags: Any) -> ServerConfig:
    """The ``ServerConfig`` of a command's flags: a flag left at None keeps the field's default, and
    ``tokens`` (the token flags' ones) default to ``$AGENTGYM_SERVER_TOKENS`` (None: a door without
    tokens). Its mistakes are usage errors naming the field."""
    for module in import_ or ():
        importlib.import_module(module)
    fields = {_FIELDS.get(name, name): value for name, value in flags.items() if value is not None}
    try:
        fields.update(env_ids=tuple(env_ids) if env_ids else None, imports=tuple(import_ or ()),
                      presets=presets_from_flags(presets, reward_preset, list(env_ids or ()), env_kwarg or []))
        if tokens is None:
            return ServerConfig(**fields)
        return ServerConfig.with_env_tokens(tokens=tuple(tokens), **fields)
    except ConfigError as exc:
        raise typer.BadParameter(str(exc)) from None


def with_tokens(config: ServerConfig, host: str, port: int, token_out: Path | None = None, *,
                no_auth_flag: bool = True) -> tuple[ServerConfig, str]:
    """``config``, with a generated token when it has none and serves loopback, and how clients
    authenticate (for the start-up line). Serving another interface without a token is a usage error
    (``no_auth_flag``: the command has ``--insecure-no-auth`` to name as the way out)."""
    if config.tokens:
        return config, f"{len(config.tokens)} token(s)"
    if config.insecure_no_auth:
        return config, "NO AUTH (--insecure-no-auth)"
    if not is_loopback(host):
        ways = f"pass --token, set ${TOKENS_ENV_VAR}, or --insecure-no-auth" if no_auth_flag else \
            f"pass --token or set ${TOKENS_ENV_VAR}"
        raise typer.BadParameter(f"serving {host} needs tokens its clients know: {ways}", param_hint="--host")
    path = token_out or default_token_path(port)
    config = config.model_copy(update={"tokens": (write_token_file(path),)})
    return config, (f"a generated token, in {path} (RemoteEnv on this machine reads it; else export "
                    f"AGENTGYM_REMOTE_TOKEN=$(cat {path}))")


def read_tokens(token: list[str] | None, token_file: Path | None) -> list[str]:
    """The tokens of ``--token`` and ``--token-file``."""
    tokens = list(token or [])
    if token_file is not None:
        tokens += [line.strip() for line in token_file.read_text().splitlines() if line.strip()]
    return tokens


def write_token_file(path: Path) -> str:
    """A new random token, written to ``path`` readable by this user only (mode 0600)."""
    token = secrets.token_urlsafe(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w") as out:
        os.fchmod(out.fileno(), 0o600)  # an existing file keeps its mode through O_CREAT: set it
        out.write(token + "\n")
    return token


def presets_from_flags(path: Path | None, reward_presets: list[str] | None, env_ids: list[str],
                       pairs: list[str]) -> Presets:
    """The operator's presets: ``--presets``, with ``--reward-preset`` and a preset per env of ``--env-kwarg``."""
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


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve_uvicorn(app: Any, header_timeout_s: float, **options: Any) -> None:
    """Run ``app`` with uvicorn as the server commands do (``agentgym.server.http``), until stopped."""
    import uvicorn

    from agentgym.server.http import uvicorn_config

    uvicorn.Server(uvicorn_config(app, header_timeout_s=header_timeout_s, **options)).run()


def require_extra(command: str, modules: Sequence[str]) -> None:
    """Name the command's own extra (``agentgym-rl[mcp]`` for ``agentgym mcp``), which brings all of
    ``modules``, when any is missing: not the extra of whichever deeper import fails first
    (``[server]``, which lacks the SDKs)."""
    missing = []
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(_PACKAGES.get(module, module))
    if missing:
        raise DependencyNotInstalled(f"agentgym {command} needs {', '.join(missing)}: "
                                     f"pip install 'agentgym-rl[{command}]'")


_PACKAGES = {"openenv": "openenv-core"}  # distribution names where they differ from the module's
