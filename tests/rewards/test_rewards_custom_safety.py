"""Custom reward terms resolve only public callables outside the standard library (finding 3 of issue 12).

On main, ``{"kind": "custom", "function": "os:abort"}`` killed the process and ``signal:pause``
blocked it forever: every name here that must be refused is refused *before* it is called, and the
standard-library ones before their module is even imported.
"""

from __future__ import annotations

import sys

import pytest

from agentgym import ConfigError, StepInfo
from agentgym.rewards import Episode, build_shaper, load_spec


def custom(function: str) -> dict:
    return {"terms": [{"kind": "custom", "function": function, "weight": 1.0}]}


@pytest.mark.parametrize("function", [
    "os:abort", "os:fork", "signal:pause", "builtins:input", "posix:abort", "subprocess:call", "shutil:rmtree",
    "ctypes:string_at", "multiprocessing:Process", "socket:create_connection", "importlib:import_module", "pty:fork",
    "sys:exit", "time:sleep", "code:interact", "pdb:set_trace", "webbrowser:open", "os.path:exists",
    "asyncio.subprocess:create_subprocess_shell", "concurrent.futures.process:ProcessPoolExecutor",
])
def test_standard_library_functions_are_refused_when_the_spec_is_loaded(function):
    with pytest.raises(ConfigError, match="standard library") as error:
        load_spec(custom(function))
    assert error.value.field == "terms[0].function"


def test_a_refused_standard_library_module_is_not_even_imported():
    sys.modules.pop("antigravity", None)  # importing it opens a web browser
    with pytest.raises(ConfigError, match="standard library"):
        build_shaper(custom("antigravity:geohash"))
    assert "antigravity" not in sys.modules


@pytest.mark.parametrize("attribute", ["os.abort", "stop", "pause", "environ.clear", "shell", "subprocess.run"])
def test_standard_library_callables_reached_through_a_user_module_are_refused(attribute):
    with pytest.raises(ConfigError, match="standard library"):
        build_shaper(custom(f"reward_fixture_reexports:{attribute}"))


@pytest.mark.parametrize("function, allowed", [
    ("reward_fixture_reexports:_private", "public names"),
    ("_reward_fixture:answer", "public names"),
    ("_thread:exit", "public names"),
    ("reward_fixture_reexports:Scorer.__call__", "public names"),
    (".relative:fn", "public names"),
    ("reward_fixture_reexports", "public names"),
    ("a:b:c", "public names"),
    ("reward_fixture_reexports:" + "x" * 300, "public names"),
    ("reward_fixture_reexports:threshold", "a callable"),
    ("reward_fixture_reexports:no_inputs", "at least one of"),
    ("reward_fixture_reexports:missing", "importable"),
])
def test_private_malformed_and_non_callable_names_are_config_errors(function, allowed):
    with pytest.raises(ConfigError, match=allowed):
        build_shaper(custom(function))


def test_your_own_functions_and_callable_objects_still_work():
    episode = Episode([StepInfo(turn=1, action="answer", terminated_reason="answer", answer="x")],
                      actions=["<answer>x</answer>"])
    assert build_shaper(custom("reward_fixture_reexports:scorer")).shape(episode).total == 1.0
    assert build_shaper(custom("reward_fixture_terms:answer_chars")).shape(episode).total == 1.0
