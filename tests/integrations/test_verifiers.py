"""The verifiers v1 bridge, driven through verifiers 0.4.0's own eval entry point (``run_eval``, what
``vf-eval`` runs) with its ``null`` chat harness in a subprocess runtime, against the chat stub on
loopback (it streams and stops as vLLM does).

verifiers pins mcp==2.0.0 and agentgym's MCP door mcp==2.3.0, so these run in their own environment
(``make test-verifiers``); elsewhere they skip.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("verifiers.v1", reason="the verifiers extra has its own environment: make test-verifiers")

from verifiers.v1.cli.eval.runner import run_eval  # noqa: E402
from verifiers.v1.configs.cli.eval import EvalConfig  # noqa: E402
from verifiers.v1.utils.loaders import environment_class, taskset_class  # noqa: E402

from agentgym.agents.stub import ChatStub  # noqa: E402
from agentgym.integrations.verifiers import AgentGymEnv, AgentGymTaskset  # noqa: E402
from agentgym.server.live_server import LiveServer  # noqa: E402

from scripted_episodes import AFTER_ACTION, REWARDS, dead_retriever, direct_total, replying, scripts  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _harness_environment(monkeypatch):
    # verifiers' chat harness is a uv script: uv from this environment, the stub's key from the env.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STUB_API_KEY", "not-a-secret")


class Policy:
    """Replies from ``table`` by the conversation's first user message and the assistant turns so far."""

    def __init__(self, table: dict[str, list[str]], fallback: str = "GiveUp[no script]") -> None:
        self.table, self.fallback = table, fallback

    def __call__(self, messages, tools):
        first = next(m["content"] for m in messages if m["role"] == "user")
        turn = sum(m["role"] == "assistant" for m in messages)
        return {"content": replying(self.table, first, turn, self.fallback)}


def evaluate(policy, env_id: str, tmp_path: Path, *, num_tasks: int, rollouts: int, max_turns: int = 16,
             **taskset) -> tuple[list, ChatStub]:
    stub = ChatStub(policy)
    with LiveServer(stub.app()) as server:
        config = EvalConfig(
            env={"taskset": {"id": "agentgym-verifiers", "env_id": env_id, "reward": REWARDS[env_id],
                             "num_tasks": num_tasks, **taskset},
                 "agent": {"runtime": {"type": "subprocess"}, "max_turns": max_turns}},
            num_rollouts=rollouts, sampling={"max_tokens": 4096}, rich=None, push=False, output_dir=tmp_path,
            run={"dir": "run"}, model="stub", client={"base_url": server.url + "/v1", "api_key_var": "STUB_API_KEY"})
        episodes = asyncio.run(run_eval(config))
    return episodes, stub


def first_user(request: dict) -> str:
    return next(m["content"] for m in request["messages"] if m["role"] == "user")


def test_the_plugin_id_resolves_to_the_taskset_and_env():
    assert taskset_class("agentgym-verifiers") is AgentGymTaskset
    assert environment_class("agentgym-verifiers") is AgentGymEnv


def test_searchqa_gold_answers_through_vf_eval(tmp_path):
    table = scripts("SearchQA-v0", 2)
    episodes, stub = evaluate(Policy(table), "SearchQA-v0", tmp_path, num_tasks=2, rollouts=2)
    assert len(episodes) == 4 and all(e.ok for e in episodes)
    prompts = list(table)
    for episode in episodes:
        (trace,) = episode.traces
        index = int(episode.task.data.id.split("-")[1])
        total, terms = direct_total("SearchQA-v0", table[prompts[index]], seed=0, index=index)
        assert trace.rewards["agentgym"].score == total == 1.0
        assert trace.metrics["outcome"] == 1.0 and trace.metrics["model_turns"] == 1.0
        assert {k: trace.metrics[f"term/{k}"] for k in terms} == terms
        (action,) = trace.info["agentgym"]["actions"]  # cut at the first action: the invented text is gone
        assert action.endswith("</answer>") and AFTER_ACTION not in action
    for request in stub.requests:  # agentgym's own prompt as the user's turn, the env's stops in sampling
        assert [m["role"] for m in request["messages"]] == ["user"] and first_user(request) in table
        assert request["stop"] == ["</search>", "</answer>"] and request["include_stop_str_in_output"] is True


def test_travelplanner_gold_plan_through_vf_eval(tmp_path):
    # Sole-planning (the reference information in the prompt, one turn: the plan): the chat harness
    # relaunches its program on every turn, seconds each, so the 11-turn tool-use episode would take a minute.
    table = scripts("TravelPlanner-v0", 1, mode="sole-planning")
    (replies,) = table.values()
    episodes, stub = evaluate(Policy(table), "TravelPlanner-v0", tmp_path, num_tasks=1, rollouts=1,
                              env_kwargs={"mode": "sole-planning"})
    ((trace,),) = [e.traces for e in episodes]
    total, terms = direct_total("TravelPlanner-v0", replies, seed=0, index=0, mode="sole-planning")
    assert episodes[0].ok and trace.rewards["agentgym"].score == total and trace.metrics["outcome"] == 1.0
    assert {k: trace.metrics[f"term/{k}"] for k in terms} == terms
    assert trace.metrics["model_turns"] == len(replies) == len(stub.requests)
    assert "stop" not in stub.requests[0]  # TravelPlanner's ReAct actions declare no stop string


def test_a_retriever_failure_is_an_episode_error_not_a_zero(tmp_path):
    policy = Policy({}, fallback="<search>capital of Zasyvford</search>")
    episodes, _ = evaluate(policy, "SearchQA-v0", tmp_path, num_tasks=1, rollouts=2,
                           env_kwargs={"retriever": dead_retriever()})
    for episode in episodes:
        (trace,) = episode.traces
        assert not episode.ok and "EpisodeFailed" in episode.errors[-1].message
        assert "retriever_unreachable" in episode.errors[-1].message
        assert trace.info["agentgym"]["failure"]["reason"] == "retriever_unreachable"
        assert trace.rewards.get("agentgym") is None  # unscored: no reward of 0 reaches a baseline


def test_a_group_starts_from_one_task(tmp_path):
    table = scripts("SearchQA-v0", 2, seed=7)
    episodes, stub = evaluate(Policy(table), "SearchQA-v0", tmp_path, num_tasks=2, rollouts=3, seed=7)
    by_task: dict[str, set[str]] = {}
    for episode in episodes:
        assert episode.task.data.start == {"seed": 7, "options": {"task_id": episode.task.data.id}}
    for request in stub.requests:
        by_task.setdefault(first_user(request), set()).add(json.dumps(request["messages"]))
    assert len(by_task) == 2 and all(len(prompts) == 1 for prompts in by_task.values())
    assert len(stub.requests) == 6


def test_the_docs_page_example_runs(tmp_path):
    sys.path.insert(0, str(REPO / "tests"))
    from test_docs import ALL  # the docs tests' own scanner

    blocks = [e for e in ALL if e.page == "docs/verifiers.md" and e.marker and "its own environment" in e.marker]
    assert blocks and all(e.lang == "python" for e in blocks)
    code = "\n".join(e.code for e in blocks)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 0, out.stderr[-3000:]
    assert "reward 1.0" in out.stdout
