"""Load test of the env server over loopback: throughput beside in-process stepping, memory, floods.

    python benchmarks/bench_server.py [--sessions 64] [--seconds 15] [--abandon 1000] [--flood 40]

0. Baseline: ``--sessions`` local TravelPlanner-v0 envs stepped round-robin in this process,
   replaying the same reference plans: steps/s and CPU per step.
1. Throughput: ``--sessions`` AsyncRemoteEnv clients play TravelPlanner-v0 episodes at once,
   replaying each query's reference plan (tool calls, notebook writes, then the plan, which the
   server evaluates), resetting when an episode ends. Reports steps/s, the p50/p99/p99.9 step
   latency seen by the clients, CPU per step (server with its workers, and clients), and both
   against the baseline. ``--env-calls`` runs it once per mode, side by side: by default
   ``processes`` (worker processes, the server's default), ``processes+coalesce``
   (``AsyncRemoteEnv(coalesce=True)``: the steps of one loop turn go as one request) and
   ``auto+coalesce`` (calls inline in the server, coalesced: the mode docs/server.md recommends
   for a trainer's own server). Goal: >= 10,000 steps/s with 64 sessions on 2 cores.
2. Memory: ``--abandon`` sessions are created, reset once and dropped without a close, twice
   over. The server (TTL 30 s here, longer than creating them takes) must evict them all; its
   RSS after each round must stay flat.
3. Floods (``--flood 40``): with the server idle but for one tenant stepping a TravelPlanner
   session, 40 connections (from another process) each post an 8 MB body at once, three ways:
   with a valid token (read within the server's body budget, the rest wait or get 503), without
   one (401, connection closed), and dripping it (a byte every 50 ms: 408 at the body's pace);
   first the tenant alone, as the baseline. Reports the server's peak RSS over idle and the
   tenant's step p99 during each, and its ratio to the p99 alone. Goals: within 100 MB of idle,
   p99 within 2x of the tenant's alone. ``benchmarks/bench_flood.py`` floods each front door
   (retriever, MCP, dripped bodies against a tenant's 120 KB steps, OpenEnv) the same way.

The server runs in its own process (``agentgym serve``) and the clients in this one, so the
two share the machine's cores as they would on a single rollout node. The server's CPU and RSS
include its worker processes.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import gymnasium
import psutil

import agentgym  # noqa: F401  (registers the env ids)

from agentgym.remote._connection import ConnectionLost, Endpoint, SyncConnection
from agentgym.envs.travelplanner.scripted import gold_plan_actions
from agentgym.remote import AsyncRemoteEnv

TOKEN, TENANT_TOKEN = "bench-token", "tenant-token"
TTL_S = 30.0


def run_async(coroutine):
    """asyncio.run on uvloop when it is installed (the clients' loop costs less CPU then)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coroutine)
    return uvloop.run(coroutine)


def start_server(max_sessions: int, env_calls: str = "processes") -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "agentgym.cli", "serve", "--port", str(port), "--max-sessions", str(max_sessions),
           "--session-ttl", str(TTL_S), "--log-level", "warning", "--env-calls", env_calls]
    proc = subprocess.Popen(cmd, env={**os.environ, "AGENTGYM_SERVER_TOKENS": f"{TOKEN},{TENANT_TOKEN}"})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            health(url)
            return proc, url
        except ConnectionLost:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the server did not start")


def health(url: str) -> dict:
    conn = SyncConnection(Endpoint.parse(url), timeout=10)
    try:
        return json.loads(conn.request("GET", "/health", None, {}).body)
    finally:
        conn.close()


def _family(pid: int) -> list[psutil.Process]:
    parent = psutil.Process(pid)
    return [parent, *parent.children(recursive=True)]


def rss_mb(proc: subprocess.Popen) -> float:
    """The server's RSS with its worker processes' (shared pages counted once per process)."""
    total = 0
    for p in _family(proc.pid):
        try:
            total += p.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total / 2**20


def cpu_s(pid: int) -> float:
    total = 0.0
    for p in _family(pid):
        try:
            times = p.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


async def play(env: AsyncRemoteEnv, index: int, scripts: list, latencies: list, state: dict) -> None:
    """One client: reference-plan episodes until the measurement window closes."""
    episode = index
    try:
        while not state["stop"]:
            await env.reset(options={"task_index": episode % len(scripts)})
            for action in scripts[episode % len(scripts)]:
                start = time.perf_counter()
                *_, terminated, truncated, _ = await env.step(action)
                if state["measuring"]:
                    latencies.append(time.perf_counter() - start)
                if terminated or truncated or state["stop"]:
                    break
            episode += len(scripts) // 7 + 1
    finally:
        await env.close()


def in_process(sessions: int, seconds: float) -> dict:
    """The baseline: the same episodes stepped in this process, round-robin over ``sessions`` local envs."""
    envs = [gymnasium.make("TravelPlanner-v0") for _ in range(sessions)]
    queries = envs[0].unwrapped.tasks
    scripts = [gold_plan_actions(q, "react") for q in queries if q.annotated_plan]
    position = [0] * sessions
    for i, env in enumerate(envs):
        env.reset(options={"task_index": i % len(scripts)})
    steps, start, cpu0 = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        for i, env in enumerate(envs):
            script = scripts[i % len(scripts)]
            *_, terminated, truncated, _ = env.step(script[position[i]])
            position[i] += 1
            steps += 1
            if terminated or truncated or position[i] == len(script):
                env.reset(options={"task_index": i % len(scripts)})
                position[i] = 0
    return {"sessions": sessions, "steps_per_s": steps / (time.perf_counter() - start),
            "cpu_us_per_step": (time.process_time() - cpu0) / steps * 1e6}


async def throughput(url: str, sessions: int, seconds: float, warmup: float, server: psutil.Process,
                     coalesce: bool = False) -> dict:
    queries = gymnasium.make("TravelPlanner-v0").unwrapped.tasks  # the same queries the server loads
    scripts = [gold_plan_actions(q, "react") for q in queries if q.annotated_plan]
    latencies: list[float] = []
    state = {"stop": False, "measuring": False}
    envs = [AsyncRemoteEnv(url, "TravelPlanner-v0", token=TOKEN, coalesce=coalesce) for _ in range(sessions)]
    await asyncio.gather(*(env.open() for env in envs))
    tasks = [asyncio.create_task(play(env, i, scripts, latencies, state)) for i, env in enumerate(envs)]
    await asyncio.sleep(warmup)
    state["measuring"], cpu0, server0, t0 = True, time.process_time(), cpu_s(server.pid), time.perf_counter()
    await asyncio.sleep(seconds)
    state["measuring"], elapsed, client_cpu = False, time.perf_counter() - t0, time.process_time() - cpu0
    server_cpu, steps = cpu_s(server.pid) - server0, len(latencies)
    state["stop"] = True
    await asyncio.gather(*tasks)
    latencies.sort()
    return {"sessions": sessions, "steps": steps, "steps_per_s": steps / elapsed,
            "p50_ms": percentile(latencies, 0.50) * 1e3, "p99_ms": percentile(latencies, 0.99) * 1e3,
            "p999_ms": percentile(latencies, 0.999) * 1e3, "client_cpu_share": client_cpu / elapsed,
            "server_cpu_share": server_cpu / elapsed, "server_cpu_us_per_step": server_cpu / steps * 1e6,
            "client_cpu_us_per_step": client_cpu / steps * 1e6}


async def abandon(url: str, count: int, concurrency: int = 16) -> None:
    """Create ``count`` sessions, reset each once, and drop them without closing."""
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            env = AsyncRemoteEnv(url, "TravelPlanner-v0", token=TOKEN)
            await env.reset(seed=i)
            env._conn.close()  # vanish: no DELETE, like a crashed client

    await asyncio.gather(*(one(i) for i in range(count)))


def wait_for_eviction(url: str, proc: subprocess.Popen, limit_s: float = 120) -> tuple[float, float]:
    """Seconds until the server holds no session, and the peak RSS seen meanwhile."""
    start, peak = time.monotonic(), rss_mb(proc)
    while health(url)["sessions"] > 0:
        if time.monotonic() - start > limit_s:
            raise RuntimeError("sessions were not evicted")
        peak = max(peak, rss_mb(proc))
        time.sleep(0.2)
    return time.monotonic() - start, peak


def memory(url: str, proc: subprocess.Popen, count: int, rounds: int = 2) -> list[dict]:
    results = []
    for round_ in range(1, rounds + 1):
        before = rss_mb(proc)
        run_async(abandon(url, count))
        created = health(url)["sessions"]
        evict_s, peak = wait_for_eviction(url, proc)
        results.append({"round": round_, "abandoned": count, "open_after_create": created,
                        "rss_before_mb": before, "rss_peak_mb": peak, "rss_after_eviction_mb": rss_mb(proc),
                        "eviction_s": evict_s})
    return results


def _send_flood_post(port: int, path: str, token: str | None, size: int, drip: bool, results: list) -> None:
    """One flooding connection: headers, then the body (all at once, or a byte every 50 ms)."""
    head = (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {size}\r\n"
            + (f"Authorization: Bearer {token}\r\n" if token else "") + "\r\n").encode()
    body = b'{"action": "' + b"x" * (size - 14) + b'"}'
    start = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
            sock.sendall(head)
            if drip:
                sock.settimeout(0.05)
                for i in range(len(body)):
                    sock.send(body[i:i + 1])
                    try:
                        reply = sock.recv(65536)
                        break
                    except TimeoutError:
                        continue
            else:
                try:
                    sock.sendall(body)
                except OSError:  # refused mid-body: the reply is waiting
                    pass
                sock.settimeout(60)
                reply = sock.recv(65536)
        status = int(reply.split()[1]) if reply else 0
    except OSError:
        status = 0  # the connection was closed on us
    results.append((status, time.monotonic() - start))


def _flood_process(port: int, path: str, token: str | None, size: int, drip: bool, connections: int,
                   queue) -> None:
    # In a process of its own, so that 40 senders do not slow the measuring tenant's client down.
    results: list = []
    threads = [threading.Thread(target=_send_flood_post, args=(port, path, token, size, drip, results))
               for _ in range(connections)]
    for t in threads:
        t.start()
    queue.put("flooding")
    for t in threads:
        t.join()
    queue.put(results)


def flood(url: str, proc: subprocess.Popen, connections: int, mb: float) -> list[dict]:
    """The three floods, one after the other; each with the tenant's latencies and the peak RSS."""
    import multiprocessing

    from agentgym.remote import RemoteEnv

    port, size = int(url.rsplit(":", 1)[1]), int(mb * 1_000_000)
    tenant, flooder = (RemoteEnv(url, "TravelPlanner-v0", token=t) for t in (TENANT_TOKEN, TOKEN))
    tenant.reset(seed=0, options={"task_index": 0})
    flooder.reset(seed=0)
    path = f"/v1/sessions/{flooder.session_id}/step"  # the flooder's own session: another tenant's
    context = multiprocessing.get_context("spawn")
    out = []
    floods = (("none (baseline)", TOKEN, False, 0), ("valid token", TOKEN, False, connections),
              ("no token", None, False, connections), ("dripped", TOKEN, True, connections))
    for kind, token, drip, count in floods:
        time.sleep(1.0)
        idle, peak, latencies, results = rss_mb(proc), [rss_mb(proc)], [], []
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak.append(rss_mb(proc))
                time.sleep(0.01)

        def step() -> None:
            while not done.is_set():
                start = time.perf_counter()
                *_, terminated, truncated, _ = tenant.step("CitySearch[Texas]")
                latencies.append(time.perf_counter() - start)
                if terminated or truncated:
                    tenant.reset(seed=0, options={"task_index": 0})
                time.sleep(0.005)

        queue = context.Queue()
        if count:  # started first: its start-up (imports) is not the tenant's to pay
            sender = context.Process(target=_flood_process, args=(port, path, token, size, drip, count, queue))
            sender.start()
            assert queue.get(timeout=180) == "flooding"
        threads = [threading.Thread(target=f, daemon=True) for f in (sample, step)]
        for t in threads:
            t.start()
        if count:
            results = queue.get(timeout=180)
            sender.join(30)
        else:  # the same tenant, no flood: its latency on this machine, now
            time.sleep(3.0)
        done.set()
        for t in threads:
            t.join(10)
        latencies.sort()
        statuses: dict[int, int] = {}
        for status, _ in results:
            statuses[status] = statuses.get(status, 0) + 1
        out.append({"flood": kind, "connections": count, "mb": mb, "idle_rss_mb": idle,
                    "peak_rss_mb": max(peak), "over_idle_mb": max(peak) - idle, "tenant_steps": len(latencies),
                    "tenant_p50_ms": percentile(latencies, 0.5) * 1e3,
                    "tenant_p99_ms": percentile(latencies, 0.99) * 1e3,
                    "statuses": statuses, "slowest_connection_s": max((t for _, t in results), default=0.0)})
    tenant.close()
    flooder.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--abandon", type=int, default=1000)
    parser.add_argument("--flood", type=int, default=40, help="connections per flood (0: no flood part)")
    parser.add_argument("--flood-mb", type=float, default=8.0, help="the body each flooding connection posts")
    parser.add_argument("--env-calls", default="processes,processes+coalesce,auto+coalesce",
                        help="server modes to compare, comma-separated: processes, auto, inline or threads, each "
                             "optionally +coalesce (AsyncRemoteEnv(coalesce=True): steps batched per request)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    modes = args.env_calls.split(",")
    figures: dict = {"in_process": in_process(args.sessions, args.seconds)}
    print(f"[in-process] {args.sessions} local envs stepped round-robin: "
          f"{figures['in_process']['steps_per_s']:,.0f} steps/s, {figures['in_process']['cpu_us_per_step']:.0f} us "
          "of CPU per step")
    for i, mode in enumerate(modes):
        env_calls, _, coalesced = mode.partition("+")
        proc, url = start_server(max(2 * args.abandon, args.sessions) + 64, env_calls)
        try:
            idle = rss_mb(proc)
            load_avg = os.getloadavg()[0]
            load = run_async(throughput(url, args.sessions, args.seconds, args.warmup, psutil.Process(proc.pid),
                                        coalesce=coalesced == "coalesce"))
            load["vs_in_process"] = load["steps_per_s"] / figures["in_process"]["steps_per_s"]
            load["cpu_vs_in_process"] = (load["server_cpu_us_per_step"] + load["client_cpu_us_per_step"]) / \
                figures["in_process"]["cpu_us_per_step"]
            print(f"[{mode}] throughput: {load['sessions']} sessions, {load['steps_per_s']:,.0f} "
                  f"steps/s (goal >= 10,000; {load['vs_in_process']:.2f}x in-process), step latency p50 "
                  f"{load['p50_ms']:.1f} ms, p99 {load['p99_ms']:.1f} ms, "
                  f"p99.9 {load['p999_ms']:.1f} ms")
            print(f"  CPU per step: server {load['server_cpu_us_per_step']:.0f} us ({load['server_cpu_share']:.0%} of "
                  f"a core), client {load['client_cpu_us_per_step']:.0f} us ({load['client_cpu_share']:.0%}): "
                  f"{load['cpu_vs_in_process']:.1f}x the in-process step's CPU; "
                  f"1-min load average {load_avg:.2f} on {os.cpu_count()} cores at the start")
            figures[mode] = {"throughput": load, "idle_rss_mb": idle}
            if i == len(modes) - 1 and args.abandon:
                rounds = memory(url, proc, args.abandon)
                print(f"memory: server RSS idle {idle:.0f} MB")
                for r in rounds:
                    print(f"  round {r['round']}: {r['abandoned']} sessions abandoned ({r['open_after_create']} open), "
                          f"RSS {r['rss_before_mb']:.0f} -> peak {r['rss_peak_mb']:.0f} -> "
                          f"{r['rss_after_eviction_mb']:.0f} MB after TTL eviction ({r['eviction_s']:.1f} s, "
                          f"TTL {TTL_S:g} s)")
                figures[mode]["abandon"] = rounds
            if i == len(modes) - 1 and args.flood:
                figures[mode]["flood"] = floods = flood(url, proc, args.flood, args.flood_mb)
                alone = floods[0]["tenant_p99_ms"]
                for f in floods:
                    f["p99_vs_alone"] = f["tenant_p99_ms"] / alone
                    print(f"flood ({f['flood']}): {f['connections']} x {f['mb']:g} MB posts: server RSS "
                          f"{f['idle_rss_mb']:.0f} -> peak {f['peak_rss_mb']:.0f} MB "
                          f"(+{f['over_idle_mb']:.0f} MB, goal "
                          f"<= 100); another tenant's step p50 {f['tenant_p50_ms']:.1f} ms, p99 "
                          f"{f['tenant_p99_ms']:.1f} ms over {f['tenant_steps']} steps, {f['p99_vs_alone']:.2f}x its "
                          f"p99 alone (goal <= 2x); replies {f['statuses']}, slowest connection "
                          f"{f['slowest_connection_s']:.1f} s")
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    if len(modes) > 1:
        first, last = (figures[m]["throughput"]["steps_per_s"] for m in (modes[0], modes[-1]))
        print(f"ratio {modes[-1]} / {modes[0]}: {last / first:.2f}x steps/s")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
