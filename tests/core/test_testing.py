"""The contract checker catches the broken promises it names."""

from __future__ import annotations

import gymnasium
import pytest

from agentgym.core import StepInfo, TextEnv
from agentgym.testing import check_text_env, mangled_actions


class _EchoEnv(TextEnv):
    """Echoes the action; ``flaw`` breaks one promise."""

    def __init__(self, flaw: str = "", **kwargs):
        super().__init__(**kwargs)
        self.flaw = flaw
        self.calls = 0

    def on_reset(self, options):
        return "say something", StepInfo(turn=0)

    def on_step(self, action):
        self.calls += 1
        if self.flaw == "crash" and "[" in action:
            raise ValueError("cannot handle brackets")
        obs = f"{action[:20]}" + (f" #{id(self)}" if self.flaw == "nondeterministic" else "")
        reward = float("nan") if self.flaw == "nan" and action == "" else 0.0
        return obs, reward, action == "stop", StepInfo(turn=self.turn, action="tool")


@pytest.fixture(autouse=True, scope="module")
def _registered():
    gymnasium.register("Echo-v0", entry_point=_EchoEnv)
    yield
    del gymnasium.registry["Echo-v0"]


def test_a_sound_env_passes():
    check_text_env("Echo-v0", ["hello", "[x]", "stop"])


@pytest.mark.parametrize("flaw, message", [
    ("nondeterministic", "same seed and actions differ"),
    ("crash", "cannot handle brackets"),
    ("nan", "non-finite reward"),
])
def test_each_flaw_is_caught(flaw, message):
    with pytest.raises((AssertionError, ValueError), match=message):
        check_text_env("Echo-v0", ["hello", "[x]", "", "again"], flaw=flaw)


def test_mangled_actions_are_deterministic_and_varied():
    a, b = mangled_actions(["Foo[1]", "<answer>x</answer>"], 50, seed=1), mangled_actions(["Foo[1]", "<answer>x</answer>"], 50, seed=1)
    assert a == b and len(set(a)) > 20
