"""No public name or message uses a word the glossary (docs/glossary.md) retired, except the deprecated aliases.

Public names are what a user types: each public module's path, the names it exports, their
parameters and the public members and fields of those classes (``StepInfo``'s among them), env
kwargs, reset options, CLI flags, reward inputs and the keys envs put in ``StepInfo.extra``, in every
place each appears. Each is split into words (``snake_case``, ``CamelCase``, ``kebab-case``) and checked
against the retired words. A deprecated alias exempts its old name only in the place it declares
(``agentgym._deprecated.ALIASES``: ``"place: old"``), and the glossary's own exceptions are listed by
place too. The messages that reach agents and users (the evaluator's reasons, the CLI's and the
runner's tables) and the code blocks of the docs are checked word by word.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import io
import pkgutil
import re
import tokenize
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
    "trajectory": "rollout",
    "trajectories": "rollouts",
}
RETIRED_NAMES = {"evaluation": "evaluator or report", "EpisodeResult": "a RewardBreakdown",
                 "EpisodeRecorder": "ShapeReward", "REWARDS": "METRICS"}
# Names whose retired word is the glossary's own exception, wherever they appear.
ALLOWED = {
    "agentgym.remote.protocol",          # the wire format itself
    "reference_information",             # TravelPlanner's reference information
    "max_query_chars",                   # SearchQA: the longest search string
    "max_total_query_chars",             # serve-retriever: the search strings of one /retrieve request
    "max-query-chars", "max-total-query-chars",  # their serve-retriever flags
    "query_prefix",                      # E5's prefix for a search string
}
# (place, name): the glossary's own exception in that place only.
PLACE_ALLOWED = {
    ("agentgym.envs.searchqa.actions.Search() kwarg", "query"),  # the search string
    ("Search field", "query"), ("Search attribute", "query"),
    ("SearchQAEnv info['extra'] key", "query"),                   # the search string a step sent
    ("SearchQAEnv info['extra'] key", "query_cut_from"),          # its length before the cut
    ("agentgym.envs.travelplanner.tasks.TravelTask() kwarg", "query"),  # the dataset's column, read as .text
    ("docs/server.md", "query"), ("docs/trl.md", "query"),        # a search tool's parameter
    ("docs/searchqa.md", "query"), ("docs/searchqa.md", "queries"),  # a retriever's search strings
    ("docs/tinker.md", "trajectories_G"),                         # tinker-cookbook's own field
}
# Files whose string literals reach agents or users as messages: the evaluators' reasons, the
# CLI's, the runner's and the demo's text. (place, word) pairs are the glossary's exceptions there.
ROOT = Path(__file__).parent.parent
MESSAGE_FILES = ("agentgym/envs/travelplanner/evaluation/*.py", "agentgym/envs/travelplanner/tasks.py",
                 "agentgym/runner/*.py", "agentgym/rewards/terms_*.py", "agentgym/cli/*.py", "agentgym/demo/*.py",
                 "agentgym/server/mcp_app.py")
MESSAGE_ALLOWED = {
    ("agentgym/cli/serve_retriever.py", "query"), ("agentgym/cli/serve_retriever.py", "queries"),  # search strings
    ("agentgym/cli/eval.py", "query"), ("agentgym/cli/travelplanner.py", "query"),  # the benchmark's
    ("agentgym/envs/travelplanner/evaluation/submissions.py", "query"),              # submission keys
    ("agentgym/envs/travelplanner/evaluation/_evaluate.py", "query_meta"),         # its annotated plans
    ("agentgym/cli/openenv.py", "protocol"),                                         # OpenEnv's wire format
    ("agentgym/runner/config.py", "reference"),                                      # the old agent kind, named
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


def public_names() -> list[tuple[str, str]]:
    """``(name, place)`` for every exported name, its parameters and the public members of exported
    classes, in every place each appears; places are spelt as ``agentgym._deprecated`` declares them."""
    found: list[tuple[str, str]] = []
    for module in _public_modules():
        found.append((module.__name__, "module"))
        for name in getattr(module, "__all__", ()):
            found.append((name, module.__name__))
            try:
                value = getattr(module, name, None)
            except agentgym.DependencyNotInstalled:
                continue  # a lazy name of an extra this machine lacks
            found += [(parameter, _kwarg_place(value)) for parameter in _parameters(value)]
            if inspect.isclass(value) and value.__module__.startswith("agentgym"):
                found += [(member, f"{value.__name__} attribute") for member in vars(value)
                          if not member.startswith("_")]
                found += [(field, f"{value.__name__} field") for field in getattr(value, "model_fields", {})]
    return found


def _kwarg_place(value: object) -> str:
    if getattr(value, "__module__", "").startswith("agentgym.cli."):
        return "CLI option"  # a command's parameters are its flags, whose aliases name the command
    return f"{value.__module__}.{value.__qualname__}() kwarg"


def _parameters(value: object) -> list[str]:
    if not callable(value) or not getattr(value, "__module__", "").startswith("agentgym"):
        return []
    try:
        return [p for p in inspect.signature(value).parameters if not p.startswith("_")]
    except (TypeError, ValueError):
        return []


def _env_classes() -> dict[str, type]:
    from agentgym.registration import _ENV_CLASSES

    classes = {}
    for env_id, target in _ENV_CLASSES.items():
        module, _, cls = target.partition(":")
        classes[env_id] = getattr(importlib.import_module(module), cls)
    return classes


def env_kwargs() -> list[tuple[str, str]]:
    from agentgym.core.env import allowed_kwargs

    return [(name, f"{cls.__name__} kwarg") for cls in _env_classes().values() for name in allowed_kwargs(cls) or ()]


def cli_flags() -> list[tuple[str, str]]:
    import typer.main

    from agentgym.cli import COMMANDS

    found = []

    def walk(command, path):
        for param in command.params:
            for flag in param.opts:
                if flag.startswith("--") and not getattr(param, "hidden", False):
                    found.append((flag[2:], path))
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


def reward_inputs() -> list[tuple[str, str]]:
    from agentgym.rewards import _registry

    return [(name, "reward input") for name in (*_registry.INPUTS, *_registry.READERS)]


def declared_places() -> set[tuple[str, str]]:
    """``(place, old name)`` for every alias ``agentgym._deprecated`` serves: flags without ``--``, and
    each CLI flag also as its command function's parameter."""
    places = set()
    for key in ALIASES:
        where, old = key.split(": ", 1)
        places.add((where, old.lstrip("-")))
        if where.startswith("agentgym ") and old.startswith("--"):
            places.add(("CLI option", old.lstrip("-").replace("-", "_")))
    return places


def offenders(names: list[tuple[str, str]]) -> list[str]:
    kept = declared_places() | PLACE_ALLOWED  # after the walk: declaring modules register their aliases on import
    return sorted({f"{place}: {name} (use {retired_in(name)})" for name, place in names
                   if retired_in(name) and (place, name) not in kept})


def reset_options() -> list[tuple[str, str]]:
    from agentgym.core.tasks import TASK_OPTIONS

    return [(name, "reset option") for name in (*TASK_OPTIONS, "training_step", "total_steps")]


# Actions that take each bundled env through its kinds of steps: tool calls, a bad action, an answer.
_PLAYS = {"TravelPlanner-v0": ("CitySearch[Texas]", "FlightSearch[nowhere]", "not an action", "Finish[[]]"),
          "SearchQA-v0": ("<search>capital</search>", "<search></search>", "no tags", "<answer>x</answer>")}


def extra_keys() -> list[tuple[str, str]]:
    """The keys of ``StepInfo.extra`` each bundled env writes on reset and on its kinds of steps."""
    import gymnasium

    found = []
    for env_id, cls in _env_classes().items():
        actions = _PLAYS["TravelPlanner-v0" if "Travel" in env_id else "SearchQA-v0"]
        for kwargs in ({}, {"action_format": "search-r1"}) if "Travel" not in env_id else ({},):
            env = gymnasium.make(env_id, **kwargs)
            _, info = env.reset(seed=0)
            infos = [info] + [env.step(action)[-1] for action in actions]
            # aliases are declared on the family's first class (SearchQAEnv for its long-form subclass)
            family = [c for c in cls.__mro__ if c.__module__ == cls.__module__][-1].__name__
            found += [(key, f"{family} info['extra'] key") for info in infos for key in info.get("extra", {})]
            env.close()
    return found


KINDS = {"exported names and members": public_names, "env kwargs": env_kwargs, "CLI flags": cli_flags,
         "reward inputs": reward_inputs, "reset options": reset_options, "StepInfo.extra keys": extra_keys}


@pytest.mark.parametrize("kind", KINDS)
def test_no_public_name_uses_a_retired_word(kind):
    assert offenders(KINDS[kind]()) == [], "names that use a word docs/glossary.md retired"


def test_an_alias_exempts_its_old_name_only_where_it_is_declared():
    """``reference`` is an alias of ``agentgym run --agent``; that does not make it a fit parameter name."""
    assert offenders([("reference", "agentgym run --agent")]) == []
    assert offenders([("reference", "agentgym.envs.searchqa.scoring.exact_match() kwarg")]) != []
    assert offenders([("reference", "agentgym run --agent"), ("reference", "Other attribute")]) != []


def _messages(path: Path) -> list[tuple[int, str]]:
    """The string literals of a module that are not docstrings and hold more than one word."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)
                  and isinstance(node.value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree) if isinstance(node, ast.Constant)
            and isinstance(node.value, str) and id(node) not in docstrings and " " in node.value.strip()]


def test_messages_to_agents_and_users_use_the_glossarys_words():
    found = []
    for pattern in MESSAGE_FILES:
        for path in sorted(ROOT.glob(pattern)):
            place = path.relative_to(ROOT).as_posix()
            for line, text in _messages(path):
                found += [f"{place}:{line}: {token} in {text[:80]!r}" for token in re.findall(r"\w+", text.lower())
                          if any(w in RETIRED for w in words(token)) and (place, token) not in MESSAGE_ALLOWED]
    assert found == [], "messages that use a word docs/glossary.md retired"


# Modules whose docstring is an example config operators copy.
YAML_DOCSTRINGS = ("agentgym.server.presets",)


def docs_code_names() -> list[tuple[str, str]]:
    """``(name, page)`` for the names in the docs' code: Python identifiers and keywords (not its
    strings or comments), YAML keys (the presets module's example too), the ``--flags`` of shell
    lines, and the parameters of signatures in inline code (``solve(task, world)``). The glossary
    page itself lists the retired names, so it is not read."""
    found = []
    for page in (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))):
        place, text = page.relative_to(ROOT).as_posix(), page.read_text(encoding="utf-8")
        if place == "docs/glossary.md":
            continue
        for lang, code in re.findall(r"```(\w*)\n(.*?)```", text, re.S):
            if lang == "python":
                found += [(name, place) for name in _python_names(code)]
            elif lang == "yaml":
                found += [(key, place) for key in _yaml_keys(code)]
            else:
                found += [(flag, place) for flag in re.findall(r"(?<![\w-])--([a-z][\w\-]*)", code)]
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        for parameters in re.findall(r"`[\w.]+\(([^`()]*)\)", prose):
            found += [(name, place) for name in re.findall(r"(?:^|[(,]\s*|\*)([a-z_]\w*)\s*(?=[,=:)]|$)", parameters)]
    for module in YAML_DOCSTRINGS:
        found += [(key, module) for key in _yaml_keys(importlib.import_module(module).__doc__)]
    return found


def _yaml_keys(code: str) -> list[str]:
    return [key for line in code.splitlines() for key in re.findall(r"([\w\-]+)\s*:(?:\s|$)", line.split("#")[0])]


def _python_names(code: str) -> list[str]:
    try:
        return [t.string for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type == tokenize.NAME]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return re.findall(r"\b[A-Za-z_]\w*\b", re.sub(r"#.*|\"[^\"]*\"|'[^']*'", "", code))


def test_the_docs_code_uses_the_glossarys_words():
    assert offenders(docs_code_names()) == [], "docs code that teaches a word docs/glossary.md retired"


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
