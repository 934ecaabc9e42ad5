"""Crash test of `agentgym run`: SIGKILL at random moments, rerun, until the run completes.

    python benchmarks/bench_run_resume.py [--episodes 45] [--concurrency 8] [--kills 12] [--seed S]

The model is a local chat-completions stub (on loopback) replaying TravelPlanner reference plans
with a 20-80 ms delay per reply; each `agentgym run` is a subprocess killed with SIGKILL after a
random 0.3-3 s (start-up, mid-episode, mid-write: wherever that lands). The same command is
rerun after every kill, and once more at the end. Goal: exactly one result per episode.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agentgym.agents.stub import ChatStub, Fault, replay_policy, travelplanner_gold_scripts
from agentgym.server.live_server import LiveServer


def episodes_in(path: Path) -> list[int]:
    if not path.exists():
        return []
    return [json.loads(line)["episode"] for line in path.read_bytes().split(b"\n")[:-1]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=45)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--kills", type=int, default=12)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    rng = random.Random(seed)
    stub = ChatStub(replay_policy(travelplanner_gold_scripts({"action_format": "json"}, args.episodes)))
    stub.inject(*[Fault(delay_s=rng.uniform(0.02, 0.08)) for _ in range(100_000)])
    out = Path(tempfile.mkdtemp(prefix="agentgym-resume-"))
    results = out / "results.jsonl"
    with LiveServer(stub.app()) as server:
        command = [sys.executable, "-c", "from agentgym.cli import main; main()", "run", "TravelPlanner-v0",
                   "--base-url", server.url + "/v1", "--model", "stub", "--episodes", str(args.episodes),
                   "--concurrency", str(args.concurrency), "--out", str(out), "--quiet", "--no-plot",
                   "-k", "action_format=json"]
        kills, torn = 0, 0
        for _ in range(args.kills):
            if len(set(episodes_in(results))) >= args.episodes:
                break
            proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0.3, 3.0))
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                kills += 1
            proc.wait()
            torn += bool(results.exists() and not results.read_bytes().endswith(b"\n") and results.stat().st_size)
            print(f"  after kill {kills}: {len(episodes_in(results))} results")
        requests_before_final = len(stub.requests)
        final = subprocess.run(command, capture_output=True, text=True)
    episodes = episodes_in(results)
    duplicates = len(episodes) - len(set(episodes))
    missing = sorted(set(range(args.episodes)) - set(episodes))
    print(f"seed {seed}: {kills} SIGKILLs ({torn} left a torn last line), final rerun exit {final.returncode}, "
          f"{len(stub.requests) - requests_before_final} model requests in it")
    print(f"results: {len(episodes)} lines for {args.episodes} episodes, {duplicates} duplicates, "
          f"{len(missing)} missing -> {'OK' if not duplicates and not missing else 'FAIL'}")
    if duplicates or missing or final.returncode != 0:
        print(final.stdout[-2000:], final.stderr[-2000:])
        sys.exit(1)


if __name__ == "__main__":
    main()
