"""Old spellings of renamed public names, kept for one release (deprecated in 0.2, removed in 0.3).

Every alias is declared through this module, so ``ALIASES`` lists them all: the glossary test
exempts exactly these from its check for retired words, and the docs page lists them.

    _KWARGS = RenamedKeys("TravelPlannerEnv kwarg", {"queries": "tasks"})      # at module level
    kwargs = _KWARGS.apply(kwargs)                                             # warns per old key
    __getattr__ = module_aliases(__name__, {"ServerSettings": "ServerConfig"})  # classes, functions
    query = renamed_attribute("TravelPlannerEnv", "query", "task")             # in a class body
    @renamed_kwargs({"query": "task"})                                          # a function's kwargs
    alias("agentgym run --agent", "oracle", "solver")   # then warn_renamed(...) where it is read
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agentgym.errors import ConfigError

__all__ = ["AgentGymDeprecationWarning", "ALIASES", "SITES", "RenamedKeys", "alias", "module_aliases", "renamed_attribute",
           "renamed_env_var", "renamed_kwargs", "warn_renamed"]

REMOVED_IN = "0.3"

ALIASES: dict[str, str] = {}
"""Every retired spelling still accepted, ``{"where: old": "new"}``."""
SITES: dict[str, str] = {}
"""Where each alias is declared, ``{"where: old": "agentgym/…/module.py"}``: the file 0.3 edits to
remove it (``tests/test_removal_0_3.py`` keeps the list)."""


class AgentGymDeprecationWarning(FutureWarning):
    """A renamed public name was used by its old spelling (shown to users, unlike DeprecationWarning)."""


def alias(where: str, old: str, new: str) -> None:
    """Declare that ``old`` (in ``where``) is the retired spelling of ``new``."""
    key = f"{where}: {old}"
    ALIASES[key] = new
    SITES[key] = _declaring_file()


def _declaring_file() -> str:
    """The package-relative file of the first caller outside this module."""
    import os
    import sys

    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    if frame is None:
        return "?"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.relpath(os.path.abspath(frame.f_code.co_filename), root).replace(os.sep, "/")


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Tell the user ``old`` is the deprecated spelling of ``new``."""
    warnings.warn(f"{old} is deprecated, use {new} (the old spelling goes in agentgym {REMOVED_IN})",
                  AgentGymDeprecationWarning, stacklevel=stacklevel)


class RenamedKeys:
    """Old keys of a mapping (kwargs, reset options, config fields) and their new names."""

    def __init__(self, where: str, renames: Mapping[str, str]) -> None:
        self.where, self.renames = where, dict(renames)
        for old, new in self.renames.items():
            alias(where, old, new)

    def retired(self, names: Iterable[str]) -> tuple[str, ...]:
        """The old keys that stand for any of ``names`` (an env server allows them with their new names)."""
        names = set(names)
        return tuple(old for old, new in self.renames.items() if new in names)

    def apply(self, given: Mapping[str, Any] | None, *, stacklevel: int = 4) -> dict[str, Any]:
        """``given`` with each old key moved to its new key, warning once per key used.

        Giving both spellings is a ``ConfigError``: the two could disagree.
        """
        out = dict(given or {})
        for old, new in self.renames.items():
            if old not in out:
                continue
            if new in out:
                raise ConfigError(old, out[old], f"only one of {old!r} (deprecated) and {new!r}")
            warn_renamed(f"{self.where} {old!r}", repr(new), stacklevel=stacklevel)
            out[new] = out.pop(old)
        return out


def module_aliases(module: str, renames: Mapping[str, str],
                   fallback: Callable[[str], Any] | None = None) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving each old class or function name as its new one, with a warning."""
    import importlib

    for old, new in renames.items():
        alias(module, old, new)

    def __getattr__(name: str) -> Any:
        if name in renames:
            warn_renamed(f"{module}.{name}", f"{module}.{renames[name]}")
            return getattr(importlib.import_module(module), renames[name])
        if fallback is not None:
            return fallback(name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


def renamed_kwargs(renames: Mapping[str, str]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator: the function also takes the retired keyword names in ``renames``, with a warning."""
    import functools

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        keys = RenamedKeys(f"{fn.__module__}.{fn.__qualname__}() kwarg", renames)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **keys.apply(kwargs))

        return wrapper

    return decorate


def renamed_attribute(owner: str, old: str, new: str) -> property:
    """A read-only property ``old`` of class ``owner`` that warns and reads ``new``.

        question = renamed_attribute("SearchQAEnv", "question", "task")   # in the class body
    """
    alias(f"{owner} attribute", old, new)

    def read(self: Any) -> Any:
        warn_renamed(f"{owner}.{old}", f"{owner}.{new}")
        return getattr(self, new)

    return property(read, doc=f"Deprecated: ``{new}`` (removed in {REMOVED_IN}).")


def renamed_env_var(new: str, old: str) -> str | None:
    """The environment variable ``new``, else its retired name ``old`` (with a warning); None if unset."""
    import os

    value = os.environ.get(new)
    if not value and os.environ.get(old):
        warn_renamed(f"${old}", f"${new}")
        value = os.environ[old]
    return value or None
