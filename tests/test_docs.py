"""The documentation builds without warnings, and every python and shell example in README.md and
docs/ runs as written, so the docs cannot drift from the code.

* Python blocks (```python) of a page run in order in one fresh interpreter, sharing a namespace,
  in a temporary folder.
* Shell blocks (```bash, ```sh, ```shell; ```console: the ``$ `` lines) run with ``bash -euo
  pipefail`` in a temporary folder, ``agentgym`` and ``python`` being this interpreter's.
* A shell block may only use ``agentgym``, ``python`` and a few file tools (``ALLOWED``); it is
  checked before it runs, and runs with a PATH holding only those tools, so an example can never
  install packages (``pip``), build (``make``) or start a cluster (``ray``) from the test suite.
* A block that cannot run here opts out with a marker comment on the line before it, saying why;
  the only accepted reasons are that it needs a GPU or the network (installing from PyPI, a
  server other machines reach, a remote host), or its own environment (an extra whose pins exclude
  the suite's: that extra's tests run the page's marked blocks there, e.g. ``test_verifiers.py``)::

      <!-- docs-test: skip, needs a GPU (vLLM serves the model) -->

Blocks without a language (usage synopses, sample output, file layouts) are not examples.

The user's data folders are written ``/path/to/travelplanner`` and ``/path/to/searchqa``; the test
runs such an example on the real data under ``$AGENTGYM_SHARED_DATA`` (skipped when absent).

``PENDING`` lists pages whose examples are fragments today (undefined names, ``...``), each with
the helper reworking it; they are strict xfails, so a page that starts to run fails the test
until it leaves the list.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])
PYTHON, SHELL = {"python", "py", "python3"}, {"bash", "sh", "shell", "console"}

_FENCE = re.compile(r"(?:^[ \t]*<!--\s*docs-test:(?P<marker>[^>]*?)-->[ \t]*\n)?"
                    r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<code>.*?)^(?P=indent)```", re.M | re.S)
_REASON = re.compile(r"^\s*skip,\s*needs (a GPU|the network|its own environment)\b")
# Commands a shell example may run; everything else needs a skip marker.
ALLOWED = {"agentgym", "python", "python3", "export", "cd", "echo", "cat", "head", "tail", "ls", "mkdir", "wc",
           "grep", "test", "["}
_TOOLS = ("cat", "head", "tail", "ls", "mkdir", "wc", "grep", "test", "[")


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    lang: str
    code: str
    marker: str | None

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def examples(pages: list[Path] = PAGES) -> list[Example]:
    found = []
    for path in pages:
        text = path.read_text(encoding="utf-8")
        for m in _FENCE.finditer(text):
            if m["lang"] in PYTHON | SHELL:
                line = text.count("\n", 0, m.start("indent")) + 1
                code = textwrap.dedent(m["code"]) if m["indent"] else m["code"]
                page = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else path.name
                found.append(Example(page, line, m["lang"], code,
                                     m["marker"].strip() if m["marker"] else None))
    return found


SHARED_DATA = Path(os.environ.get("AGENTGYM_SHARED_DATA", REPO.parent / "shared" / "data"))
PLACEHOLDERS = {"/path/to/travelplanner": SHARED_DATA / "travelplanner", "/path/to/searchqa": SHARED_DATA / "searchqa"}
PENDING: dict[str, str] = {}

ALL = examples()
PYTHON_PAGES = sorted({e.page for e in ALL if e.lang in PYTHON and e.marker is None})
SHELL_BLOCKS = [e for e in ALL if e.lang in SHELL and e.marker is None]


def test_docs_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra is not installed: pip install -e '.[docs]'")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=REPO, capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]


def test_the_examples_are_found():
    pages = {e.page for e in ALL}
    assert {"README.md", "docs/quickstart.md", "docs/agents.md"} <= pages
    assert "README.md" in PYTHON_PAGES and any(e.page == "README.md" for e in SHELL_BLOCKS)


def test_the_scanner_sees_markers_and_indented_blocks(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("text\n<!-- docs-test: skip, needs a GPU -->\n```bash\nvllm serve m\n```\n"
                    "* item\n\n  ```python\n  print(1)\n  ```\n```\nnot an example\n```\n")
    found = examples([page])
    assert [(e.lang, e.code, e.marker) for e in found] == [("bash", "vllm serve m\n", "skip, needs a GPU"),
                                                           ("python", "print(1)\n", None)]


@pytest.mark.parametrize("example", [e for e in ALL if e.marker is not None], ids=lambda e: e.id)
def test_an_example_is_skipped_only_when_it_needs_a_gpu_or_the_network(example):
    assert _REASON.match(example.marker), (f"{example.id}: {example.marker!r} is not 'skip, needs a GPU|the network|"
                                           "its own environment'")


_RUN_PAGE = r"""
import json, sys, types
# The page's namespace is a real module, so what an example defines pickles as a user's module would.
sys.modules["__doc_example__"] = module = types.ModuleType("__doc_example__")
namespace = module.__dict__
for block in json.loads(sys.stdin.read()):
    print(f"--- {block['where']}", flush=True)
    exec(compile(block["code"], block["where"], "exec"), namespace)
"""


def _with_data(code: str) -> str:
    for placeholder, real in PLACEHOLDERS.items():
        if placeholder in code:
            if not real.is_dir():
                pytest.skip(f"the example reads {placeholder}; no real data at {real} (set AGENTGYM_SHARED_DATA)")
            code = code.replace(placeholder, str(real))
    return code


@pytest.mark.parametrize("page", [pytest.param(p, marks=pytest.mark.xfail(reason=PENDING[p], strict=True))
                                  if p in PENDING else p for p in PYTHON_PAGES])
def test_python_examples_run_as_written(page, tmp_path):
    blocks = [{"where": e.id, "code": _with_data(e.code)} for e in ALL
              if e.page == page and e.lang in PYTHON and not e.marker]
    out = subprocess.run([sys.executable, "-c", _RUN_PAGE], input=json.dumps(blocks), capture_output=True, text=True,
                         cwd=tmp_path, env=_env(tmp_path), timeout=300)
    assert out.returncode == 0, f"{out.stdout[-1500:]}\n{out.stderr[-3000:]}"


def commands(code: str) -> list[str]:
    """The command words of a shell snippet: the first word of each line and after ``|``, ``&&``,
    ``||`` and ``;`` (comments and ``\\`` continuations removed). A check, not a shell parser: an
    unusual construct is reported as an unknown command, never run."""
    text = re.sub(r"\\\n", " ", code)
    words = []
    for line in text.splitlines():
        line = re.sub(r"(^|\s)#.*", "", line)
        for part in re.split(r"\|\||&&|[|;&]", line):
            tokens = part.split()
            while tokens and re.fullmatch(r"\w+=\S*", tokens[0]):  # VAR=value command
                tokens.pop(0)
            if tokens:
                words.append(tokens[0])
    return words


def test_the_command_check_sees_every_command():
    assert commands("agentgym run X \\\n  --quiet  # and pip\nA=1 pip install x && ray start; ls | wc -l") == [
        "agentgym", "pip", "ray", "ls", "wc"]


@pytest.mark.parametrize("example", SHELL_BLOCKS, ids=lambda e: e.id)
def test_shell_examples_run_as_written(example, tmp_path):
    code = example.code
    if example.lang == "console":
        code = "\n".join(line[2:] for line in code.splitlines() if line.startswith("$ "))
    code = _with_data(code)
    unknown = sorted(set(commands(code)) - ALLOWED)
    assert not unknown, (f"{example.id} runs {unknown}: make it offline with agentgym/python only, or mark it "
                         "<!-- docs-test: skip, needs a GPU|the network (why) -->")
    script = (f'agentgym() {{ "{sys.executable}" -m agentgym.cli "$@"; }}\n'
              f'python() {{ "{sys.executable}" "$@"; }}\npython3() {{ python "$@"; }}\n{code}')
    out = subprocess.run([shutil.which("bash") or "/bin/bash", "-euo", "pipefail", "-c", script], capture_output=True,
                         text=True, cwd=tmp_path,
                         env=_env(tmp_path), timeout=300)
    assert out.returncode == 0, f"{example.id}:\n{code}\n{out.stdout[-1500:]}\n{out.stderr[-3000:]}"


def _env(folder: Path) -> dict[str, str]:
    """This interpreter's environment, with a PATH of only the allowed file tools."""
    bin_dir = folder / ".docs-test-bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in _TOOLS:
        found = shutil.which(tool)
        if found and not (bin_dir / tool).exists():
            (bin_dir / tool).symlink_to(found)
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "PATH": str(bin_dir), "COLUMNS": "120"}


def test_docs_cite_no_file_users_do_not_have():
    """Facts carry their source (a paper, a secondary report), never the project's private notes."""
    files = [*PAGES, *(REPO / "agentgym").rglob("*.py"), *(REPO / "agentgym").rglob("*.yaml"),
             *(REPO / "examples").rglob("*")]
    cited = [str(p.relative_to(REPO)) for p in files if p.is_file()
             and re.search(r"papers\.md|shared/reference", p.read_text(encoding="utf-8", errors="replace"))]
    assert not cited, f"these cite files users do not have: {cited}"
