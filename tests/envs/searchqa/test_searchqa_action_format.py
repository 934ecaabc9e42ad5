"""``protocol=`` folded into ``action_format`` (glossary: "protocol" is only the server's wire format):
``protocol="search-r1"`` is ``action_format="search-r1"``, ``protocol="agentgym"`` keeps the format
given; both still work for a release, with a warning."""

from __future__ import annotations

import importlib

import gymnasium
import pytest

import agentgym  # noqa: F401
from agentgym._deprecated import AgentGymDeprecationWarning
from agentgym.errors import ConfigError

SMALL = {"synthetic_size": "small"}


def _plays(env) -> tuple:
    inner = env.unwrapped
    return inner.action_format, inner.search_r1, inner.max_turns, inner.turn_cut.stops, inner.turn_cut.priority


def test_search_r1_is_an_action_format():
    env = gymnasium.make("SearchQA-v0", action_format="search-r1", **SMALL)
    assert _plays(env) == ("search-r1", True, 5, ("</search>",), ("</search>", "</answer>"))
    obs, _ = env.reset(seed=0)
    assert obs.startswith("Answer the given question.")  # Search-R1's own prompt
    _, _, _, _, info = env.step("no tags at all")
    assert info["error"]["code"] == "unparseable_action" and info["extra"]["search_r1"]["valid_action_stats"] == 0


@pytest.mark.parametrize(("protocol", "given", "expected"), [
    ("search-r1", {}, "search-r1"), ("search-r1", {"action_format": "tags"}, "search-r1"),
    ("agentgym", {}, "tags"), ("agentgym", {"action_format": "json"}, "json"),
])
def test_the_old_protocol_kwarg_works_and_warns(protocol, given, expected):
    with pytest.warns(AgentGymDeprecationWarning, match="'protocol'"):
        old = gymnasium.make("SearchQA-v0", protocol=protocol, **given, **SMALL)
    assert _plays(old) == _plays(gymnasium.make("SearchQA-v0", action_format=expected, **SMALL))
    with pytest.warns(AgentGymDeprecationWarning, match="SearchQAEnv.protocol"):
        assert old.unwrapped.protocol == protocol


def test_the_old_protocol_kwarg_is_checked():
    with pytest.raises(ConfigError, match="protocol='vanilla'"):
        gymnasium.make("SearchQA-v0", protocol="vanilla", **SMALL)
    with pytest.raises(ConfigError, match="action_format='json'"), pytest.warns(AgentGymDeprecationWarning):
        gymnasium.make("SearchQA-v0", protocol="search-r1", action_format="json", **SMALL)


def test_kwarg_errors_list_action_format_not_protocol():
    with pytest.raises(ConfigError) as caught:
        gymnasium.make("SearchQA-v0", protocl="search-r1", **SMALL)
    assert "action_format" in str(caught.value) and "'protocol'" not in str(caught.value)
    with pytest.raises(ConfigError, match="'search-r1'"):
        gymnasium.make("SearchQA-v0", action_format="xml", **SMALL)


def test_old_module_and_constant_names_work_and_warn():
    env_module = importlib.import_module("agentgym.envs.searchqa.env")
    with pytest.warns(AgentGymDeprecationWarning, match="PROTOCOLS"):
        assert env_module.PROTOCOLS == ("agentgym", "search-r1")
    with pytest.warns(AgentGymDeprecationWarning, match="REWARDS"):
        assert env_module.REWARDS == env_module.METRICS == ("em", "subem", "f1")
    import sys

    sys.modules.pop("agentgym.envs.searchqa.protocol", None)
    with pytest.warns(AgentGymDeprecationWarning, match="searchqa.protocol"):
        old = importlib.import_module("agentgym.envs.searchqa.protocol")
    from agentgym.envs.searchqa.actions import read_action

    assert old.read_action is read_action
