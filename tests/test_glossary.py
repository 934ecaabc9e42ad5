"""No public name uses a word the glossary (docs/glossary.md) retired, except the deprecated aliases.

Public names are what a user types: each public module's path, the names it exports, their
parameters and the public members and fields of those classes (``StepInfo``'s among them), env
kwargs, reset options, CLI flags and reward inputs. Each is split into
words (``snake_case``, ``CamelCase``, ``kebab-case``) and checked against the retired words.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import agentgym
from agentgym._deprecated import ALIASES

# word -> the glossary's word for it
RETIRED = {
    "query": "task (query is only a search string)",
    "queries": "tasks",
    "question": "task",
    "questions": "tasks",
    "settings": "config",
    "oracle": "solver",
    "reference": "gold (reference is only TravelPlanner's reference information)",
    "references": "gold_answers",
    "protocol": "action_format (protocol is only the wire format)",
}
RETIRED_NAMES = {"evaluation": "evaluator or report", "EpisodeResult": "a RewardBreakdown",
                 "EpisodeRecorder": "ShapeReward", "REWARDS": "METRICS"}
# Where the retired word is the glossary's own exception.
ALLOWED = {
    "agentgym.remote.protocol",          # the wire format itself
    "reference_information",             # TravelPlanner's reference information
    "max_query_chars",                   # SearchQA: the longest search string
    "max_total_query_chars",             # serve-retriever: the search strings of one /retrieve request
    "max-query-chars", "max-total-query-chars",  # their serve-retriever flags
    "query_prefix",                      # E5's prefix for a search string
}


def words(name: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return [w.lower() for w in re.split(r"[\s_\-.]+", spaced) if w]


def retired_in(name: str) -> str | None:
    if name in RETIRED_NAMES:
        return RETIRED_NAMES[name]
    if any(allowed in name for allowed in ALLOWED):
        return None
    hits = [RETIRED[w] for w in words(name) if w in RETIRED]
    return hits[0] if hits else None


def _public_modules() -> Iterator[object]:
    import warnings

    for info in pkgutil.walk_packages(agentgym.__path__, "agentgym."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the old-path shims warn on import
                yield importlib.import_module(info.name)
        except agentgym.DependencyNotInstalled:
            continue


def public_names() -> dict[str, str]:
    """``{name: where}`` for every exported name and the public members of exported classes."""
    found: dict[str, str] = {}
    for module in _public_modules():
        found.setdefault(module.__name__, "module")
        for name in getattr(module, "__all__", ()):
            found.setdefault(name, module.__name__)
            value = getattr(module, name, None)
            for parameter in _parameters(value):
                found.setdefault(parameter, f"{module.__name__}.{name}()")
            if inspect.isclass(value) and value.__module__.startswith("agentgym"):
                for member in vars(value):
                    if not member.startswith("_"):
                        found.setdefault(member, f"{module.__name__}.{name}")
                for field in getattr(value, "model_fields", {}):
                    found.setdefault(field, f"{module.__name__}.{name}")
    return found


def _parameters(value: object) -> list[str]:
    if not callable(value) or not getattr(value, "__module__", "").startswith("agentgym"):
        return []
    try:
        return [p for p in inspect.signature(value).parameters if not p.startswith("_")]
    except (TypeError, ValueError):
        return []


def env_kwargs() -> dict[str, str]:
    from agentgym.core.env import allowed_kwargs
    from agentgym.registration import _ENV_CLASSES

    found = {}
    for env_id, target in _ENV_CLASSES.items():
        module, _, cls = target.partition(":")
        for name in allowed_kwargs(getattr(importlib.import_module(module), cls)) or ():
            found.setdefault(name, f"{env_id} kwarg")
    return found


def cli_flags() -> dict[str, str]:
    import typer.main

    from agentgym.cli import COMMANDS

    found = {}

    def walk(command, path):
        for param in command.params:
            for flag in param.opts:
                if flag.startswith("--") and not getattr(param, "hidden", False):
                    found.setdefault(flag[2:], path)
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{path} {name}")

    for name, lazy in COMMANDS.items():
        module, _, attribute = lazy.target.partition(":")
        target = getattr(importlib.import_module(module), attribute)
        command = typer.main.get_command(target) if isinstance(target, typer.Typer) else \
            typer.main.get_command(_single(target))
        walk(command, f"agentgym {name}")
    return found


def _single(function):
    import typer

    app = typer.Typer()
    app.command()(function)
    return app


def reward_inputs() -> dict[str, str]:
    from agentgym.rewards import _registry

    return {name: "reward input" for name in (*_registry.INPUTS, *_registry.READERS)}


def retired_spellings() -> set[str]:
    """The old names ``agentgym._deprecated`` still serves: module paths whole, flags without ``--``.

    A name is exempt wherever it appears once it is a declared alias somewhere; the aliases' own
    table (docs/glossary.md) is where each is tied to its place.
    """
    olds = [key.split(": ", 1)[1] for key in ALIASES]
    return {old if old.startswith("agentgym.") else old.rsplit(".", 1)[-1].lstrip("-") for old in olds}


def reset_options() -> dict[str, str]:
    from agentgym.core.tasks import TASK_OPTIONS

    return {name: "reset option" for name in (*TASK_OPTIONS, "training_step", "total_steps")}


KINDS = {"exported names and members": public_names, "env kwargs": env_kwargs, "CLI flags": cli_flags,
         "reward inputs": reward_inputs, "reset options": reset_options}


@pytest.mark.parametrize("kind", KINDS)
def test_no_public_name_uses_a_retired_word(kind):
    names = KINDS[kind]()
    kept = retired_spellings()  # after the walk: declaring modules register their aliases on import
    offenders = sorted(f"{where}: {name} (use {retired_in(name)})" for name, where in names.items()
                       if retired_in(name) and name not in kept)
    assert offenders == [], "names that use a word docs/glossary.md retired"


def test_every_alias_maps_a_retired_spelling_to_a_current_one():
    public_names()  # declaring modules register their aliases on import
    assert len(ALIASES) > 40
    for key, new in ALIASES.items():
        assert retired_in(new.strip("'-")) is None, f"{key} -> {new} still uses a retired word"


def test_the_glossary_lists_every_retired_name():
    public_names()  # declaring modules register their aliases on import
    for module in ("agentgym.cli.run", "agentgym.cli.eval", "agentgym.cli.travelplanner", "agentgym.cli.verl"):
        importlib.import_module(module)
    table = (Path(__file__).parent.parent / "docs" / "glossary.md").read_text(encoding="utf-8")
    table = table.split("## Retired names", 1)[1]
    missing = [key for key in ALIASES if key.split(": ", 1)[1] not in table
               and key.split(": ", 1)[1].rsplit(".", 1)[-1].lstrip("-") not in table]
    assert missing == [], "retired names docs/glossary.md does not list"
