"""Every registered env passes the text-env contract check."""

from __future__ import annotations

import subprocess
import sys

import pytest

import agentgym
from agentgym.testing import check_text_env

SCRIPTS = {
    "TravelPlanner-v0": [
        "CitySearch[Texas]",
        "Thought: flights first.\nAction 1: FlightSearch[Nowhere, Elsewhere, 2022-03-01]",
        "NotebookWrite[flights]",
        "GoogleDistanceMatrix[A, B, self-driving]",
        "FlightSearch[A, B, March 1]",
        "Bogus[1]",
        "",
        'Finish[[{"days": 1, "current_city": "from A to B"}]]',
    ],
    "SearchQA-v0": [
        "<think>Find the person first.</think><search>In which city was the founder born?</search>",
        "<search>capital country</search>",
        "",
        "<search>nested <search>x</search></search>",
        "no tags at all",
        "<answer>not sure</answer>",
    ],
}
SCRIPTS["SearchQA-LongForm-v0"] = SCRIPTS["SearchQA-v0"]


def test_every_registered_env_has_a_contract_script():
    assert set(SCRIPTS) == set(agentgym.ENV_IDS)


@pytest.mark.parametrize("env_id", agentgym.ENV_IDS)
def test_env_contract(env_id):
    check_text_env(env_id, SCRIPTS[env_id], fuzz=150)


@pytest.mark.parametrize("env_id", agentgym.ENV_IDS)
def test_namespaced_make_works_without_importing_agentgym(env_id):
    code = f"import gymnasium; e = gymnasium.make('agentgym:{env_id}'); e.reset(seed=0); print(type(e.unwrapped).__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("Env")
