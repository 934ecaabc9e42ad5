"""What ``agentgym mcp`` and ``agentgym openenv`` share: the operator's flags for one env, as serve's."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from agentgym.cli.serve import _presets
from agentgym.errors import DependencyNotInstalled

__all__ = ["Presets", "EnvKwargs", "RewardPresets", "Imports", "EnvCalls", "EnvWorkers", "MaxRequestBytes",
           "front_door_fields", "require_extra"]

Presets = Annotated[Path | None, typer.Option(help="The operator's env presets (as agentgym serve's).")]
EnvKwargs = Annotated[list[str] | None, typer.Option(
    "--env-kwarg", "-k", help="An operator kwarg KEY=VALUE for the env (as agentgym serve's).")]
RewardPresets = Annotated[list[str] | None, typer.Option(
    help="A built-in reward preset clients may pick by name (repeat). Default: all of them.")]
Imports = Annotated[list[str] | None, typer.Option(
    "--import", help="Module to import first, e.g. one that registers your own envs (repeat).")]
EnvCalls = Annotated[str, typer.Option(help="Where env calls run (as agentgym serve's).")]
EnvWorkers = Annotated[int | None, typer.Option(help="Worker processes for --env-calls processes.")]
MaxRequestBytes = Annotated[int, typer.Option(help="Largest request body or message (413), as agentgym serve's.")]


def front_door_fields(env_id: str, presets: Path | None, env_kwarg: list[str] | None,
                      reward_preset: list[str] | None, import_: list[str] | None, max_sessions: int,
                      session_ttl: float, request_timeout: float, env_calls: str,
                      env_workers: int | None) -> dict[str, Any]:
    """The ``ServerConfig`` fields a front door for one env takes from its flags (as serve's)."""
    for module in import_ or ():
        importlib.import_module(module)
    fields: dict[str, Any] = dict(
        env_ids=(env_id,), presets=_presets(presets, reward_preset, [env_id], env_kwarg or []),
        imports=tuple(import_ or ()), max_sessions=max_sessions, session_ttl_s=session_ttl,
        request_timeout_s=request_timeout, env_calls=env_calls)
    if env_workers is not None:
        fields["env_workers"] = env_workers
    return fields


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
