"""Step time on 1 MB degenerate actions, for every env and action format (goal: <= 50 ms each).

Degenerate policies repeat one token until the length limit: unclosed or repeated tags, brackets,
huge JSON. Each kind below is stepped in TravelPlanner-v0 (react, json) and SearchQA-v0 (tags,
json) at 1,000,000 characters (the default ``max_action_chars``).

Baseline: the code at a git ref (default: the commit before the linear tag scanners,
``agentgym/core/tags.py``, were added), exported to a temporary
folder and run in its own interpreter with the same measuring code. Both sides are timed at 16 KB
and 32 KB, then at 1 MB unless the exponent those two sizes show predicts more than 5 s there
(a quadratic parser would take minutes); such a figure is extrapolated
(``t32 * (1 MB / 32 KB) ** exponent``) and marked "est.". The baseline is always extrapolated.
The ratio columns compare the measured 32 KB times and the 1 MB figures.

Times are the thread's CPU time (``time.thread_time``), median of repeats, so other jobs on a
shared machine do not inflate them.

    python benchmarks/bench_degenerate_actions.py [--ref REF] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MB = 1_000_000
GOAL_MS = 50.0
BUDGET_S = 5.0  # a 1 MB step predicted to take longer is extrapolated, not run

ENVS = {
    "TravelPlanner react": ["TravelPlanner-v0", {"action_format": "react"}],
    "TravelPlanner json": ["TravelPlanner-v0", {"action_format": "json"}],
    "SearchQA tags": ["SearchQA-v0", {"action_format": "tags"}],
    "SearchQA json": ["SearchQA-v0", {"action_format": "json"}],
}

# name -> (head, repeated unit, tail); the action is head + unit * k + tail, at most n characters.
KINDS = {
    "unclosed <answer>": ["", "<answer>", ""],
    "repeated <answer>x</answer>": ["", "<answer>x</answer>", ""],
    "unclosed <tool_call>": ["", "<tool_call>", ""],
    "unclosed <think>": ["", "<think>", ""],
    "repeated </think>": ["", "</think>", ""],
    "unclosed <information>": ["", "<information>", ""],
    "unclosed <search>": ["", "<search>", ""],
    "Finish[ repeated": ["", "Finish[", ""],
    "brackets [": ["", "[", ""],
    "JSON nesting in <tool_call>": ["<tool_call>", "[", "</tool_call>"],
    "JSON integer, 1M digits": ['<tool_call>{"name": "search", "arguments": {"query": ', "7", "}}</tool_call>"],
    "Action + spaces": ["Action", " ", ""],
    "plan fence ```a... in <answer>": ["<answer>```", "a", "</answer>"],
}

MEASURE = r"""
import json, math, statistics, sys, time
import gymnasium
import agentgym  # registers the envs

envs, kinds, big, budget, repeat = json.loads(sys.argv[1])


RAISED = {}


def step_time(env, action, repeat):
    times = []
    for _ in range(repeat):
        env.reset(seed=0)
        t = time.thread_time()
        try:
            env.step(action)
        except Exception as exc:  # the baseline's crashes are part of what is measured
            RAISED[label, kind] = type(exc).__name__
        times.append(time.thread_time() - t)
    return statistics.median(times)


out = {}
for label, (env_id, kwargs) in envs.items():
    env = gymnasium.make(env_id, **kwargs).unwrapped
    for kind, (head, unit, tail) in kinds.items():
        make = lambda n: head + unit * max(1, (n - len(head) - len(tail)) // len(unit)) + tail
        row = {str(n): step_time(env, make(n), repeat) for n in (16_000, 32_000)}
        exponent = min(3.0, max(1.0, math.log2(max(row["32000"], 1e-6) / max(row["16000"], 1e-6))))
        if big and row["32000"] * (big / 32_000) ** exponent <= budget:
            row[str(big)] = step_time(env, make(big), repeat)
        if (label, kind) in RAISED:
            row["raised"] = RAISED[label, kind]
        out.setdefault(label, {})[kind] = row
print(json.dumps(out))
"""


def _run(root: Path, big: int, repeat: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(root)}
    args = json.dumps([ENVS, KINDS, big, BUDGET_S, repeat])
    out = subprocess.run([sys.executable, "-c", MEASURE, args], cwd=root, env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"measuring in {root} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _export(ref: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def _extrapolate(t16: float, t32: float, n: int = MB) -> tuple[float, float]:
    exponent = min(3.0, max(1.0, math.log2(max(t32, 1e-6) / max(t16, 1e-6))))
    return t32 * (n / 32_000) ** exponent, exponent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default=None, help="git ref of the baseline (default: before core/tags.py existed)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if args.ref is None:
        added = subprocess.run(["git", "-C", str(REPO), "log", "--diff-filter=A", "--format=%H", "--",
                                "agentgym/core/tags.py"], capture_output=True, text=True, check=True).stdout.split()
        args.ref = f"{added[-1]}^"

    ours = _run(REPO, MB, args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        base = _run(_export(args.ref, Path(tmp)), 0, 1)

    print(f"step() CPU time, median of {args.repeat}; baseline = {args.ref[:12]} (1 MB extrapolated from 16/32 KB)\n")
    print("| env | action (1 MB) | agentgym 1 MB | baseline 1 MB (est.) | ratio | agentgym 32 KB | "
          f"baseline 32 KB | ratio | goal <= {GOAL_MS:.0f} ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    worst = 0.0
    for label in ENVS:
        for kind in KINDS:
            mine, theirs = ours[label][kind], base[label][kind]
            o32, b32 = mine["32000"], theirs["32000"]
            measured = str(MB) in mine
            o1m = mine[str(MB)] if measured else _extrapolate(mine["16000"], o32)[0]
            b1m, exponent = _extrapolate(theirs["16000"], b32)
            worst = max(worst, o1m)
            ok = "yes" if o1m * 1e3 <= GOAL_MS else "NO"
            ours_text = _fmt_s(o1m) + ("" if measured else " (est.)") + _raised(mine)
            print(f"| {label} | {kind} | {ours_text} | {_fmt_s(b1m)} (n^{exponent:.1f}){_raised(theirs)} | {b1m / o1m:,.0f}x "
                  f"| {o32 * 1e3:,.2f} ms | {b32 * 1e3:,.1f} ms | {b32 / max(o32, 1e-6):,.0f}x | {ok} |")
    print(f"\nslowest 1 MB step: {worst * 1e3:.1f} ms (goal <= {GOAL_MS:.0f} ms)")


def _raised(row: dict) -> str:
    return f", raises {row['raised']}" if "raised" in row else ""


def _fmt_s(seconds: float) -> str:
    return f"{seconds * 1e3:,.1f} ms" if seconds < 1 else f"{seconds:,.0f} s"


if __name__ == "__main__":
    main()
