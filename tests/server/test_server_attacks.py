"""The env server under a hostile client holding a valid token (issue 12), over real uvicorn on loopback.

Each attack is refused before anything is built: the reply is a 400/422 naming the field and what
is allowed, the files and folders it aimed at are intact, a loopback "attacker" HTTP server
receives nothing, and the server goes on answering. Where main accepted the request, the test
plays the session to its end (that is when a judge or retriever would be called), so on main
the attack shows.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from server_helpers import OTHER_TOKEN, SLEEPY, TOKEN, auth

from agentgym.remote._connection import Endpoint, SyncConnection
from agentgym._deprecated import AgentGymDeprecationWarning
from agentgym.errors import ConfigError
from agentgym.remote import RemoteEnv

TASKS = [{"question": "Which city is the capital of Texas?", "golden_answers": ["Austin"]}]  # SearchQA's inline rows
CORPUS = [{"id": "0", "contents": "Austin is the capital of Texas."}]


class Attacker:
    """A loopback HTTP server that records every request it gets (and answers like a judge would)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        attacker = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802  (http.server's naming)
                length = int(self.headers.get("content-length", 0))
                self.rfile.read(length)
                attacker.requests.append(("POST", self.path, dict(self.headers)))
                body = json.dumps({"choices": [{"message": {"content": "1"}}], "result": [[]]}).encode()
                self.send_response(200)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST  # noqa: N815

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def attacker():
    server = Attacker()
    yield server
    server.close()


@pytest.fixture(scope="module")
def server():
    from server_helpers import settings

    from agentgym.server import create_app
    from agentgym.server.live_server import LiveServer

    with LiveServer(create_app(settings(env_workers=2, request_timeout_s=5))) as live:
        yield live


def _post(url: str, path: str, body: bytes | dict, token: str = TOKEN) -> tuple[int, dict]:
    conn = SyncConnection(Endpoint.parse(url), timeout=60)
    try:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        reply = conn.request("POST", path, data, {**auth(token), "content-type": "application/json"})
        return reply.status, json.loads(reply.body)
    finally:
        conn.close()


def _healthy(url: str) -> bool:
    conn = SyncConnection(Endpoint.parse(url), timeout=10)
    try:
        return json.loads(conn.request("GET", "/health", None, {}).body)["status"] == "ok"
    finally:
        conn.close()


def _attempt(url: str, env_id: str, kwargs: dict, finish: str = "<answer> Austin </answer>") -> tuple[int, dict]:
    """Create the session; if the server accepts it (main did), play it to the end, as an attacker would."""
    status, reply = _post(url, "/v1/sessions", {"env_id": env_id, "kwargs": kwargs})
    if status == 201:
        path = f"/v1/sessions/{reply['session_id']}"
        _post(url, path + "/reset", {"seed": 0})
        _post(url, path + "/step", {"action": finish})
    return status, reply


def _refused(status: int, reply: dict, field: str) -> None:
    assert status == 400, reply
    error = reply["error"]
    assert error["type"] == "ConfigError" and error["field"] == field, error
    assert len(json.dumps(reply)) < 3000  # the refusal never echoes a large value back


def test_index_dir_cannot_delete_a_server_folder(server, tmp_path):
    victim = tmp_path / "precious"
    victim.mkdir()
    (victim / "thesis.tex").write_text("years of work")
    status, reply = _attempt(server.url, "SearchQA-v0", {"index_dir": str(victim), "tasks": TASKS,
                                                         "corpus": CORPUS})
    _refused(status, reply, "index_dir")
    assert "tasks" in reply["error"]["allowed"] and "max_turns" in reply["error"]["allowed"]
    assert [p.name for p in victim.iterdir()] == ["thesis.tex"]
    assert (victim / "thesis.tex").read_text() == "years of work"
    assert _healthy(server.url)


@pytest.mark.parametrize("term", [
    {"kind": "llm_judge", "weight": 1, "model": "m", "base_url": "ATTACKER/v1",
     "api_key_env": "AGENTGYM_SERVER_TOKENS"},
    {"kind": "llm_judge", "weight": 1, "model": "m", "base_url": "ATTACKER/v1"},
])
def test_a_reward_spec_cannot_send_server_secrets_to_a_client_chosen_url(server, attacker, monkeypatch, term):
    monkeypatch.setenv("AGENTGYM_SERVER_TOKENS", f"{TOKEN},{OTHER_TOKEN}")
    term = {**term, "base_url": term["base_url"].replace("ATTACKER", attacker.url)}
    status, reply = _attempt(server.url, "SearchQA-v0", {"tasks": TASKS, "reward": {"terms": [term]}})
    _refused(status, reply, "reward")
    assert "planner_r1/dense" in reply["error"]["allowed"]
    assert attacker.requests == []
    assert _healthy(server.url)


@pytest.mark.parametrize("function", ["os:abort", "signal:pause", "os:fork", "builtins:input"])
def test_custom_reward_terms_are_refused(server, function):
    spec = {"terms": [{"kind": "custom", "weight": 1, "function": function}]}
    status, reply = _attempt(server.url, "TravelPlanner-v0", {"reward": spec}, finish="GiveUp[now]")
    _refused(status, reply, "reward")
    assert _healthy(server.url)


def test_a_reward_path_is_not_read_and_its_content_not_echoed(server, tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"db_password": "hunter2-very-secret"}))
    status, reply = _attempt(server.url, "TravelPlanner-v0", {"reward": str(secret)}, finish="GiveUp[now]")
    _refused(status, reply, "reward")
    assert "hunter2" not in json.dumps(reply) and "db_password" not in json.dumps(reply)


@pytest.mark.parametrize("env_id, field", [
    ("SearchQA-v0", "tasks"), ("SearchQA-v0", "corpus"), ("TravelPlanner-v0", "tasks"),
    ("TravelPlanner-v0", "database"),
])
def test_files_on_the_server_cannot_be_read_through_kwargs(server, tmp_path, env_id, field):
    stolen = tmp_path / "private.jsonl"
    stolen.write_text(json.dumps({"question": "PRIVATE-LINE", "golden_answers": ["x"], "contents": "PRIVATE-LINE",
                                  "id": "0"}) + "\n")
    kwargs = {field: str(stolen if field != "database" else tmp_path)}
    if field == "corpus":
        kwargs["tasks"] = TASKS
    status, reply = _post(server.url, "/v1/sessions", {"env_id": env_id, "kwargs": kwargs})
    if field == "tasks":  # a path where inline rows belong
        assert status == 400 and reply["error"]["field"] == field, reply
        assert "inline rows" in reply["error"]["allowed"]
    else:
        _refused(status, reply, field)
    if status == 201:  # main: the observation carried the file's line
        observation = _post(server.url, f"/v1/sessions/{reply['session_id']}/reset", {"seed": 0})[1]
        assert "PRIVATE-LINE" not in json.dumps(observation)


@pytest.mark.parametrize("env_id, old, tasks", [("SearchQA-v0", "questions", TASKS), ("TravelPlanner-v0", "queries", "train")])
def test_the_retired_task_kwargs_meet_the_same_bounds_and_still_work_with_a_warning(serve, tmp_path, env_id, old, tasks):
    # until 0.3 drops them; the tests above send the current name, so they keep reaching their bounds after it
    from agentgym.server.presets import EnvPreset, Presets

    wiki = Presets(presets=(EnvPreset(name="tiny-wiki", env_id="SearchQA-v0", kwargs={"corpus": CORPUS}),))
    server = serve(env_calls="inline", presets=wiki)  # inline: the env runs in this process, its warning is seen here
    stolen = tmp_path / "private.jsonl"
    stolen.write_text(json.dumps({"question": "PRIVATE-LINE", "golden_answers": ["x"]}) + "\n")
    status, reply = _post(server.url, "/v1/sessions", {"env_id": env_id, "kwargs": {old: str(stolen)}})
    assert status == 400 and reply["error"]["field"] == old and "inline rows" in reply["error"]["allowed"], reply
    with pytest.warns(AgentGymDeprecationWarning, match=f"'{old}' is deprecated, use 'tasks'"):
        status, reply = _post(server.url, "/v1/sessions", {"env_id": env_id, "kwargs": {old: tasks}})
    assert status == 201, reply
    status, observation = _post(server.url, f"/v1/sessions/{reply['session_id']}/reset", {"seed": 0})
    assert status == 200, observation
    if env_id == "SearchQA-v0":  # the inline task reached the env under its old name
        assert "capital of Texas" in json.dumps(observation)


def test_a_retriever_url_cannot_make_the_server_call_anywhere_or_itself(server, attacker):
    for url in (f"{attacker.url}/retrieve", f"{server.url}/v1/sessions"):
        status, reply = _attempt(server.url, "SearchQA-v0", {"tasks": TASKS, "retriever": url},
                                 finish="<search> capital </search>")
        _refused(status, reply, "retriever")
    assert attacker.requests == []
    assert _healthy(server.url)


def test_cache_dir_cannot_write_into_a_server_folder(server, tmp_path):
    target = tmp_path / "not-yours"
    target.mkdir()
    for env_id in ("TravelPlanner-v0", "SearchQA-v0"):
        status, reply = _post(server.url, "/v1/sessions", {"env_id": env_id, "kwargs": {"cache_dir": str(target)}})
        _refused(status, reply, "cache_dir")
    assert list(target.iterdir()) == []


def test_sizes_such_as_synthetic_size_are_the_operators(server):
    for kwargs in ({"synthetic_size": 2_000_000}, {"synthetic_seed": 7}, {"max_action_chars": 10**9}):
        status, reply = _post(server.url, "/v1/sessions", {"env_id": "SearchQA-v0", "kwargs": kwargs})
        _refused(status, reply, next(iter(kwargs)))
    status, reply = _post(server.url, "/v1/sessions", {"env_id": "TravelPlanner-v0", "kwargs": {"max_turns": 10**6}})
    _refused(status, reply, "max_turns")
    assert "1 to 100" in reply["error"]["allowed"]


def test_a_megabytes_long_query_date_literal_is_refused_quickly(server):
    status, reply = _post(server.url, "/v1/sessions", {"env_id": "TravelPlanner-v0", "kwargs": {}})
    assert status == 201
    path = f"/v1/sessions/{reply['session_id']}"
    date = "[" + "0," * 3_900_000 + "0]"  # 7.8 MB: main's literal_eval took 25 s and 4.5 GB
    query = {"org": "Austin", "dest": "Dallas", "days": 3, "date": date, "people_number": 1}
    status, reply = _post(server.url, path + "/reset", {"options": {"query": query}})
    assert status == 400 and reply["error"]["field"] == "options.query", reply
    assert _post(server.url, path + "/reset", {"seed": 0})[0] == 200  # the session is fine
    assert _healthy(server.url)


@pytest.mark.parametrize("body", [
    b"[" * 1_000_000,
    b'{"env_id": "TravelPlanner-v0", "kwargs": {"tasks": ' + b"[" * 500_000 + b"]" * 500_000 + b"}}",
])
def test_deeply_nested_bodies_get_422_not_500(server, body):
    status, reply = _post(server.url, "/v1/sessions", body)
    assert status == 422 and reply["error"]["type"] == "InvalidBody", reply
    assert _healthy(server.url)


def test_inline_rows_are_bounded_in_depth_and_size(server):
    nested: object = "x"
    for _ in range(50):
        nested = [nested]
    for rows in ([{"question": nested}], [{"question": "q" * 20_000, "golden_answers": ["a"]}],
                 [{"question": "q", "golden_answers": ["a"]}] * 5000):
        status, reply = _post(server.url, "/v1/sessions", {"env_id": "SearchQA-v0", "kwargs": {"tasks": rows}})
        _refused(status, reply, "tasks")


def test_the_allowed_options_still_work(serve, tmp_path):
    from agentgym.server.presets import EnvPreset, Presets

    presets = Presets(presets=(EnvPreset(name="tiny-wiki", env_id="SearchQA-v0", kwargs={"corpus": CORPUS},
                                         max_turns=5),))
    server = serve(presets=presets, env_workers=1)
    env = RemoteEnv(server.url, "SearchQA-v0", env_kwargs={"tasks": TASKS, "max_turns": 3, "top_k": 2,
                                                          "reward": "prs/short"}, token=TOKEN, preset="tiny-wiki")
    try:
        observation, _ = env.reset(seed=0)
        assert "capital of Texas" in observation and env.description.preset == "tiny-wiki"
    finally:
        env.close()
    with pytest.raises(ConfigError) as refused:  # the client raises the server's ConfigError as itself
        RemoteEnv(server.url, "SearchQA-v0", env_kwargs={"index_dir": "/etc"}, token=TOKEN)
    assert refused.value.field == "index_dir" and "action_format" in refused.value.allowed
    with pytest.raises(ConfigError) as over_cap:
        RemoteEnv(server.url, "SearchQA-v0", env_kwargs={"max_turns": 6}, token=TOKEN)
    assert over_cap.value.field == "max_turns" and "1 to 5" in over_cap.value.allowed
    with pytest.raises(ConfigError) as no_preset:
        RemoteEnv(server.url, "SearchQA-v0", token=TOKEN, preset="nope")
    assert no_preset.value.field == "preset" and "tiny-wiki" in no_preset.value.allowed


def test_one_token_cannot_take_every_session_slot(serve):
    live = serve(max_sessions=4, env_workers=1)
    body = {"env_id": SLEEPY, "kwargs": {}}
    mine = [_post(live.url, "/v1/sessions", body)[0] for _ in range(3)]
    theirs = _post(live.url, "/v1/sessions", body, token=OTHER_TOKEN)[0]
    assert mine == [201, 201, 503] and theirs == 201


def test_a_client_that_never_finishes_its_headers_is_cut_off(serve):
    live = serve(header_timeout_s=0.5)
    with socket.create_connection(("127.0.0.1", live.port)) as slow:
        slow.settimeout(10)
        slow.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Drip: ")
        started = time.monotonic()
        assert slow.recv(100) == b""  # closed by the server (main kept it open: recv timed out)
        assert time.monotonic() - started < 8
    assert _healthy(live.url)


def test_a_slow_call_does_not_stall_health_or_other_sessions(serve):
    """One C call holding its process's GIL for 3 s (as a quadratic regex would) on one session, while
    another session steps and /health answers. Wall-clock bounds here are generous on purpose (a
    shared 2-core machine): the assertion is that each answer came back before the slow call ended,
    and the worst latency is reported, not pinned."""
    live = serve(env_workers=2, request_timeout_s=30)
    slow, fast = (RemoteEnv(live.url, SLEEPY, token=TOKEN) for _ in range(2))
    slow.reset()
    fast.reset()
    done = threading.Event()
    ended = []

    def spin() -> None:
        slow.step("hog 3")
        ended.append(time.monotonic())
        done.set()

    threading.Thread(target=spin, daemon=True).start()
    time.sleep(0.3)  # the spin is under way
    latencies = []
    while not done.is_set() and len(latencies) < 20:
        start = time.monotonic()
        assert fast.step("hello")[0] == "did hello"
        assert _healthy(live.url)
        latencies.append(time.monotonic() - start)
        answered = time.monotonic()
        time.sleep(0.05)
    done.wait(30)
    assert len(latencies) >= 5 and answered < ended[0]
    print(f"step + /health during a 3 s call: worst {max(latencies) * 1000:.0f} ms, "
          f"median {sorted(latencies)[len(latencies) // 2] * 1000:.0f} ms")
    assert max(latencies) < 1.5  # vs 2.7 s and more on main, where the spin held the event loop
    for env in (slow, fast):
        env.close()


def _dead(pid: int) -> bool:
    import psutil

    for _ in range(50):  # the kill is asynchronous: give it a moment
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            return True
        time.sleep(0.1)
    return False


def test_a_call_that_ignores_its_deadline_is_stopped_by_killing_its_worker(serve):
    from agentgym.errors import RemoteTimeout

    live = serve(env_workers=1, request_timeout_s=0.5)
    stuck = RemoteEnv(live.url, SLEEPY, token=TOKEN)
    stuck.reset()
    (pid, _), = live.server.config.app.state.server.workers.stats()
    started = time.monotonic()
    with pytest.raises(RemoteTimeout):
        stuck.step("stuck 60")  # SIGALRM blocked: only killing the process stops it
    assert time.monotonic() - started < 20
    assert _dead(pid)
    fresh = RemoteEnv(live.url, SLEEPY, token=TOKEN)  # a new worker takes its place
    fresh.reset()
    assert fresh.step("hi")[0] == "did hi"
    fresh.close()


def test_an_overrunning_call_is_interrupted_and_its_worker_mates_keep_going(serve):
    from agentgym.errors import RemoteTimeout, SessionNotFound

    live = serve(env_workers=1, request_timeout_s=0.5)
    spinning, neighbour = (RemoteEnv(live.url, SLEEPY, token=TOKEN) for _ in range(2))
    spinning.reset()
    neighbour.reset()
    (pid, sessions), = live.server.config.app.state.server.workers.stats()
    assert sessions == 2
    with pytest.raises(RemoteTimeout):
        spinning.step("spin 60")
    with pytest.raises(SessionNotFound):
        spinning.step("again")
    assert neighbour.step("still here")[0] == "did still here"  # same worker, interrupted, not killed
    assert live.server.config.app.state.server.workers.stats()[0][0] == pid
    neighbour.close()


def test_serve_generates_a_private_token_and_remote_env_finds_it(tmp_path, monkeypatch):
    from agentgym.cli.serve import write_token_file
    from agentgym.remote.protocol import default_token_path

    path = tmp_path / "server" / "token-1"
    token = write_token_file(path)
    assert len(token) >= 40 and path.read_text().strip() == token
    assert os.stat(path).st_mode & 0o777 == 0o600
    monkeypatch.setenv("AGENTGYM_CACHE_DIR", str(tmp_path))
    assert default_token_path(1) == path


def test_a_megabyte_of_degenerate_model_text_does_not_stall_other_sessions(serve):
    """1 MB of one unclosed tag repeated (what a degenerate policy emits) on one session, while a second
    session steps and /health answers. Whether the degenerate step is slow depends on the parsers (made
    linear separately); either way it runs in its own worker process, so the others' latency stays low.
    The bound is generous for a shared 2-core machine; the worst latency is printed, not pinned."""
    live = serve(env_workers=2, request_timeout_s=5)
    degenerate, other = (RemoteEnv(live.url, "TravelPlanner-v0", token=TOKEN) for _ in range(2))
    degenerate.reset(seed=0)
    other.reset(seed=0)
    finished = threading.Event()

    def flood() -> None:
        try:
            degenerate.step("<answer>" * 125_000)  # 1 MB
        except Exception:  # a 504 (the deadline) is a fine outcome here
            pass
        finished.set()

    threading.Thread(target=flood, daemon=True).start()
    latencies = []
    for _ in range(10):
        start = time.monotonic()
        other.step("CitySearch[Texas]")
        assert _healthy(live.url)
        latencies.append(time.monotonic() - start)
    finished.wait(30)
    print(f"step + /health beside a 1 MB degenerate step: worst {max(latencies) * 1000:.0f} ms")
    assert max(latencies) < 1.5
    other.close()


@pytest.mark.parametrize("protocol", ["h11", "httptools"])
def test_the_header_deadline_spares_idle_keep_alive_connections(protocol):
    """Both HTTP protocol flavours uvicorn may pick: slow headers are cut off, while a persistent
    connection idle between requests (as RemoteEnv keeps one) is not."""
    import uvicorn
    from server_helpers import settings

    from agentgym.server import create_app
    from agentgym.server.http import _h11_protocol, _httptools_protocol

    if protocol == "httptools":
        pytest.importorskip("httptools")
    make = _h11_protocol if protocol == "h11" else _httptools_protocol
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(create_app(settings(env_calls="threads")), http=make(0.5), log_level="warning",
                            lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        port = sock.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as kept:  # raw: no silent reconnect
            kept.settimeout(10)
            for _ in range(2):
                kept.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                assert kept.recv(1000).startswith(b"HTTP/1.1 200")
                time.sleep(1.0)  # idle twice the header deadline: keep-alive (5 s) decides, not the deadline
        with socket.create_connection(("127.0.0.1", port)) as slow:
            slow.settimeout(10)
            slow.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
            assert slow.recv(100) == b""
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
