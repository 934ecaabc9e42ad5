"""The console script turns configuration mistakes into one line and a non-zero exit."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("args, message", [
    (["serve-retriever", "/nonexistent/corpus.jsonl"], "error: no such corpus file"),
    (["serve", "--env-calls", "bogus"], "error: env_calls: Input should be"),
    (["travelplanner", "solve", "--queries", "/nonexistent.jsonl"], "no query file"),
])
def test_mistakes_end_with_one_line_not_a_traceback(args, message):
    out = subprocess.run([sys.executable, "-m", "agentgym.cli", *args], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert message in text and "Traceback" not in text


def test_help_lists_every_command():
    out = subprocess.run([sys.executable, "-m", "agentgym.cli", "--help"], capture_output=True, text=True, timeout=120)
    for command in ("demo", "list", "run", "serve", "eval", "travelplanner", "verl", "train", "serve-retriever"):
        assert command in out.stdout


# Modules `agentgym --help` has no use for: retrievers, HTTP clients, envs, plotting, data frames, verl.
HEAVY = ("bm25s", "httpx", "pydantic", "rich", "matplotlib", "pandas", "pyarrow", "datasets", "starlette",
         "uvicorn", "verl", "torch", "transformers", "agentgym.demo", "agentgym.envs", "agentgym.runner",
         "agentgym.server", "agentgym.integrations", "agentgym.rewards", "agentgym.core.env")


def _modules_after(args: list[str]) -> set[str]:
    code = ("import sys, agentgym.cli as cli\nsys.argv = ['agentgym', *sys.argv[1:]]\n"
            "try:\n    cli.main()\nexcept SystemExit:\n    pass\nprint('MODULES', ' '.join(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)
    line = next(line for line in out.stdout.splitlines() if line.startswith("MODULES "))
    return set(line.split()[1:])


@pytest.mark.parametrize("args", [["--help"], ["--version"], []])
def test_help_and_version_import_no_heavy_module(args):
    loaded = _modules_after(args)
    heavy = sorted(m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert not heavy, f"agentgym {' '.join(args)} imported {heavy[:10]}"


def test_a_command_still_loads_what_it_needs():
    loaded = _modules_after(["run", "--help"])
    assert "agentgym.runner.cli" in loaded and "agentgym.demo" not in loaded


def test_every_summary_is_its_commands_docstring():
    """The summaries `--help` shows without importing the commands match what the commands say."""
    from agentgym.cli import COMMANDS, _load

    for name in COMMANDS:
        command = _load(name)
        first = (command.help or "").strip().split("\n\n")[0].replace("\n", " ")
        assert " ".join(first.split()) == COMMANDS[name].summary, name


def test_version():
    import agentgym

    out = subprocess.run([sys.executable, "-m", "agentgym.cli", "--version"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == f"agentgym {agentgym.__version__}"


def _help(*args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "agentgym.cli", *args, "--help"], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "COLUMNS": "120"})
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_square_brackets_in_help_print_as_written():
    assert "slack uniform in [min, max], rounded up" in " ".join(_help("travelplanner", "generate").split())


@pytest.mark.parametrize("args, usage", [
    (["run"], "run [OPTIONS] ENV_ID"),
    (["train"], "train [OPTIONS] RECIPE [KEY=VALUE]..."),
    (["verl", "prepare"], "prepare [OPTIONS] ENV_ID"),
    (["travelplanner", "world"], "world [OPTIONS] OUT"),
])
def test_usage_lines_name_arguments_plainly(args, usage):
    text = _help(*args)
    assert usage in text.splitlines()[0]
    assert "{" not in text.splitlines()[0] and "<bool>" not in text


_HINTS = (re.compile(r"needs (?P<pkgs>[A-Za-z][\w-]*(?: and [A-Za-z][\w-]*)*)[:;] pip install 'agentgym\[(?P<extra>[\w-]+)\]'"),
          re.compile(r"(?P<pkgs>[A-Za-z][\w-]*) is not installed \(pip install 'agentgym\[(?P<extra>[\w-]+)\]'\)"))


def _extras() -> dict[str, set[str]]:
    from packaging.requirements import Requirement

    table = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    return {name: {Requirement(r).name.lower() for r in reqs} for name, reqs in table.items()}


def test_every_install_hint_names_the_smallest_extra_that_has_the_package():
    """`verl prepare` without pyarrow once said agentgym[verl] (gigabytes) where agentgym[parquet] is enough."""
    extras, hints = _extras(), []
    for path in (REPO / "agentgym").rglob("*.py"):
        for pattern in _HINTS:
            for match in pattern.finditer(path.read_text()):
                hints.append((path.name, match["pkgs"].split(" and "), match["extra"]))
    assert len(hints) >= 5
    for where, packages, extra in hints:
        assert extra in extras, f"{where}: there is no extra {extra!r}"
        for package in packages:
            having = [name for name, reqs in extras.items() if package.lower() in reqs]
            assert package.lower() in extras[extra], f"{where}: agentgym[{extra}] does not install {package}"
            smallest = min(having, key=lambda name: len(extras[name]))
            assert len(extras[extra]) == len(extras[smallest]), f"{where}: {package} is in agentgym[{smallest}]"
