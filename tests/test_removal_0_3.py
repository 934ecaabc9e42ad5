"""What 0.3 deletes, listed so that the removal stays mechanical.

0.3 removes every alias ``agentgym._deprecated`` serves, in one change: each line of
``tests/removed_in_0_3.txt`` is a file, the alias it declares there, and what replaces it; a file
marked ``(shim module)`` goes whole. The list must match what the package declares today, so an
alias added or dropped without updating it fails here. Regenerate it with

    python tests/test_removal_0_3.py > tests/removed_in_0_3.txt

docs/glossary.md states the counts; they are checked too.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "tests" / "removed_in_0_3.txt"


def _import_everything() -> set[str]:
    """Import every agentgym module (declaring modules register their aliases on import); the files
    of those that need an extra this install lacks."""
    import agentgym
    from agentgym.errors import DependencyNotInstalled

    missing = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the shim modules warn on import, by design
        for module in pkgutil.walk_packages(agentgym.__path__, "agentgym."):
            try:
                importlib.import_module(module.name)
            except (DependencyNotInstalled, ImportError):
                missing.add(module.name.replace(".", "/"))
    return missing


def removal_plan() -> list[str]:
    """One line per alias: ``file<TAB>where: old -> new``; a shim module's file says so."""
    _import_everything()
    from agentgym._deprecated import ALIASES, SITES

    shims = {SITES[key] for key in ALIASES
             if key.startswith("module: ") and _module_file(key[len("module: "):]) == SITES[key]}
    return sorted(f"{SITES[key]}{' (shim module)' if SITES[key] in shims else ''}\t{key} -> {new}"
                  for key, new in ALIASES.items())


def _module_file(module: str) -> str:
    path = module.replace(".", "/")
    return f"{path}/__init__.py" if (REPO / path).is_dir() else f"{path}.py"


def test_the_list_of_what_0_3_deletes_is_what_the_package_declares():
    missing = _import_everything()
    unimportable = lambda line: any(line.startswith(m) for m in missing)  # noqa: E731  (an extra absent here)
    declared = {line for line in removal_plan() if not unimportable(line)}
    listed = {line for line in MANIFEST.read_text().splitlines() if line and not unimportable(line)}
    added, dropped = sorted(declared - listed), sorted(listed - declared)
    assert not added and not dropped, (
        "tests/removed_in_0_3.txt is out of date; regenerate it with "
        f"`python tests/test_removal_0_3.py > tests/removed_in_0_3.txt`.\nnew: {added}\ngone: {dropped}")


def test_every_listed_file_exists():
    for line in MANIFEST.read_text().splitlines():
        site = line.split("\t")[0].removesuffix(" (shim module)")
        assert (REPO / site).is_file(), line


def test_the_glossary_states_the_counts():
    lines = MANIFEST.read_text().splitlines()
    aliases = len(lines)
    sites = {line.split("\t")[0] for line in lines}
    files, shims = len(sites), sum(1 for site in sites if site.endswith("(shim module)"))
    text = (REPO / "docs" / "glossary.md").read_text()
    found = re.search(r"0\.3 removes the (\d+) aliases, declared in (\d+) files, (\d+) of them whole shim modules",
                      text)
    assert found, "docs/glossary.md must state what 0.3 removes"
    assert tuple(map(int, found.groups())) == (aliases, files, shims)


if __name__ == "__main__":
    sys.stdout.write("\n".join(removal_plan()) + "\n")
