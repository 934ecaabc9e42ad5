"""``TextEnv.turn_cut``: one record where an env's turns end, replacing three loose attributes."""

from __future__ import annotations

from typing import Any

import gymnasium
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgym import AgentGymDeprecationWarning
from agentgym.core import StepInfo, TextEnv, TurnCut
from agentgym.remote.protocol import SessionDescription


class _Echo(TextEnv):
    def on_reset(self, options: dict[str, Any]) -> tuple[str, StepInfo]:
        return "go", StepInfo(turn=0)

    def on_step(self, action: str) -> tuple[str, float, bool, StepInfo]:
        return self.termination(action, 1.0, info=StepInfo(turn=self.turn))


def test_an_env_declares_its_cut_in_one_record_that_the_description_carries():
    class Tagged(_Echo):
        turn_cut = TurnCut(("</answer>",), priority=("</answer>",), in_thoughts=True)

    env = Tagged()
    assert TurnCut.of(gymnasium.wrappers.OrderEnforcing(env)) == env.turn_cut
    assert env.describe()["turn_cut"] == {"stops": ["</answer>"], "priority": ["</answer>"], "in_thoughts": True}


def test_a_0_1_class_body_still_declares_its_cut_with_a_warning():
    with pytest.warns(AgentGymDeprecationWarning, match="turn_cut"):
        class Old(_Echo):
            stop_strings = ("</answer>",)
            stops_in_thoughts = True

    assert Old().turn_cut == TurnCut(("</answer>",), in_thoughts=True)
    assert TurnCut.of(Old()).stops == ("</answer>",)


def test_the_old_attributes_read_and_set_the_record_with_a_warning():
    env = _Echo()
    with pytest.warns(AgentGymDeprecationWarning, match="turn_cut"):
        env.stop_strings = ["</search>", ""]  # what a 0.1 __init__ did; empty strings mark nothing
    assert env.turn_cut == TurnCut(("</search>",))
    with pytest.warns(AgentGymDeprecationWarning, match="turn_cut.priority"):
        assert env.stop_priority == ()
    assert _Echo().turn_cut == TurnCut()  # set on the instance, not the class


def test_an_env_of_another_kind_is_read_by_its_old_attributes_with_a_warning():
    class Foreign(gymnasium.Env):
        stop_strings = ("</x>",)
        stop_priority = ("</x>",)

    with pytest.warns(AgentGymDeprecationWarning):
        assert TurnCut.of(Foreign()) == TurnCut(("</x>",), priority=("</x>",))
    assert TurnCut.of(gymnasium.Env()) == TurnCut()  # no cut declared: none, and no warning


_TAGS = st.lists(st.text(min_size=1, max_size=12), max_size=4).map(tuple)


@given(st.builds(TurnCut, _TAGS, _TAGS, st.booleans()))
def test_the_cut_crosses_the_wire_unchanged(cut):
    description = SessionDescription.model_validate_json(SessionDescription(
        session_id="s", env_id="E-v0", max_action_chars=1, max_observation_chars=1, ttl_s=1.0,
        max_request_bytes=1, turn_cut=cut.to_json()).model_dump_json())
    assert description.turn_cut == cut


def test_a_0_1_server_s_three_fields_still_cut_turns():
    """A trainer upgraded before its env server must not train on uncut turns."""
    old = {"session_id": "s", "env_id": "SearchQA-v0", "max_action_chars": 1, "max_observation_chars": 1,
           "ttl_s": 1.0, "max_request_bytes": 1, "stop_strings": ["</search>"],
           "stop_priority": ["</search>", "</answer>"], "stops_in_thoughts": True}
    assert SessionDescription.model_validate(old).turn_cut == TurnCut(
        ("</search>",), priority=("</search>", "</answer>"), in_thoughts=True)


def test_a_text_env_of_another_kind_is_described_by_its_attributes():
    from agentgym.core import TextSpace
    from agentgym.server.jobs import make_env

    class Plain(gymnasium.Env):
        action_space = observation_space = TextSpace(50)
        action_format = "plain"
        turn_cut = TurnCut(("</a>",))

    gymnasium.register("AgentGymTest/Plain-v0", entry_point=Plain, disable_env_checker=True)
    try:
        env, description = make_env("AgentGymTest/Plain-v0", {})
    finally:
        gymnasium.registry.pop("AgentGymTest/Plain-v0")
    assert description["action_format"] == "plain" and description["turn_cut"]["stops"] == ["</a>"]
    assert description["max_action_chars"] == 50
