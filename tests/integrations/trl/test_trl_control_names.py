"""TRL's learning controls take verl's names (``frozen_clock``); the old keyword still works for one release."""

from __future__ import annotations

import contextlib

import pytest

from agentgym._deprecated import AgentGymDeprecationWarning

pytest.importorskip("trl")


@pytest.fixture
def untrained(monkeypatch):
    """run_schedule with the training swapped out: which arm ran, and whether the clock was frozen."""
    from agentgym.integrations.trl import controls, learning

    seen: dict = {"frozen": False}

    @contextlib.contextmanager
    def frozen_clock():
        seen["frozen"] = True
        yield

    def run_arm(recipe, arm, **kwargs):
        seen["arm"] = arm
        return [{"reward": 0.0, "terms": {"format": 0.0, "exact_match": 0.0}}] * kwargs["steps"]

    monkeypatch.setattr(controls, "frozen_clock", frozen_clock)
    monkeypatch.setattr(controls, "run_arm", run_arm)
    monkeypatch.setattr(learning, "answer_recipe", lambda reward: reward)
    return learning.run_schedule, seen


@pytest.mark.parametrize("frozen_clock", [False, True])
def test_run_schedule_freezes_the_clock_exactly_when_asked_by_verls_name(untrained, tmp_path, frozen_clock):
    run_schedule, seen = untrained
    run_schedule(0, str(tmp_path), steps=2, frozen_clock=frozen_clock)
    assert seen == {"frozen": frozen_clock, "arm": "real"}


def test_run_schedules_old_frozen_keyword_warns_and_still_freezes(untrained, tmp_path):
    run_schedule, seen = untrained
    with pytest.warns(AgentGymDeprecationWarning, match="'frozen' is deprecated, use 'frozen_clock'"):
        run_schedule(0, str(tmp_path), steps=2, frozen=True)
    assert seen["frozen"] is True
