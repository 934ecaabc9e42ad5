"""The ``agentgym`` command line.

Each command group is a module of this package (``agentgym.cli.run`` for ``agentgym run``, ...),
the only place that imports typer, and is imported only when it runs (or its own ``--help`` is
asked for): ``agentgym --help`` reads the one-line summaries below and loads no
env, retriever, HTTP client or plotting code. ``tests/cli/test_cli.py`` checks that each summary
matches its command's docstring.

Help and messages are plain text (no Rich markup), so square brackets such as
``agentgym-rl[plot]`` or ``[min, max]`` print as written.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, NamedTuple

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup

__all__ = ["app", "main", "COMMANDS", "EXIT_MISSING_EXTRA"]


class LazyCommand(NamedTuple):
    target: str
    """``module:attribute``: a command function, or a ``typer.Typer`` for a command group."""
    summary: str
    """The line ``agentgym --help`` shows: the first line of the command's docstring."""
    context_settings: dict[str, Any] | None = None
    usage_extra: str = ""
    """Appended to the usage line, e.g. the Hydra overrides ``train`` passes on."""


# The order is the order of ``agentgym --help``.
COMMANDS: dict[str, LazyCommand] = {
    "demo": LazyCommand("agentgym.cli.demo:demo", "Play TravelPlanner and SearchQA episodes offline and show "
                        "metrics, constraints and rewards."),
    "list": LazyCommand("agentgym.cli.list:list_command", "List the env ids, reward presets and terms, and training recipes."),
    "run": LazyCommand("agentgym.cli.run:run", "Evaluate an agent on an env: progress, results.jsonl "
                       "(resumable), a metrics table and a plot."),
    "rewards": LazyCommand("agentgym.cli.rewards:rewards_app", "Measure reward specs before training: compare "
                           "their signal over groups of rollouts, probe them for hacks."),
    "eval": LazyCommand("agentgym.cli.eval:eval_app", "Score submissions with an env's official evaluator."),
    "travelplanner": LazyCommand("agentgym.cli.travelplanner:travelplanner_app",
                                 "TravelPlanner worlds and tasks."),
    "serve": LazyCommand("agentgym.cli.serve:serve", "Serve agentgym envs over HTTP: sessions with "
                         "reset/step/close, auth, limits, /health, /metrics."),
    "mcp": LazyCommand("agentgym.cli.mcp:mcp", "Serve an env's tools over MCP (stdio or streamable HTTP): one "
                       "episode per MCP session."),
    "openenv": LazyCommand("agentgym.cli.openenv:openenv", "Serve an env as an OpenEnv environment, on OpenEnv's "
                           "own server."),
    "serve-retriever": LazyCommand("agentgym.cli.serve_retriever:serve_retriever",
                                   "Serve a corpus over the Search-R1 /retrieve API, with BM25 or a dense e5 retriever."),
    "verl": LazyCommand("agentgym.cli.verl:verl_app",
                        "verl 0.9 integration: training data and recipes."),
    "train": LazyCommand("agentgym.cli.verl:train", "Train a bundled recipe: verl (grpo, planner_r1, "
                         "prs_vspo) or TRL (trl_searchqa, trl_travelplanner, trl_planner_r1), plus overrides "
                         "KEY=VALUE.",
                         {"allow_extra_args": True, "ignore_unknown_options": True}, "[KEY=VALUE]..."),
}

class _LazyGroup(TyperGroup):
    """A command group that imports a command only when it is looked up to run or to show its help."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in COMMANDS:
            return None
        if cmd_name not in self.commands:
            self.commands[cmd_name] = _load(cmd_name)
        return self.commands[cmd_name]

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        # The summaries come from COMMANDS so that listing them imports nothing.
        with formatter.section("Commands"):
            formatter.write_dl([(name, command.summary) for name, command in COMMANDS.items()])


class _Command(TyperCommand):
    """A command whose usage line names its arguments in capitals (``run [OPTIONS] ENV_ID``), as
    ``--help`` describes them, instead of Typer's ``{env_id}``."""

    usage_extra = ""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                name = param.metavar or param.name.upper()
                name = name if param.required else f"[{name}]"
                pieces.append(name + ("..." if param.nargs != 1 else ""))
        return pieces + ([self.usage_extra] if self.usage_extra else [])


def _with_usage_lines(command: Any, usage_extra: str = "") -> Any:
    # Every command of the tree gets the capitalised usage line.
    if type(command) is TyperCommand:
        command.__class__ = _Command
        command.usage_extra = usage_extra
    for sub in getattr(command, "commands", {}).values():
        _with_usage_lines(sub)
    return command


def _load(name: str) -> Any:
    spec = COMMANDS[name]
    target = _import(spec.target)
    if isinstance(target, typer.Typer):
        target.rich_markup_mode = None
        group = typer.main.get_group(target)
        group.name = name
        return _with_usage_lines(group)
    single = typer.Typer(rich_markup_mode=None, add_completion=False)
    single.command(name, context_settings=spec.context_settings)(target)
    return _with_usage_lines(typer.main.get_group(single).commands[name], spec.usage_extra)


def _import(target: str) -> Any:
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def _version(value: bool) -> None:
    if value:
        from agentgym._version import __version__

        typer.echo(f"agentgym {__version__}")
        raise typer.Exit()


app = typer.Typer(cls=_LazyGroup, no_args_is_help=True, add_completion=False, rich_markup_mode=None,
                  help="agentgym: text environments and rewards for agentic RL.")


@app.callback()
def _root(version: bool = typer.Option(False, "--version", is_eager=True, callback=_version,
                                       help="Print the agentgym version and exit.")) -> None:
    """agentgym: text environments and rewards for agentic RL."""


EXIT_MISSING_EXTRA = 3
"""The exit status of any command that needs an optional extra that is not installed."""


def main() -> None:
    """The console script: configuration mistakes end with one line, not a traceback."""
    from agentgym.errors import AgentGymError, DependencyNotInstalled

    try:
        app()
    except DependencyNotInstalled as exc:
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_MISSING_EXTRA) from None
    except AgentGymError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(1) from None
    except Exception as exc:
        if not _is_validation_error(exc):
            raise
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in exc.errors())
        typer.echo(f"error: {problems}", err=True)
        raise SystemExit(2) from None


def _is_validation_error(exc: Exception) -> bool:
    # pydantic is only imported by the commands that use it; --help must not load it.
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(exc, pydantic.ValidationError)

