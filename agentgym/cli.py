"""The ``agentgym`` command line."""

from __future__ import annotations

import typer

from agentgym.envs.searchqa.serve import serve_retriever

app = typer.Typer(no_args_is_help=True, add_completion=False, help="agentgym: text environments and rewards for agentic RL.")
eval_app = typer.Typer(no_args_is_help=True, help="Score submissions with an env's official evaluator.")
app.add_typer(eval_app, name="eval")
app.command("serve-retriever")(serve_retriever)

from agentgym.demo.cli import demo  # noqa: E402  (`agentgym demo`: the README's main job)

app.command("demo")(demo)

from agentgym.envs.travelplanner import eval_cli  # noqa: E402,F401  (registers `agentgym eval travelplanner`)

from agentgym.envs.travelplanner.commands import travelplanner_app  # noqa: E402

app.add_typer(travelplanner_app, name="travelplanner")

from agentgym.server.cli import serve  # noqa: E402  (`agentgym serve`: the env server)

app.command("serve")(serve)

from agentgym.catalog import list_command  # noqa: E402  (`agentgym list`)
from agentgym.runner.cli import run  # noqa: E402  (`agentgym run`)

app.command("list")(list_command)
app.command("run")(run)

from agentgym.integrations.verl.commands import TRAIN_CONTEXT, train, verl_app  # noqa: E402

app.add_typer(verl_app, name="verl")
app.command("train", context_settings=TRAIN_CONTEXT)(train)


def main() -> None:
    """The console script: configuration mistakes end with one line, not a traceback."""
    from pydantic import ValidationError

    from agentgym.errors import AgentGymError

    try:
        app()
    except AgentGymError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(1) from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in exc.errors())
        typer.echo(f"error: {problems}", err=True)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
