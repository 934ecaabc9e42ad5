"""The benchmarks import only names agentgym has: a module move must not silently break them.

They run for minutes on full-scale data, so the suite does not run them; it checks every
``from agentgym... import name`` they make, module level or inside a function, against the package.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from agentgym.errors import DependencyNotInstalled

BENCHMARKS = sorted((Path(__file__).resolve().parent.parent / "benchmarks").glob("*.py"))


def _agentgym_imports(path: Path) -> list[tuple[str, str | None]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").partition(".")[0] == "agentgym":
            found += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names if alias.name.partition(".")[0] == "agentgym"]
    return found


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.name)
def test_every_agentgym_name_a_benchmark_imports_exists(path: Path) -> None:
    missing = []
    for module, name in _agentgym_imports(path):
        try:
            mod = importlib.import_module(module)
        except DependencyNotInstalled:  # an extra with its own environment (verifiers): checked there
            continue
        if name is not None and not hasattr(mod, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ModuleNotFoundError:
                missing.append(f"{module}.{name}")
    assert not missing, f"{path.name} imports names agentgym lacks: {missing}"
