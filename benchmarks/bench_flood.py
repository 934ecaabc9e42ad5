"""One client floods a front door while a second tenant keeps working: the tenant's latency and the server's memory.

    python benchmarks/bench_flood.py [--seconds 6] [--baseline-seconds 5] [--only retriever,mcp,drip,openenv]
    python benchmarks/bench_flood.py --server-path /path/to/other/checkout   # the same floods on other code

Each door runs as its command runs it (``agentgym serve-retriever``, ``mcp --transport http``,
``serve``, ``openenv``) in its own process; the flood comes from a third process, so that its
senders do not slow the measuring tenant's client. For each door, first the tenant alone
(its unloaded p50/p99), then the tenant beside the flood; printed: both p99s and their ratio
(goal: within 2x), after two seconds of warm-up; the server's peak RSS (with its worker processes) over its idle size
(goal: within 100 MB), and the statuses the flood and the tenant got.

* retriever: ``--flood-connections`` connections post 200 queries x topk 1000 (an 8 KB request
  that asked for a 227 MB reply) against ``synthetic:large``; the tenant posts one query, topk 3.
* mcp: token A sends ``initialize`` requests without end (``--max-sessions 8``); the tenant
  (token B) plays episodes with the SDK's client: open a session, start, search four times,
  answer, close. Its latency is per MCP request.
* drip: token A keeps two connections that declare 8 MiB and send a byte a second (reconnecting
  when cut); the tenant (token B) posts 120 KB steps.
* openenv: a client posts 200 MB ``/reset`` bodies, one after another; the tenant plays
  episodes over OpenEnv's WebSocket client (its step latency).

``--server-path`` runs the servers from another checkout (e.g. ``git worktree add /tmp/main main``)
while the clients stay these: the before/after figures of docs/performance.md come from one run each.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import psutil

TOKEN_A, TOKEN_B = "flood-a", "flood-b"
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "flood", "version": "0"}}}


# -- the servers ------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args: list[str], port: int, server_path: str | None) -> subprocess.Popen:
    env = {**os.environ, "AGENTGYM_SERVER_TOKENS": f"{TOKEN_A},{TOKEN_B}"}
    if server_path:
        env["PYTHONPATH"] = server_path
    proc = subprocess.Popen([sys.executable, "-m", "agentgym.cli", *args, "--port", str(port), "--log-level",
                             "error"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=server_path)  # -m puts the working folder first on the path
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{' '.join(args)} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"{' '.join(args)} did not start")


def rss_mb(pid: int) -> float:
    """The server's RSS with its worker processes' (shared pages counted once per process)."""
    total = 0
    try:
        family = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    for p in family:
        try:
            total += p.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total / 2**20


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


# -- one measurement: the tenant alone, then beside the flood ---------------------------------
def measure(name: str, pid: int, tenant: Callable[[threading.Event, list, Counter], None], flood: str,
            flood_args: tuple, baseline_s: float, flood_s: float) -> dict:
    def window(seconds: float, with_flood: bool) -> tuple[list[float], Counter, Counter, float]:
        stop, latencies, outcomes, peak = threading.Event(), [], Counter(), [rss_mb(pid)]

        def sample() -> None:
            while not stop.is_set():
                peak.append(rss_mb(pid))
                time.sleep(0.01)

        flooded: Counter = Counter()
        if with_flood:  # started first: its start-up (imports) is not the tenant's to pay
            context = multiprocessing.get_context("spawn")
            queue = context.Queue()
            sender = context.Process(target=_flood_process, args=(flood, flood_args, seconds, queue))
            sender.start()
            assert queue.get(timeout=120) == "flooding"
        threads = [threading.Thread(target=sample, daemon=True),
                   threading.Thread(target=tenant, args=(stop, latencies, outcomes), daemon=True)]
        for t in threads:
            t.start()
        if with_flood:
            flooded = queue.get(timeout=seconds + 120)
            sender.join(30)
        else:
            time.sleep(seconds)
        stop.set()
        for t in threads:
            t.join(60)
        return latencies, outcomes, flooded, max(peak)

    window(2.0, False)  # warm-up, not counted: the first calls build the env and load the index
    time.sleep(1.0)
    idle = rss_mb(pid)
    alone, alone_outcomes, _, _ = window(baseline_s, False)
    flooded, outcomes, statuses, peak = window(flood_s, True)
    base_p99, flood_p99 = percentile(alone, 0.99) * 1e3, percentile(flooded, 0.99) * 1e3
    return {"door": name, "idle_rss_mb": idle, "peak_rss_mb": peak, "over_idle_mb": peak - idle,
            "tenant_alone": {"calls": len(alone), "p50_ms": percentile(alone, 0.5) * 1e3, "p99_ms": base_p99,
                             "outcomes": dict(alone_outcomes)},
            "tenant_flooded": {"calls": len(flooded), "p50_ms": percentile(flooded, 0.5) * 1e3, "p99_ms": flood_p99,
                               "outcomes": dict(outcomes)},
            "p99_ratio": flood_p99 / base_p99 if alone and flooded else float("nan"),
            "flood_statuses": dict(statuses)}


def timed(latencies: list, outcomes: Counter, call: Callable[[], int | str]) -> None:
    start = time.perf_counter()
    try:
        outcome = call()
    except Exception as exc:  # noqa: BLE001 - a refused or failed call is counted by its kind
        outcome = type(exc).__name__
    if outcome == 200:
        latencies.append(time.perf_counter() - start)
    outcomes[outcome] += 1


# -- the tenants ------------------------------------------------------------------------------
def retriever_tenant(url: str) -> Callable:
    def run(stop: threading.Event, latencies: list, outcomes: Counter) -> None:
        with httpx.Client(timeout=120) as http:
            while not stop.is_set():
                timed(latencies, outcomes, lambda: http.post(f"{url}/retrieve", json={
                    "queries": ["capital of the republic"], "topk": 3}).status_code)
                time.sleep(0.005)
    return run


def asyncio_tenant(episodes: Callable, url: str) -> Callable:
    """A tenant whose client is asyncio: ``episodes(url, stop, latencies, outcomes)`` on a loop of its own."""
    def run(stop: threading.Event, latencies: list, outcomes: Counter) -> None:
        asyncio.run(episodes(url, stop, latencies, outcomes))
    return run


async def mcp_episodes(url: str, stop: threading.Event, latencies: list, outcomes: Counter) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def call(coroutine) -> None:
        start = time.perf_counter()
        result = await coroutine
        latencies.append(time.perf_counter() - start)
        outcomes[200 if not getattr(result, "is_error", False) else "tool error"] += 1

    while not stop.is_set():
        start = time.perf_counter()
        try:
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN_B}"})
            async with Client(streamable_http_client(url, http_client=http)) as client:
                latencies.append(time.perf_counter() - start)
                outcomes[200] += 1
                await call(client.call_tool("start_episode", {"seed": 0}))
                for i in range(4):
                    await call(client.call_tool("search", {"query": f"capital {i}"}))
                await call(client.call_tool("answer", {"answer": "x"}))
        except Exception as exc:  # noqa: BLE001 - e.g. the session refused: counted
            outcomes[f"refused ({type(exc).__name__})"] += 1
            await asyncio.sleep(0.2)


def drip_tenant(url: str, session_id: str) -> Callable:
    body = json.dumps({"action": "CitySearch[Texas]" + " " * 120_000}).encode()

    def run(stop: threading.Event, latencies: list, outcomes: Counter) -> None:
        headers = {"Authorization": f"Bearer {TOKEN_B}"}
        with httpx.Client(base_url=url, headers=headers, timeout=120) as http:
            def step() -> int:
                status = http.post(f"/v1/sessions/{session_id}/step", content=body).status_code
                if status == 409:  # ResetNeeded: the episode's turns are used up
                    http.post(f"/v1/sessions/{session_id}/reset", json={})
                return 200 if status == 409 else status

            while not stop.is_set():
                timed(latencies, outcomes, step)
                time.sleep(0.005)
    return run


async def openenv_episodes(url: str, stop: threading.Event, latencies: list, outcomes: Counter) -> None:
    from openenv.core import GenericEnvClient

    async with GenericEnvClient(base_url=url) as env:
        while not stop.is_set():
            await env.reset(seed=0, env_kwargs={"max_turns": 50, "max_searches": 50})
            for i in range(40):
                if stop.is_set():
                    break
                start = time.perf_counter()
                try:
                    await env.step({"text": f"<search> capital {i} </search>"})
                    latencies.append(time.perf_counter() - start)
                    outcomes[200] += 1
                except Exception as exc:  # noqa: BLE001
                    outcomes[type(exc).__name__] += 1


# -- the floods (in a process of their own) ---------------------------------------------------
def _flood_process(kind: str, args: tuple, seconds: float, queue) -> None:
    statuses: Counter = Counter()
    stop = time.monotonic() + seconds
    target = {"retriever": _retriever_flood, "mcp": _mcp_flood, "drip": _drip_flood, "openenv": _openenv_flood}[kind]
    threads = [threading.Thread(target=target, args=(*args, stop, statuses)) for _ in range(args[-1])]
    for t in threads:
        t.start()
    queue.put("flooding")
    for t in threads:
        t.join()
    queue.put(statuses)


def _retriever_flood(url: str, connections: int, stop: float, statuses: Counter) -> None:
    body = {"queries": ["capital city"] * 200, "topk": 1000}
    with httpx.Client(timeout=300) as http:
        while time.monotonic() < stop:
            try:
                with http.stream("POST", f"{url}/retrieve", json=body) as reply:
                    for _ in reply.iter_bytes(1 << 20):  # read and drop it, however large
                        pass
                    statuses[reply.status_code] += 1
            except httpx.HTTPError as exc:
                statuses[type(exc).__name__] += 1


def _mcp_flood(url: str, connections: int, stop: float, statuses: Counter) -> None:
    headers = {"Authorization": f"Bearer {TOKEN_A}", **MCP_ACCEPT}
    with httpx.Client(timeout=30) as http:
        while time.monotonic() < stop:
            try:
                statuses[http.post(url, json=INITIALIZE, headers=headers).status_code] += 1
            except httpx.HTTPError as exc:
                statuses[type(exc).__name__] += 1
            time.sleep(0.05)


def _drip_flood(url: str, session_id: str, connections: int, stop: float, statuses: Counter) -> None:
    port = int(url.rsplit(":", 1)[1])
    head = (f"POST /v1/sessions/{session_id}/step HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN_A}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {8 << 20}\r\n\r\n").encode()
    while time.monotonic() < stop:
        with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
            sock.sendall(head)
            sock.settimeout(1.0)
            reply = b""
            while time.monotonic() < stop and not reply:
                try:
                    sock.send(b"x")
                    reply = sock.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    break
            statuses[int(reply.split()[1]) if reply else "open at the end"] += 1


def _openenv_flood(url: str, connections: int, stop: float, statuses: Counter) -> None:
    port, size, chunk = int(url.rsplit(":", 1)[1]), 200_000_000, 1 << 20
    prefix, suffix = b'{"seed": 0, "options": {"task": "', b'"}}'
    head = (f"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {size}\r\n\r\n"
            ).encode()
    while time.monotonic() < stop:
        with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
            try:
                sock.sendall(head + prefix)
                left = size - len(prefix) - len(suffix)
                while left > 0:
                    sock.sendall(b"x" * min(chunk, left))
                    left -= chunk
                sock.sendall(suffix)
            except OSError:  # refused mid-body: the reply is waiting
                pass
            sock.settimeout(120)
            try:
                reply = sock.recv(65536)
            except OSError:
                reply = b""
            statuses[int(reply.split()[1]) if reply else "no reply"] += 1


# -- the doors --------------------------------------------------------------------------------
@contextlib.contextmanager
def served(args: argparse.Namespace, command: list[str]) -> Iterator[tuple[str, int]]:
    """The door's command on a free port, for the block: its URL and process id."""
    port = free_port()
    proc = start(command, port, args.server_path)
    try:
        yield f"http://127.0.0.1:{port}", proc.pid
    finally:
        proc.terminate()
        proc.wait(30)


def retriever(args: argparse.Namespace) -> dict:
    with served(args, ["serve-retriever", "synthetic:large"]) as (url, pid):
        return measure("retriever: 200 queries x topk 1000", pid, retriever_tenant(url), "retriever",
                       (url, args.flood_connections), args.baseline_seconds, args.seconds)


def mcp(args: argparse.Namespace) -> dict:
    command = ["mcp", "SearchQA-v0", "--transport", "http", "--max-sessions", "8", "--env-workers", "1"]
    with served(args, command) as (url, pid):
        return measure("mcp: token A initializes without end", pid, asyncio_tenant(mcp_episodes, url + "/mcp"),
                       "mcp", (url + "/mcp", 1), args.baseline_seconds, args.seconds)


def drip(args: argparse.Namespace) -> dict:
    with served(args, ["serve", "--env", "TravelPlanner-v0", "--env-workers", "2"]) as (url, pid):
        sessions = []
        for token in (TOKEN_A, TOKEN_B):
            headers = {"Authorization": f"Bearer {token}"}
            reply = httpx.post(f"{url}/v1/sessions", json={"env_id": "TravelPlanner-v0"}, timeout=120, headers=headers)
            sessions.append(reply.json()["session_id"])
            httpx.post(f"{url}/v1/sessions/{sessions[-1]}/reset", json={}, timeout=60, headers=headers)
        return measure("serve: two dripped 8 MiB bodies", pid, drip_tenant(url, sessions[1]), "drip",
                       (url, sessions[0], 2), args.baseline_seconds, args.seconds)


def openenv(args: argparse.Namespace) -> dict:
    with served(args, ["openenv", "SearchQA-v0", "--env-workers", "1"]) as (url, pid):
        return measure("openenv: 200 MB POST /reset bodies", pid, asyncio_tenant(openenv_episodes, url),
                       "openenv", (url, 1), args.baseline_seconds, args.seconds)


DOORS = {"retriever": retriever, "mcp": mcp, "drip": drip, "openenv": openenv}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=6.0, help="the flood's window")
    parser.add_argument("--baseline-seconds", type=float, default=5.0, help="the tenant alone")
    parser.add_argument("--flood-connections", type=int, default=2, help="retriever flood connections")
    parser.add_argument("--only", default=",".join(DOORS), help="doors to flood, comma-separated")
    parser.add_argument("--server-path", help="PYTHONPATH for the servers: another checkout's agentgym")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    figures = []
    for name in args.only.split(","):
        f = DOORS[name](args)
        figures.append(f)
        alone, flooded = f["tenant_alone"], f["tenant_flooded"]
        print(f"[{f['door']}] tenant p99 alone {alone['p99_ms']:.1f} ms, beside the flood {flooded['p99_ms']:.1f} ms: "
              f"{f['p99_ratio']:.2f}x (goal <= 2x); p50 {alone['p50_ms']:.1f} -> {flooded['p50_ms']:.1f} ms; "
              f"server RSS {f['idle_rss_mb']:.0f} MB idle, peak {f['peak_rss_mb']:.0f} MB "
              f"(+{f['over_idle_mb']:.0f} MB, goal <= 100)")
        print(f"  tenant: {alone['calls']} calls alone {alone['outcomes']}, {flooded['calls']} beside the flood "
              f"{flooded['outcomes']}; the flood got {f['flood_statuses']}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
