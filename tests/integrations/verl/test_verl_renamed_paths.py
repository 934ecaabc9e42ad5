"""Old import paths of the verl integration's modules still work for one release, with a warning."""

from __future__ import annotations

import importlib
import sys

import pytest

from agentgym._deprecated import AgentGymDeprecationWarning

pytest.importorskip("verl")


def test_the_learning_proof_at_its_old_path_warns_and_is_the_same():
    from agentgym.integrations.verl.preflight import learning

    sys.modules.pop("agentgym.integrations.verl.learning", None)
    with pytest.warns(AgentGymDeprecationWarning, match="agentgym.integrations.verl.preflight.learning"):
        old = importlib.import_module("agentgym.integrations.verl.learning")
    assert old.run_learning is learning.run_learning and old.make_setup is learning.make_setup
    assert set(old.__all__) == set(learning.__all__)
