"""The command line's exits (issue 22, item 11): one status for a missing extra, ``python -m
agentgym``, and ``train --dry-run`` ending with the lines that matter."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentgym import cli
from agentgym.errors import DependencyNotInstalled


def _exit_status(monkeypatch, capsys, *argv: str) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["agentgym", *argv])
    with pytest.raises(SystemExit) as stopped:
        cli.main()
    return stopped.value.code, capsys.readouterr().err


def test_a_missing_extra_has_one_exit_status(monkeypatch, capsys):
    import agentgym.integrations.verl as verl

    def missing() -> None:
        raise DependencyNotInstalled("training needs verl: pip install 'agentgym-rl[verl]'")

    monkeypatch.setattr(verl, "require_verl", missing)
    train = _exit_status(monkeypatch, capsys, "train", "grpo")
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # import uvicorn now raises ImportError
    serve = _exit_status(monkeypatch, capsys, "serve")
    assert train[0] == serve[0] == cli.EXIT_MISSING_EXTRA
    assert "agentgym-rl[verl]" in train[1] and "agentgym-rl[server]" in serve[1]


def test_python_dash_m_agentgym_runs_the_cli():
    result = subprocess.run([sys.executable, "-m", "agentgym", "--version"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and result.stdout.startswith("agentgym ")


@pytest.mark.parametrize("command, extra, packages", [("mcp", "mcp", "mcp, starlette, uvicorn"),
                                                      ("openenv", "openenv", "openenv-core, starlette, uvicorn")])
def test_a_front_door_in_a_plain_install_names_its_own_extra(command, extra, packages):
    """Before, a plain install named agentgym-rl[server]; after installing it, the next try named the
    command's own extra. The command's extra brings both."""
    blocked = ("starlette", "uvicorn", "msgspec", "fastapi", "mcp", "openenv")
    code = (f"import sys\nfor m in {blocked!r}:\n    sys.modules[m] = None  # not installed\n"
            f"sys.argv = ['agentgym', {command!r}, 'TravelPlanner-v0']\n"
            "from agentgym.cli import main\nmain()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == cli.EXIT_MISSING_EXTRA, done.stderr
    assert done.stderr.strip() == f"error: agentgym {command} needs {packages}: pip install 'agentgym-rl[{extra}]'"
