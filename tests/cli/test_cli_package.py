"""Every command lives in ``agentgym/cli/``: no other module of the package imports typer."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "agentgym"
CLI = PACKAGE / "cli"


def imports_typer(path: Path) -> bool:
    """Whether ``path`` imports typer (or click, its base) anywhere, at module level or in a function."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        else:
            continue
        if any(n.split(".")[0] in ("typer", "click") for n in names):
            return True
    return False


def test_only_the_cli_package_imports_typer():
    outside = sorted(str(p.relative_to(PACKAGE.parent)) for p in PACKAGE.rglob("*.py")
                     if CLI not in p.parents and imports_typer(p))
    assert not outside, f"typer is imported outside agentgym/cli: {outside}"


def test_the_check_sees_typer_imports(tmp_path):
    """The walk finds every spelling of the import, including one inside a function."""
    for source in ("import typer", "from typer.core import TyperGroup", "def f():\n    import click.core"):
        path = tmp_path / "m.py"
        path.write_text(source + "\n")
        assert imports_typer(path), source
    (tmp_path / "m.py").write_text("import typing\nfrom . import typer\n")
    assert not imports_typer(tmp_path / "m.py")


def test_every_command_module_is_in_the_cli_package():
    from agentgym.cli import COMMANDS

    for name, command in COMMANDS.items():
        module = command.target.partition(":")[0]
        moved = module.startswith("agentgym.cli.")
        assert moved, (name, module)
