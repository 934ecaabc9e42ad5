"""RSS under fuzzed model text: TravelPlanner episodes in-process, and the env server fed long names.

    python benchmarks/bench_memory.py [--episodes 100000] [--server-steps 10000] [--ref REF]

1. ``--episodes`` fuzzed TravelPlanner-v0 episodes (embedded world, one env): each a reset and
   up to 6 actions drawn from valid and invalid tool calls (names of 1 to 5,000 random characters,
   most of them distinct), garbage text and mutated plans submitted with ``Finish[...]``. RSS is
   sampled every tenth of the run; the figure is the growth from the first sample (after a warm-up
   tenth) to the largest later one. Goal: flat within 50 MB.
2. ``--server-steps`` steps of ``AccommodationSearch[<200 kB invalid name>]`` from one client of
   ``agentgym serve`` (its own process; RSS of the server and its worker processes). Goal: flat
   within 50 MB after the first 1,000 steps.

Baseline: the same code at a git ref (default: the commit before the memos were bounded in bytes),
exported to a temporary folder and run in its own interpreter, with fewer episodes and steps
(``--ref-share``, 1/5 by default) since its caches grow with every distinct name.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_REF = "4a8cf06"  # main before this change (count-bounded caches)
TOKEN = "bench-memory"
NAME_KB = 200

TOOLS = ("AccommodationSearch", "RestaurantSearch", "AttractionSearch", "CitySearch")
GARBAGE = "[](){}<>,:;\"'\\ \n\tFinish Action from to ,(x) Flight Number: é中\x00"


def _rss_mb(pids: list[int]) -> float:
    import psutil

    total = 0
    for pid in pids:
        try:
            root = psutil.Process(pid)
            for p in [root, *root.children(recursive=True)]:
                total += p.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total / 2**20


def _text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(GARBAGE) for _ in range(min(n, 64))) + f"{rng.getrandbits(64):x}" * (n // 16)


def _plan(rng: random.Random, gold: list[dict]) -> str:
    days = [dict(d) for d in gold] or [{"days": 1}]
    for _ in range(rng.randint(1, 6)):  # mutate fields with fresh model-like text
        day = rng.choice(days)
        key = rng.choice(list(day))
        day[key] = rng.choice([_text(rng, rng.randint(1, 400)), f"from {_text(rng, 30)} to {_text(rng, 30)}", "-", 7])
    return json.dumps(days, ensure_ascii=False)


def _action(rng: random.Random, env) -> str:
    world, query = env.world, env.task
    city = rng.choice(world.cities)
    kind = rng.random()
    if kind < 0.25:
        return f"{rng.choice(TOOLS)}[{city}]"
    if kind < 0.5:
        return f"{rng.choice(TOOLS)}[{_text(rng, rng.randint(1, 5000))}]"
    if kind < 0.6:
        return f"FlightSearch[{city}, {rng.choice(world.cities)}, 2022-03-{rng.randint(1, 31):02d}]"
    if kind < 0.7:
        return f"GoogleDistanceMatrix[{_text(rng, rng.randint(1, 300))}, {city}, taxi]"
    if kind < 0.8:
        return _text(rng, rng.randint(0, 3000))
    if kind < 0.85:
        return f"NotebookWrite[{_text(rng, 50)}]"
    return f"Finish[{_plan(rng, list(query.annotated_plan or []))}]"


def episodes(n: int, seed: int = 0) -> dict:
    import gymnasium

    import agentgym  # noqa: F401

    env = gymnasium.make("TravelPlanner-v0")
    rng = random.Random(seed)
    samples, every, t0 = [], max(1, n // 10), time.perf_counter()
    for i in range(n):
        env.reset(seed=rng.getrandbits(31))
        for _ in range(rng.randint(1, 6)):
            _, _, terminated, truncated, _ = env.step(_action(rng, env.unwrapped))
            if terminated or truncated:
                break
        if (i + 1) % every == 0:
            samples.append(_rss_mb([os.getpid()]))
    return {"samples": samples, "seconds": time.perf_counter() - t0}


def server_steps(n: int) -> dict:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "agentgym.cli", "serve", "--port", str(port), "--log-level", "warning"]
    proc = subprocess.Popen(cmd, env={**os.environ, "AGENTGYM_SERVER_TOKENS": TOKEN})
    url = f"http://127.0.0.1:{port}"
    try:
        env = _connect(url, proc)
        env.reset(seed=0)
        rng, samples, every, t0 = random.Random(1), [], max(1, n // 10), time.perf_counter()
        for i in range(n):
            name = f"{rng.getrandbits(64):016x}" * (NAME_KB * 1024 // 16)
            _, _, terminated, truncated, _ = env.step(f"AccommodationSearch[{name}]")
            if terminated or truncated:
                env.reset(seed=i)
            if (i + 1) % every == 0:
                samples.append(_rss_mb([proc.pid]))
        env.close()
        return {"samples": samples, "seconds": time.perf_counter() - t0}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _connect(url: str, proc: subprocess.Popen):
    from agentgym.remote import RemoteEnv

    deadline = time.monotonic() + 120
    while True:
        try:
            return RemoteEnv(url, "TravelPlanner-v0", token=TOKEN)
        except Exception:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _export(ref: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="agentgym-bench-memory-"))
    data = subprocess.run(["git", "-C", str(REPO), "archive", ref, "agentgym"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def _child(tree: Path, part: str, n: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, __file__, "--child", part, str(n)], env=env, check=True,
                         capture_output=True, text=True, cwd=tree).stdout
    return json.loads(out.strip().splitlines()[-1])


def _growth(samples: list[float]) -> float:
    return max(samples[1:]) - samples[0] if len(samples) > 1 else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--server-steps", type=int, default=10_000)
    parser.add_argument("--ref", default=DEFAULT_REF)
    parser.add_argument("--ref-share", type=float, default=0.2, help="share of the episodes and steps the baseline runs")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        part, n = args.child
        print(json.dumps((episodes if part == "episodes" else server_steps)(int(n))))
        return

    sides = [("agentgym", REPO, 1.0)]
    if not args.no_baseline:
        sides.append((f"baseline {args.ref}", _export(args.ref), args.ref_share))
    print("| run | count | RSS first sample | RSS growth after | time | goal |")
    print("|---|---|---|---|---|---|")
    for part, count in (("episodes", args.episodes), ("server", args.server_steps)):
        for name, tree, share in sides:
            n = max(10, int(count * share))
            got = _child(tree, part, n)
            s = got["samples"]
            label = "fuzzed episodes" if part == "episodes" else f"server steps, {NAME_KB} kB invalid names"
            print(f"| {name}: {label} | {n:,} | {s[0]:,.0f} MB | {_growth(s):+,.1f} MB | {got['seconds']:,.0f} s "
                  f"| <= 50 MB |", flush=True)


if __name__ == "__main__":
    main()
