"""The console script turns configuration mistakes into one line and a non-zero exit."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("args, message", [
    (["serve-retriever", "/nonexistent/corpus.jsonl"], "error: no such corpus file"),
    (["serve", "--env-calls", "bogus"], "env_calls='bogus' is not allowed; expected 'processes', 'auto'"),
    (["travelplanner", "solve", "--tasks", "/nonexistent.jsonl"], "no task file"),
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
    assert "agentgym.cli.run" in loaded and "agentgym.demo" not in loaded


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


_HINTS = (re.compile(r"needs (?P<pkgs>[A-Za-z][\w-]*(?: and [A-Za-z][\w-]*)*)[:;] "
                     r"pip install 'agentgym-rl\[(?P<extra>[\w-]+)\]'"),
          re.compile(r"(?P<pkgs>[A-Za-z][\w-]*) is not installed \(pip install 'agentgym-rl\[(?P<extra>[\w-]+)\]'\)"))


def _extras() -> dict[str, set[str]]:
    from packaging.requirements import Requirement

    table = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    return {name: {Requirement(r).name.lower() for r in reqs} for name, reqs in table.items()}


def test_every_install_hint_names_the_smallest_extra_that_has_the_package():
    """`verl prepare` without pyarrow once said agentgym-rl[verl] (gigabytes) where agentgym-rl[parquet] is enough."""
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
            assert package.lower() in extras[extra], f"{where}: agentgym-rl[{extra}] does not install {package}"
            smallest = min(having, key=lambda name: len(extras[name]))
            assert len(extras[extra]) == len(extras[smallest]), f"{where}: {package} is in agentgym-rl[{smallest}]"


def test_the_build_has_no_license_deprecation_warning(tmp_path):
    """`project.license` as a TOML table warned at every build; an SPDX string does not."""
    pytest.importorskip("setuptools")
    for name in ("pyproject.toml", "README.md"):
        (tmp_path / name).write_bytes((REPO / name).read_bytes())
    (tmp_path / "agentgym").mkdir()
    (tmp_path / "agentgym" / "__init__.py").write_text("")
    (tmp_path / "meta").mkdir()
    code = "import setuptools.build_meta as b, sys; print(b.prepare_metadata_for_build_wheel(sys.argv[1]))"
    out = subprocess.run([sys.executable, "-W", "default", "-c", code, str(tmp_path / "meta")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "license" not in out.stderr.lower(), out.stderr[-2000:]
    metadata = next((tmp_path / "meta").glob("*.dist-info")) / "METADATA"
    assert "License-Expression: MIT" in metadata.read_text()


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentgym.cli", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env={**os.environ, "COLUMNS": "80"})


def _foreign_submission(tmp_path: Path) -> Path:
    """Two plan lines whose tasks are set in real US cities, which the embedded world does not have."""
    import json

    from agentgym.envs.travelplanner.synthetic import default_world_path
    from agentgym.envs.travelplanner.world import World

    world = World.open(default_world_path())
    rows = []
    assert "Washington" not in world.city_set
    for _ in range(2):
        rows.append({"query": {"org": "Washington", "dest": "Myrtle Beach", "days": 3,
                               "visiting_city_number": 1, "date": "['2022-03-13', '2022-03-14', '2022-03-15']",
                               "people_number": 1, "budget": 1400, "level": "easy", "query": "a real query",
                               "local_constraint": "{'house rule': None, 'cuisine': None, 'room type': None, "
                                                   "'transportation': None}"},
                     "plan": [{"days": 1, "current_city": "from Washington to Myrtle Beach"}]})
    path = tmp_path / "plans.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_eval_stops_when_the_tasks_belong_to_another_world(tmp_path):
    plans = _foreign_submission(tmp_path)
    out = _cli("eval", "travelplanner", "-s", str(plans))
    text = " ".join((out.stdout + out.stderr).split())
    assert out.returncode == 1 and "Hard" not in text
    assert "2 of 2 tasks are set in cities the world at" in text and "Washington -> Myrtle Beach" in text
    assert "--database DIR" in text and "--foreign-tasks" in text
    forced = _cli("eval", "travelplanner", "-s", str(plans), "--foreign-tasks")
    assert forced.returncode == 0 and "2 of 2 tasks are set in cities this world does not have" in " ".join(
        forced.stdout.split())


def test_eval_scores_tasks_generated_for_the_world(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    assert _cli("travelplanner", "generate", "--n", "9", "--out", str(tasks)).returncode == 0
    assert _cli("travelplanner", "solve", "-t", str(tasks), "-o", str(tmp_path / "plans.jsonl")).returncode == 0
    out = _cli("eval", "travelplanner", "-t", str(tasks), "-s", str(tmp_path / "plans.jsonl"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "100.00%" in out.stdout
    # At 80 columns every header of the by-group table is whole.
    assert "delivery" in out.stdout and "…" not in out.stdout
    assert all(len(line) <= 80 for line in out.stdout.splitlines())


@pytest.mark.parametrize("command", [["travelplanner", "generate"], ["travelplanner", "solve"],
                                     ["eval", "travelplanner"]])
def test_the_world_option_has_one_name_and_an_alias_everywhere(command):
    text = _help(*command)
    assert "-d, -w, --database, --world <" in text


def test_env_kwargs_take_the_same_flags_everywhere():
    for command in (["run"], ["verl", "prepare"]):
        assert "-k, --env-kwarg" in _help(*command)


def test_serve_and_serve_retriever_default_to_the_same_log_level():
    from agentgym.cli import COMMANDS, _load

    defaults = {name: next(p.default for p in _load(name).params if p.name == "log_level")
                for name in ("serve", "serve-retriever") if name in COMMANDS}
    assert len(set(defaults.values())) == 1, defaults


def test_verl_prepare_says_when_limit_is_more_than_the_tasks(tmp_path):
    pytest.importorskip("pyarrow")
    out = _cli("verl", "prepare", "TravelPlanner-v0", "--split", "test", "--limit", "200", "-k", "action_format=json",
               "--out", str(tmp_path / "rows.parquet"))
    assert out.returncode == 0, out.stderr
    n = int(out.stdout.split()[1])
    assert n < 200 and f"note: --limit 200 asked for more rows than the tasks from --start 0 on; all {n} were " \
        "written" in " ".join(out.stderr.split())


@pytest.mark.parametrize("evaluation", ["official", "strict"])
def test_the_room_type_verdict_reads_as_english(evaluation):
    """It said "every accommodation is a entire room"."""
    from agentgym.envs.travelplanner.evaluation import evaluate
    from agentgym.envs.travelplanner.tasks import load_tasks
    from agentgym.envs.travelplanner.solver import solve
    from agentgym.envs.travelplanner.synthetic import default_world_path
    from agentgym.envs.travelplanner.world import World

    world = World.open(default_world_path())
    query = next(q for q in load_tasks("train", world_root=world.root) if q.local_constraint.room_type)
    plan = solve(query, world, must_pass="both", time_limit=30).plan
    verdict = evaluate(plan, query, world, evaluator=evaluation).hard["valid_room_type"]
    assert verdict.passed and verdict.reason == f"every accommodation's room type is {query.local_constraint.room_type}"
