"""The package's modules import each other without circles, counting imports inside functions.

A circle closed by a lazy import still couples its modules (``world`` reaching the generator,
``cli`` and ``eval_cli`` importing each other); this walks every ``import`` statement of every
module with ``ast`` and fails on any strongly connected component of more than one module.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "agentgym"


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package modules ``name`` imports (``from pkg import sub`` counts as importing ``pkg.sub``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(max(node.level - 1, 0)):
                base = base.rpartition(".")[0]
            target = (f"{base}.{node.module}" if node.module else base) if node.level else (node.module or "")
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.add(sub if sub in known else target)
    return {m for m in out if m in known and m != name}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles():
    known = modules()
    graph = {name: imports(name, path, known) for name, path in known.items()}
    assert circles(graph) == []


@pytest.mark.parametrize("module, unwanted", [
    ("agentgym.rewards.judge", "agentgym.agents.openai_chat"),
    ("agentgym.rewards.judge", "agentgym.agents.base"),
])
def test_importing_one_module_of_a_package_does_not_load_its_siblings(module, unwanted):
    """Package fronts load their names on first use, so a module pulls in only what it imports."""
    code = f"import sys, {module}\nprint({unwanted!r} in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", f"importing {module} loaded {unwanted}"


def test_the_client_and_the_server_are_peers_over_the_wire_protocol():
    """``agentgym.remote`` (the client and the protocol) never imports the server: both speak
    ``agentgym.remote.protocol``, so a trainer's client installs and loads without the server."""
    known = modules()
    arrows = [f"{name} -> {target}" for name, path in known.items() if name.startswith("agentgym.remote")
              for target in imports(name, path, known) if target.startswith("agentgym.server")]
    assert arrows == []


_DOORS = ("agentgym.server.app", "agentgym.server.mcp_app", "agentgym.server.openenv_app")


def test_the_server_s_doors_sit_on_its_core_not_on_each_other():
    """The MCP and OpenEnv doors borrowed the HTTP door's class (``server.app.EnvServer``): each door
    now imports the core (``server.core``), no other door, and nothing the core loads is a door."""
    known = modules()
    graph = {name: imports(name, path, known) for name, path in known.items()}
    assert [f"{door} -> {target}" for door in _DOORS for target in graph[door] if target in _DOORS] == []
    assert all("agentgym.server.core" in graph[door] for door in _DOORS)
    reached, todo = set(), ["agentgym.server.core"]
    while todo:
        for target in graph[todo.pop()] - reached:
            reached.add(target)
            todo.append(target)
    assert reached.isdisjoint(_DOORS)


def reached_private_modules(graph: dict[str, set[str]]) -> list[str]:
    """``importer -> module`` for each import of a private module (``pkg._mod``) from outside ``pkg``.

    A private module serves its own package; other packages go through a public module or the
    package front. (``agentgym._x`` helpers are the whole package's own, so they do not count.)
    """
    found = []
    for name, targets in graph.items():
        for target in targets:
            parts = target.split(".")
            first = next((i for i, part in enumerate(parts) if part.startswith("_")), None)
            if first is not None and first >= 2 and not f"{name}.".startswith(".".join(parts[:first]) + "."):
                found.append(f"{name} -> {target}")
    return sorted(found)


def test_the_private_module_finder_finds_a_reach_across():
    graph = {"agentgym.d": {"agentgym.a._b", "agentgym._lazy"}, "agentgym.a.c": {"agentgym.a._b"},
             "agentgym.a.e._f": {"agentgym.a._b"}, "agentgym.g": {"agentgym.a.e._f"}}
    assert reached_private_modules(graph) == ["agentgym.d -> agentgym.a._b", "agentgym.g -> agentgym.a.e._f"]


# Areas already clean; the rest of the package still reaches into private modules (see the issue).
_CLEAN = ("agentgym.remote", "agentgym.server", "agentgym.agents", "agentgym.cli")


def test_the_client_server_agents_and_cli_reach_no_other_package_s_private_modules():
    known = modules()
    graph = {name: imports(name, path, known) for name, path in known.items()}
    reached = [line for line in reached_private_modules(graph) if line.startswith(_CLEAN)]
    assert reached == []
