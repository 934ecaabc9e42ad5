"""Floods on a live server: unauthenticated senders, slow bodies, and more large bodies than the budget.

Raw sockets, so that the client can misbehave as an attacker would (keep sending after the
reply, drip a body, never finish one). Peak memory and another tenant's latency under 40 x 8 MB
posts are measured by ``benchmarks/bench_server.py --flood`` (figures in docs/performance.md).
"""

from __future__ import annotations

import json
import socket
import threading
import time

from server_helpers import OTHER_TOKEN, SLEEPY, TOKEN

from agentgym.remote import RemoteEnv


def _post_head(port: int, path: str, length: int, token: str | None = TOKEN) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\n"
                 f"Content-Length: {length}\r\n\r\n".encode())
    return sock


def _reply_and_close(sock: socket.socket, keep_sending: bool = False, limit_s: float = 10.0) -> tuple[bytes, float]:
    """What the server sent before closing the connection, and how long the close took."""
    start, received = time.monotonic(), b""
    sock.settimeout(0.05)
    while time.monotonic() - start < limit_s:
        try:
            if keep_sending:
                sock.send(b"x" * 4096)
        except OSError:  # the server closed its end: reset or broken pipe
            return received, time.monotonic() - start
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except OSError:
            return received, time.monotonic() - start
        if not chunk:
            return received, time.monotonic() - start
        received += chunk
    raise AssertionError(f"the server kept the connection open for {limit_s} s; it sent {received[:200]!r}")


def _status(reply: bytes) -> tuple[int, dict]:
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body) if body else {}


def _session(live, token: str = TOKEN) -> RemoteEnv:
    env = RemoteEnv(live.url, SLEEPY, token=token)
    env.reset()
    return env


def test_an_unauthenticated_sender_gets_401_and_the_connection_closes_at_once(serve):
    live = serve()
    env = _session(live)
    sock = _post_head(live.port, f"/v1/sessions/{env.session_id}/step", 8_000_000, token="wrong")
    with sock:
        reply, took = _reply_and_close(sock, keep_sending=True)
    assert _status(reply)[0] == 401 and b"connection: close" in reply.lower()
    assert took < 5  # it was 20 s and more while the client kept sending
    env.close()


def test_a_dripped_body_gets_408_at_the_body_deadline(serve):
    live = serve(body_timeout_s=0.5)
    env = _session(live)
    sock = _post_head(live.port, f"/v1/sessions/{env.session_id}/step", 1000)
    with sock:
        sock.sendall(b'{"act')  # and nothing more
        reply, took = _reply_and_close(sock)
    status, body = _status(reply)
    assert status == 408 and body["error"]["type"] == "RequestTimeout"
    assert env.step("still here")[0] == "did still here"
    env.close()


def test_large_bodies_past_the_budget_wait_then_get_503_and_small_ones_never_wait(serve):
    budget = 256 * 1024
    live = serve(max_body_bytes_in_flight=budget, body_timeout_s=5, min_body_bytes_per_s=1024)
    env, other = _session(live), _session(live, OTHER_TOKEN)
    holder = _post_head(live.port, f"/v1/sessions/{env.session_id}/step", budget)
    holder.sendall(b"x" * (budget - 65536))  # received and held: three quarters of the budget
    keep_pace = threading.Event()

    def trickle() -> None:  # fast enough for min_body_bytes_per_s, never finished
        while not keep_pace.wait(0.3):
            holder.send(b"x" * 1024)

    threading.Thread(target=trickle, daemon=True).start()
    time.sleep(0.3)
    started = time.monotonic()
    second = _post_head(live.port, f"/v1/sessions/{other.session_id}/step", 200_000, token=OTHER_TOKEN)
    with second:
        second.sendall(b"x" * 200_000)
        reply, _ = _reply_and_close(second)
    status, body = _status(reply)
    assert status == 503 and body["error"]["type"] == "ServerBusy" and "max_body_bytes_in_flight" in body["error"][
        "message"]
    assert 0.9 < time.monotonic() - started < 4  # it waited its second for room first
    small = time.monotonic()
    assert other.step("small")[0] == "did small"  # a small body skips the budget
    assert time.monotonic() - small < 1
    keep_pace.set()
    holder.close()  # the held budget comes back when its request ends
    time.sleep(0.3)
    assert live.server.config.app.state.server.budget.used == 0
    third = _post_head(live.port, f"/v1/sessions/{other.session_id}/step", 200_000, token=OTHER_TOKEN)
    with third:
        third.sendall(json.dumps({"action": "y" * 199_000}).encode().ljust(200_000))
        reply, _ = _reply_and_close(third)
    assert _status(reply)[0] in (200, 422)  # read, not refused for the budget
    env.close()
    other.close()


def test_two_dripped_bodies_of_one_token_leave_another_tenants_large_steps_alone(serve):
    """Issue 30, item 4: two connections declaring 8 MB and sending a byte a second held the whole
    budget for the body timeout, and 17 of 59 of another tenant's 120 KB steps answered 503."""
    import httpx

    live = serve()
    dripper, tenant = _session(live), _session(live, OTHER_TOKEN)
    stop, cut_after = threading.Event(), []

    def drip() -> None:
        while not stop.is_set():
            sock = _post_head(live.port, f"/v1/sessions/{dripper.session_id}/step", 8 << 20)  # the largest body
            started = time.monotonic()
            with sock:
                sock.settimeout(1.0)
                while not stop.is_set():
                    try:
                        sock.send(b"x")
                        if sock.recv(65536):
                            cut_after.append(time.monotonic() - started)
                            break
                    except TimeoutError:
                        continue
                    except OSError:
                        break

    drips = [threading.Thread(target=drip, daemon=True) for _ in range(2)]
    for thread in drips:
        thread.start()
    time.sleep(0.5)
    statuses = []
    body = json.dumps({"action": "y" * 120_000}).encode()
    with httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {OTHER_TOKEN}"}, timeout=30) as http:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            statuses.append(http.post(f"/v1/sessions/{tenant.session_id}/step", content=body).status_code)
            if statuses[-1] == 409:  # ResetNeeded: the episode reached its turn limit
                tenant.reset()
    stop.set()
    for thread in drips:
        thread.join(5)
    assert statuses.count(200) > 5 and set(statuses) <= {200, 409}, statuses  # no 503, no 429
    assert cut_after and max(cut_after) < 5  # each drip was cut at the pace (408), not after the 15 s deadline
    dripper.close()
    tenant.close()


def test_a_client_that_disconnects_mid_body_is_one_log_line(serve, caplog):
    live = serve()
    env = _session(live)
    caplog.set_level("INFO", logger="agentgym.server")
    socks = [_post_head(live.port, f"/v1/sessions/{env.session_id}/step", 100_000) for _ in range(5)]
    for sock in socks:
        sock.sendall(b"x" * 1000)
    time.sleep(0.3)
    for sock in socks:
        sock.close()
    time.sleep(0.5)
    records = [r for r in caplog.records if r.name == "agentgym.server"]
    assert len(records) == 5 and all(r.exc_info is None for r in records), [r.getMessage() for r in records]
    assert all("disconnected" in r.getMessage() for r in records)
    env.close()


def test_a_dead_workers_sessions_say_their_worker_died(serve):
    import os
    import signal

    import pytest

    from agentgym.errors import SessionNotFound, WorkerLost

    live = serve(env_workers=1)
    env = _session(live)
    (pid, _), = live.server.config.app.state.server.workers.stats()
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.5)
    for _ in range(2):  # the call that finds it dead, and every later one
        with pytest.raises(WorkerLost, match="worker process"):
            env.step("hello")
    assert issubclass(WorkerLost, SessionNotFound)  # code that catches SessionNotFound still does
    fresh = _session(live)  # a new worker takes its place
    assert fresh.step("hi")[0] == "did hi"
    fresh.close()


def test_floods_leave_other_tenants_stepping(serve):
    """A burst of unauthenticated and dripping connections while a tenant steps: its steps all succeed."""
    live = serve(body_timeout_s=1)
    env = _session(live)
    socks = []
    for i in range(50):
        sock = _post_head(live.port, f"/v1/sessions/{env.session_id}/step", 10_000_000,
                          token=None if i % 2 else TOKEN)
        sock.sendall(b"x")
        socks.append(sock)
    stop = threading.Event()

    def drip() -> None:
        while not stop.is_set():
            for sock in socks:
                try:
                    sock.send(b"x")
                except OSError:
                    pass
            time.sleep(0.05)

    threading.Thread(target=drip, daemon=True).start()
    try:
        for i in range(20):
            assert env.step(f"s{i}")[0] == f"did s{i}"
    finally:
        stop.set()
        for sock in socks:
            sock.close()
    env.close()


def test_a_hung_retriever_does_not_hold_up_another_tenant_on_the_same_worker(serve):
    """One session searches through a retriever that never answers, on the worker (only one here) that
    also hosts a second tenant's session; the second one's steps come back within the worker's
    overflow bound (50 ms of the slow call, then threads), not at the hung call's deadline. The worst
    latency is printed (docs/performance.md states the bound); the assertion is generous for a shared machine."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from hostile_http import HostileServer

    from agentgym.server.presets import EnvPreset, Presets

    with HostileServer() as hostile:
        presets = Presets(presets=(
            EnvPreset(name="local", env_id="SearchQA-v0"),
            EnvPreset(name="hung", env_id="SearchQA-v0",
                      kwargs={"retriever": f"{hostile.url}/hang/retrieve"})))
        live = serve(presets=presets, env_workers=1, request_timeout_s=20)
        hung = RemoteEnv(live.url, "SearchQA-v0", token=TOKEN, preset="hung")
        tenant = RemoteEnv(live.url, "SearchQA-v0", token=TOKEN, preset="local",
                           env_kwargs={"max_searches": 50, "max_turns": 60})
        hung.reset(seed=0)
        tenant.reset(seed=0)
        assert len(live.server.config.app.state.server.workers.stats()) == 1
        ended = []
        threading.Thread(target=lambda: ended.append(hung.step("<search> anything </search>")), daemon=True).start()
        time.sleep(0.01)  # the hung search has just begun: the first step below meets the worst case
        latencies = []
        for i in range(20):
            start = time.monotonic()
            observation, *_ = tenant.step(f"<search> capital {i} </search>")
            latencies.append(time.monotonic() - start)
            assert "<information>" in observation
        assert not ended  # all of them came back while the hung search still hung
        print(f"steps beside a hung retriever on the same worker: worst {max(latencies) * 1000:.0f} ms, "
              f"median {sorted(latencies)[10] * 1000:.0f} ms")
        assert max(latencies) < 5  # it was the hung call's deadline (10 s, the retriever's) and more
