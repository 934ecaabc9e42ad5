"""The OpenEnv front door: OpenEnv's own server code, played with OpenEnv's own client on loopback.

Each episode is played through OpenEnv and, step for step, through a local env with the same
seed and actions: the observations, rewards, flags and evaluations must be the same.

The main suite runs this file on openenv-core 0.3.0 (the ``dev`` extra), ``make test-openenv``
on openenv 0.10.0 (the ``openenv`` extra, in its own venv); the task routes are 0.10's.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import gymnasium
import pytest

pytest.importorskip("openenv.core", reason="the OpenEnv front door needs openenv: pip install 'agentgym-rl[openenv]'")

import httpx  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import settings as hypothesis_settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from openenv.core import GenericEnvClient  # noqa: E402
from openenv.core.env_server import interfaces  # noqa: E402
from server_helpers import SLEEPY, settings  # noqa: E402

from agentgym.envs.travelplanner.scripted import gold_plan_actions  # noqa: E402
from agentgym.remote.protocol import encode  # noqa: E402
from agentgym.server import splits  # noqa: E402
from agentgym.server.openenv_app import AgentgymAction, AgentgymEnvClient, create_openenv_app  # noqa: E402
from agentgym.server.live_server import LiveServer  # noqa: E402
from agentgym.server.presets import EnvPreset, Presets  # noqa: E402

task_routes = pytest.mark.skipif(not hasattr(interfaces, "TaskProvider"),
                                 reason="OpenEnv's task routes came in openenv 0.10 (make test-openenv)")


@pytest.fixture(scope="module")
def live_openenv():
    with LiveServer(create_openenv_app(settings(env_ids=("TravelPlanner-v0", "SearchQA-v0")),
                                       "TravelPlanner-v0")) as tp, \
         LiveServer(create_openenv_app(settings(env_ids=("SearchQA-v0",)), "SearchQA-v0")) as qa:
        yield {"TravelPlanner-v0": tp, "SearchQA-v0": qa}


@pytest.fixture(scope="module")
def openenv_server(live_openenv):
    return {env_id: live.url for env_id, live in live_openenv.items()}


async def _play(url: str, env_id: str, index: int, actions_for) -> None:
    local = gymnasium.make(env_id, action_format="json")
    expected, _ = local.reset(seed=index, options={"task_index": index})
    async with AgentgymEnvClient(base_url=url) as env:
        result = await env.reset(seed=index, env_kwargs={"action_format": "json"}, options={"task_index": index})
        assert result.observation.text == expected and not result.done
        for action in actions_for(local.unwrapped):
            result = await env.step(AgentgymAction(text=action))
            observation, reward, terminated, truncated, info = local.step(action)
            assert result.observation.text == observation
            assert (result.reward, result.done, result.observation.truncated) == (reward, terminated or truncated,
                                                                                 truncated)
            assert result.observation.info == json.loads(json.dumps(info))
        assert result.done and result.reward == 1.0
        state = await env.state()
        assert state.env_id == env_id and state.step_count == len(actions_for(local.unwrapped))


def test_openenv_client_plays_a_travelplanner_and_a_searchqa_episode(openenv_server):
    def plan(env):
        return gold_plan_actions(env.task, "json")

    def search_then_answer(env):
        question = env.task
        return ['<tool_call>{"name": "search", "arguments": {"query": %s}}</tool_call>' % json.dumps(question.text),
                f"<answer>{question.golden_answers[0]}</answer>"]

    async def main() -> None:
        await asyncio.gather(_play(openenv_server["TravelPlanner-v0"], "TravelPlanner-v0", 4, plan),  # concurrent
                             _play(openenv_server["TravelPlanner-v0"], "TravelPlanner-v0", 5, plan))  # sessions
        await _play(openenv_server["SearchQA-v0"], "SearchQA-v0", 2, search_then_answer)

    asyncio.run(main())


def test_openenv_keeps_the_trust_boundary(openenv_server):
    async def main() -> None:
        async with GenericEnvClient(base_url=openenv_server["SearchQA-v0"]) as env:
            for arguments in ({"env_kwargs": {"retriever": "http://169.254.169.254/"}},
                              {"env_kwargs": {"questions": "/etc/passwd"}},
                              {"options": {"cache_dir": "/tmp"}},
                              {"preset": "not-a-preset"}):
                with pytest.raises(Exception, match="ConfigError|not allowed|expected"):  # noqa: B017
                    await env.reset(**arguments)
            result = await env.reset(seed=0)  # the session serves on after refusals
            assert "Question:" in result.observation["text"]

    asyncio.run(main())


# -- OpenEnv's HTTP routes (issue 30, item 5) -------------------------------------------------
@pytest.fixture
def server_log():
    """What uvicorn and the server logged while the test ran (uvicorn's loggers do not reach the root's)."""
    import logging

    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    loggers = [logging.getLogger(name) for name in ("uvicorn.error", "agentgym.server")]
    for logger in loggers:
        logger.addHandler(handler)
    yield records
    for logger in loggers:
        logger.removeHandler(handler)


def test_http_step_plays_a_one_step_episode(openenv_server):
    """OpenEnv's HTTP /step builds a fresh environment per request; it answered 500 (step before reset)."""
    import httpx

    local = gymnasium.make("SearchQA-v0")
    local.reset(seed=3, options={"task_index": 2})
    action = f"<answer>{local.unwrapped.task.golden_answers[0]}</answer>"
    observation, reward, terminated, truncated, info = local.step(action)
    reply = httpx.post(openenv_server["SearchQA-v0"] + "/step", timeout=30,
                       json={"action": {"text": action}, "seed": 3, "options": {"task_index": 2}})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["observation"]["text"] == observation and body["reward"] == reward == 1.0 and body["done"]
    assert body["observation"]["info"]["report"] == json.loads(json.dumps(info["report"]))


@pytest.mark.parametrize(("route", "body", "field"), [
    ("/reset", {"env_kwargs": {"retriever": "http://169.254.169.254/"}}, "retriever"),
    ("/reset", {"options": {"cache_dir": "/tmp"}}, "options.cache_dir"),
    ("/reset", {"preset": "not-a-preset"}, "preset"),
    ("/reset", {"sead": 0}, "reset"),
    ("/step", {"action": {"text": "x"}, "env_kwargs": {"tasks": "/etc/passwd"}}, "tasks"),
    ("/reset", {"split": "/etc/passwd"}, "split"),  # a split is a name the operator's config gives
    ("/reset", {"split": "test", "env_kwargs": {"tasks": "train"}}, "split"),
    ("/reset", {"index": -1}, "index"),
    ("/reset", {"index": 2, "options": {"task_id": "train-0"}}, "index"),
])
def test_http_refusals_are_400_naming_the_field_without_a_traceback(openenv_server, server_log, route, body, field):
    """They answered 500 with a traceback in the log (WebSocket answered them cleanly)."""
    import httpx

    reply = httpx.post(openenv_server["SearchQA-v0"] + route, json=body, timeout=30)
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["type"] == "ConfigError" and error["message"].startswith(f"{field}=") and reply.json()["detail"]
    assert not [r for r in server_log if r.exc_info], [r.getMessage() for r in server_log]


def test_http_bodies_get_serves_cap(openenv_server):
    """One 200 MB POST /reset was read whole (the server went from 347 to 709 MB)."""
    import socket

    import httpx

    host, port = openenv_server["SearchQA-v0"].removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 200000000\r\n\r\n" + b'{"seed": ' + b" " * 60_000)
        reply = sock.recv(65536)
        head, _, body = reply.partition(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        while len(body) < length:  # h11 (without httptools) sends the head and the body apart
            body += sock.recv(65536)
        reply = head + b"\r\n\r\n" + body
    assert reply.startswith(b"HTTP/1.1 413") and b"max_request_bytes" in reply

    def streamed():
        yield b'{"seed": 0, "options": {"task": "'
        for _ in range(200):  # 10 MB without a Content-Length, past the 8 MiB cap
            yield b"x" * 50_000
        yield b'"}}'

    refused = httpx.post(openenv_server["SearchQA-v0"] + "/reset", content=streamed(), timeout=30)
    assert refused.status_code == 413 and "max_request_bytes" in refused.json()["detail"]
    assert httpx.post(openenv_server["SearchQA-v0"] + "/reset", json={"seed": 0}, timeout=30).status_code == 200


# -- a session's close (issue 32, item 6) ------------------------------------------------------
def _settled(live: LiveServer) -> None:
    """Wait until uvicorn runs no request or WebSocket task (each logs its failure before it ends)."""
    deadline = time.monotonic() + 15
    while live.server.server_state.tasks and time.monotonic() < deadline:
        time.sleep(0.02)


def test_closing_a_session_logs_no_traceback(live_openenv, server_log):
    """Each OpenEnv client's close logged 60 lines of "Exception in ASGI application" (openenv-core 0.3
    closes the WebSocket its client has already closed)."""
    live = live_openenv["SearchQA-v0"]

    async def main() -> None:
        for _ in range(5):
            async with GenericEnvClient(base_url=live.url) as env:
                await env.reset(seed=0)
                await env.step({"text": "<answer>x</answer>"})

    asyncio.run(main())
    with AgentgymEnvClient(base_url=live.url).sync() as env:
        env.reset(seed=1)
    _settled(live)
    assert not [r.getMessage() for r in server_log if r.exc_info or r.levelno >= logging.ERROR]
    assert len(live.server.config.app.state.server.pool) == 0  # and the sessions are closed


# -- the task API: splits and their tasks (issue 32, item 6) -----------------------------------
@functools.cache
def _count(env_id: str, split: str) -> int:
    return len(gymnasium.make(env_id, tasks=split).unwrapped.tasks)


def _local_tasks(env_id: str, split: str) -> list[dict]:
    unwrapped = gymnasium.make(env_id, tasks=split).unwrapped
    return [json.loads(encode({**unwrapped.describe_task(task), "index": i, "split": split}))
            for i, task in enumerate(unwrapped.tasks)]


@pytest.mark.parametrize(("env_id", "split", "index"), [("TravelPlanner-v0", "validation", 7),
                                                        ("SearchQA-v0", "test", 3)])
def test_reset_plays_the_task_its_split_and_index_name(openenv_server, env_id, split, index):
    local = gymnasium.make(env_id, tasks=split)
    expected, info = local.reset(seed=0, options={"task_index": index})

    async def main() -> dict:
        async with GenericEnvClient(base_url=openenv_server[env_id]) as env:
            return (await env.reset(seed=0, split=split, index=index)).observation

    observation = asyncio.run(main())
    assert observation["text"] == expected and observation["info"]["task_id"] == info["task_id"] == f"{split}-{index}"
    over_http = httpx.post(openenv_server[env_id] + "/reset", json={"seed": 0, "split": split, "index": index},
                           timeout=60)
    assert over_http.status_code == 200 and over_http.json()["observation"]["text"] == expected


@task_routes
def test_task_routes_list_each_envs_splits_and_tasks(live_openenv):
    """OpenEnv 0.10's task routes answered 501: no split or task of an agentgym env was discoverable."""
    for env_id, live in live_openenv.items():
        url = f"{live.url}/{env_id}"
        expected = {split: _local_tasks(env_id, split) for split in ("train", "validation", "test")}
        assert httpx.get(url + "/splits", timeout=60).json() == [
            {"name": split, "type": split, "num_tasks": len(tasks)} for split, tasks in expected.items()]
        for split, tasks in expected.items():
            assert httpx.post(url + "/num_tasks", json={"split": split}, timeout=60).json() == {"num_tasks": len(tasks)}
            assert httpx.post(url + "/tasks", json={"split": split}, timeout=60).json()["tasks"] == tasks
            last = httpx.post(url + "/task", json={"split": split, "index": len(tasks) - 1}, timeout=60)
            assert last.json() == {"task": tasks[-1]}
            past = httpx.post(url + "/task", json={"split": split, "index": len(tasks)}, timeout=60)
            assert past.status_code == 400
        assert len(live.server.config.app.state.server.pool) == 0  # each read's session is closed


@task_routes
def test_task_rows_never_carry_how_a_task_is_graded(openenv_server):
    qa = httpx.post(openenv_server["SearchQA-v0"] + "/SearchQA-v0/tasks", json={"split": "train"}, timeout=60)
    assert {key for task in qa.json()["tasks"] for key in task} == {"id", "text", "answer_type", "type", "index",
                                                                    "split"}
    tp = httpx.post(openenv_server["TravelPlanner-v0"] + "/TravelPlanner-v0/tasks", json={"split": "train"},
                    timeout=60).json()["tasks"]
    assert tp and not {"annotated_plan", "reference_information"} & {key for task in tp for key in task}


@task_routes
@hypothesis_settings(max_examples=25, deadline=None)
@given(start=st.none() | st.integers(-120, 120), stop=st.none() | st.integers(-120, 120))
def test_task_ranges_follow_python_slices(openenv_server, start, stop):
    reply = httpx.post(openenv_server["TravelPlanner-v0"] + "/TravelPlanner-v0/task_range",
                       json={"split": "test", "start": start, "stop": stop}, timeout=60)
    everything = list(range(_count("TravelPlanner-v0", "test")))
    assert [task["index"] for task in reply.json()["tasks"]] == everything[start:stop]


@task_routes
def test_task_replies_are_bounded_in_bytes_and_page_on(openenv_server, monkeypatch):
    """A split's tasks come one reply's worth at a time; ``list_tasks`` is a preview, ``num_tasks`` the total."""
    monkeypatch.setattr(splits, "TASKS_REPLY_BYTES", 8 << 10)
    url = openenv_server["SearchQA-v0"] + "/SearchQA-v0"
    everything = _local_tasks("SearchQA-v0", "validation")
    preview = httpx.post(url + "/tasks", json={"split": "validation"}, timeout=60)
    got = preview.json()["tasks"]
    assert len(preview.content) < (8 << 10) + 100 and 0 < len(got) < len(everything) == 250
    while len(got) < len(everything):
        page = httpx.post(url + "/task_range", json={"split": "validation", "start": len(got)}, timeout=60)
        assert len(page.content) < (8 << 10) + 100 and page.json()["tasks"]
        got += page.json()["tasks"]
    assert got == everything
    assert httpx.post(url + "/num_tasks", json={"split": "validation"}, timeout=60).json() == {"num_tasks": 250}


@task_routes
def test_presets_are_splits_and_an_oversized_task_is_clipped(tmp_path):
    """The operator's presets are splits by name (the embedded world's splits are not, when the default
    preset has its own questions and corpus); a task whose description passes 64 KiB comes as its id."""
    questions, corpus = tmp_path / "mine.jsonl", tmp_path / "corpus.jsonl"
    questions.write_text("\n".join(json.dumps(row) for row in (
        {"id": "huge", "question": "Who? " * 20_000, "golden_answers": ["x"]},
        {"id": "paris", "question": "Which country is Paris in?", "golden_answers": ["France"]})))
    corpus.write_text(json.dumps({"id": "p0", "contents": '"Paris"\nParis is the capital of France.'}))
    presets = Presets(presets=(EnvPreset(name="mine", env_id="SearchQA-v0",
                                         kwargs={"tasks": str(questions), "corpus": str(corpus)}),
                               EnvPreset(name="plain", env_id="SearchQA-v0")))
    with LiveServer(create_openenv_app(settings(env_ids=("SearchQA-v0",), presets=presets), "SearchQA-v0")) as live:
        url = live.url + "/SearchQA-v0"
        assert httpx.get(url + "/splits", timeout=60).json() == [{"name": "mine", "type": "validation", "num_tasks": 2},
                                                                 {"name": "plain", "type": "validation",
                                                                  "num_tasks": 2000}]
        huge, paris = httpx.post(url + "/tasks", json={"split": "mine"}, timeout=60).json()["tasks"]
        assert huge == {"id": "huge", "index": 0, "split": "mine", "clipped": "the task's description is over 65536 "
                                                                             "bytes"}
        assert paris == {"id": "paris", "text": "Which country is Paris in?", "index": 1, "split": "mine"}

        async def main() -> str:
            async with GenericEnvClient(base_url=live.url) as env:
                return (await env.reset(split="mine", index=1)).observation["text"]

        assert asyncio.run(main()).endswith("Which country is Paris in?")
        for split in (str(questions), "train"):
            refused = httpx.post(url + "/tasks", json={"split": split}, timeout=60)
            assert refused.status_code == 400 and refused.json()["error"]["message"].startswith("split=")
            refused = httpx.post(live.url + "/reset", json={"split": split}, timeout=60)
            assert refused.status_code == 400 and refused.json()["error"]["message"].startswith("split=")
        refused = httpx.post(live.url + "/reset", json={"preset": "plain", "split": "mine"}, timeout=60)
        assert refused.status_code == 400 and "a preset's split is the preset" in refused.json()["detail"]


@task_routes
@pytest.mark.realdata
def test_a_split_the_world_lacks_is_left_out(real_travelplanner):
    """The real TravelPlanner release has no test queries: its splits are the preset's, train and validation."""
    presets = Presets(presets=(EnvPreset(name="real", env_id="TravelPlanner-v0",
                                         kwargs={"database": str(real_travelplanner)}),))
    app = create_openenv_app(settings(env_ids=("TravelPlanner-v0",), presets=presets), "TravelPlanner-v0")
    with LiveServer(app) as live:
        listed = httpx.get(live.url + "/TravelPlanner-v0/splits", timeout=60).json()
    assert listed == [{"name": "real", "type": "validation", "num_tasks": 45},
                      {"name": "train", "type": "train", "num_tasks": 45},
                      {"name": "validation", "type": "validation", "num_tasks": 180}]


@task_routes
def test_an_env_without_a_task_list_answers_501():
    with LiveServer(create_openenv_app(settings(env_ids=(SLEEPY,)), SLEEPY)) as live:
        assert httpx.get(live.url + "/list_environments", timeout=30).json() == ["AgentGymTest-Sleepy-v0"]
        reply = httpx.get(live.url + "/AgentGymTest-Sleepy-v0/splits", timeout=30)
    assert reply.status_code == 501


@task_routes
def test_the_docs_task_example_runs(tmp_path):
    """docs/server.md's task-route example (the main suite's openenv-core 0.3 has no task routes)."""
    repo = Path(__file__).resolve().parents[2]
    # The docs tests' own scanner finds the block; imported in the child, where nothing rewrites its asserts.
    run = (f"import sys; sys.path.insert(0, {str(repo / 'tests')!r}); from test_docs import ALL\n"
           "blocks = [e for e in ALL if e.page == 'docs/server.md' and e.marker and 'openenv 0.10' in e.marker]\n"
           "assert len(blocks) == 1, blocks\n"
           "exec(compile(blocks[0].code, 'docs/server.md', 'exec'), {'__name__': '__main__'})")
    out = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(repo)})
    assert out.returncode == 0, out.stderr[-3000:]
    assert "'name': 'validation', 'type': 'validation', 'num_tasks': 180" in out.stdout
    assert "validation-179" in out.stdout


@task_routes  # the main suite's openenv-core runs the same app; a second process pays openenv's import again
def test_the_command_serves_the_door(tmp_path):
    """``agentgym openenv``: OpenEnv's server on the port asked for, a reset by split and index, the task routes."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    repo = Path(__file__).resolve().parents[2]
    command = [sys.executable, "-m", "agentgym", "openenv", "SearchQA-v0", "--port", str(port), "--env-calls", "inline"]
    server = subprocess.Popen(command, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(repo)},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, server.stdout.read().decode()[-2000:]
            time.sleep(0.2)
        reply = httpx.post(url + "/reset", json={"seed": 0, "split": "test", "index": 3}, timeout=60)
        assert reply.status_code == 200 and reply.json()["observation"]["info"]["task_id"] == "test-3"
        assert [s["name"] for s in httpx.get(url + "/SearchQA-v0/splits", timeout=60).json()] == [
            "train", "validation", "test"]
    finally:
        server.terminate()
        server.wait(timeout=30)
