"""`agentgym run` killed with SIGKILL at random points, then rerun: exactly one result per episode."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

from run_helpers import EPISODES

from agentgym.agents.stub import Fault


def _results(path) -> list[int]:
    if not path.exists():
        return []
    return [json.loads(line)["episode"] for line in path.read_bytes().split(b"\n")[:-1]]


CONCURRENCY = 3
# The last episode starts when result EPISODES - CONCURRENCY lands; killing by then, plus a short
# random delay, always hits a live run (a later target let the run finish first: a flaky test).
LAST_TARGET = EPISODES - CONCURRENCY


def test_a_run_killed_at_random_points_ends_with_exactly_one_result_per_episode(model, tmp_path):
    stub, url = model
    stub.inject(*[Fault(delay_s=0.02)] * 10_000)  # slow replies, so that kills land mid-episode
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    command = [sys.executable, "-c", "from agentgym.cli import main; main()", "run", "TravelPlanner-v0",
               "--base-url", url, "--model", "stub", "--episodes", str(EPISODES), "--concurrency", str(CONCURRENCY),
               "--out", str(tmp_path), "--quiet", "--no-plot", "-k", "action_format=json"]
    results = tmp_path / "results.jsonl"
    kills = 0
    for _ in range(3):
        before = len(_results(results))
        if before >= LAST_TARGET:
            break
        target = rng.randint(before + 1, LAST_TARGET)
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while proc.poll() is None and len(_results(results)) < target:
            time.sleep(0.005)
        time.sleep(rng.uniform(0, 0.05))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
    final = subprocess.run(command, capture_output=True, text=True)
    assert final.returncode == 0, (seed, final.stdout, final.stderr)
    episodes = _results(results)
    assert sorted(episodes) == list(range(EPISODES)), f"random seed {seed}: {episodes}"
    assert kills >= 1, f"random seed {seed}: every run finished before its kill"
