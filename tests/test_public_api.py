"""The front door: ``agentgym.__all__`` is exactly what the package exposes, and every exception
class of the package lives in ``agentgym.errors`` under ``AgentGymError``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import warnings

import pytest

import agentgym
import agentgym.errors


def test_all_is_exactly_the_public_names():
    for name in agentgym.__all__:
        getattr(agentgym, name)  # lazy names resolve
    exposed = {n for n, v in vars(agentgym).items() if not n.startswith("_") and not inspect.ismodule(v)}
    assert exposed | {n for n in dir(agentgym) if not n.startswith("_")} == {n for n in agentgym.__all__ if not n.startswith("_")}


def test_every_error_class_is_at_the_front_door():
    assert set(agentgym.errors.__all__) <= set(agentgym.__all__)
    for name in agentgym.errors.__all__:
        assert getattr(agentgym, name) is getattr(agentgym.errors, name)


def _modules():
    for info in pkgutil.walk_packages(agentgym.__path__, "agentgym."):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", agentgym.AgentGymDeprecationWarning)  # old paths, kept a release
                yield importlib.import_module(info.name)
        except agentgym.DependencyNotInstalled:
            continue  # an optional extra this machine lacks


def test_every_exception_class_lives_in_the_error_tree():
    strays = []
    for module in _modules():
        for name, cls in list(vars(module).items()):  # not getmembers: a lazy name of a missing extra raises
            if not inspect.isclass(cls) or cls.__module__ != module.__name__ or not issubclass(cls, BaseException) \
                    or name.startswith("_"):
                continue
            if module is agentgym.errors or any(part.startswith("_") for part in module.__name__.split(".")):
                continue  # the tree itself; private modules' signals never reach the caller
            strays.append(f"{module.__name__}.{name}")
    assert strays == [], "public exception classes outside agentgym.errors (move them there, or make them private)"


def test_the_drawn_error_tree_is_the_class_tree():
    """The tree in errors.py's docstring is documentation; the classes are the one list (``__all__`` is
    built from them): each drawn class sits under its agentgym parent with its built-in bases."""
    drawn, parents = {}, []
    for line in agentgym.errors.__doc__.splitlines():
        found = re.match(r"^    ([│├└─ ]*)([A-Z]\w+)(?: \(([\w, ]+)\))?", line)
        if found:
            depth = len(found[1]) // 4
            parents[depth:] = [found[2]]
            drawn[found[2]] = (parents[depth - 1] if depth else None, found[3] or "")
    classes = {name: getattr(agentgym.errors, name) for name in agentgym.errors.__all__}
    actual = {}
    for name, cls in classes.items():
        ours = [b.__name__ for b in cls.__bases__ if issubclass(b, agentgym.AgentGymError)]
        builtin = [b.__name__ for b in cls.__bases__
                   if not issubclass(b, agentgym.AgentGymError) and b is not Exception]
        actual[name] = (ours[0] if ours else None, ", ".join(builtin))
    assert drawn == actual
    assert set(agentgym.errors.__all__) <= set(agentgym.__all__)


@pytest.mark.parametrize("name", agentgym.errors.__all__)
def test_the_tree_has_one_root_and_is_drawn(name):
    cls = getattr(agentgym.errors, name)
    assert issubclass(cls, agentgym.AgentGymError)
    assert name in agentgym.errors.__doc__, f"{name} is missing from the tree drawn in errors.py"
    assert cls.__doc__, f"{name} needs a one-line 'raised when'"


_WITHOUT_EXTRAS = '''
import importlib, pkgutil, sys, warnings
from importlib.abc import MetaPathFinder

BLOCKED = {"verl", "trl", "omegaconf", "hydra", "ray", "torch", "transformers", "tinker", "tinker_cookbook",
           "skyrl_gym", "verifiers", "vllm", "sglang", "tensordict", "peft", "accelerate", "transfer_queue"}

class Block(MetaPathFinder):  # a [dev]-only install: the trainer extras' packages are not there
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, Block())
import agentgym
warnings.simplefilter("ignore")
bad = []
for info in pkgutil.walk_packages(agentgym.__path__, "agentgym.", onerror=lambda name: None):
    try:
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", ()):
            try:
                getattr(module, name)
            except agentgym.DependencyNotInstalled:
                pass
    except agentgym.DependencyNotInstalled:
        pass
    except Exception as exc:
        bad.append(f"{info.name}: {type(exc).__name__}: {exc}")
print("\\n".join(bad))
'''


def test_without_the_trainer_extras_every_module_imports_or_names_its_extra():
    """Defect: ``verl/preflight/checks.py`` imported omegaconf at its top, so in a [dev]-only install the
    contract tests that walk the package failed with a bare ModuleNotFoundError instead of skipping the
    extra; every module (and lazy name) must import or raise ``DependencyNotInstalled``."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _WITHOUT_EXTRAS], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "", "modules that fail with a bare error when an extra is missing"
