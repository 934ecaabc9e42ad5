"""Shared helpers for the benchmarks: timing, peak memory in a fresh process, the full world."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["median_us", "in_fresh_process", "full_world", "row"]


def median_us(fn, args_list, repeat: int = 1) -> float:
    """Median wall time of ``fn(*args)`` over ``args_list``, in microseconds."""
    times = []
    for _ in range(repeat):
        for args in args_list:
            t = time.perf_counter()
            fn(*args)
            times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


def in_fresh_process(code: str) -> dict:
    """Run ``code`` in a new interpreter; it must print one JSON object. Adds peak RSS in MB."""
    wrapper = code + "\nimport resource, json as _j\nprint(_j.dumps({**RESULT, 'peak_rss_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))\n"
    out = subprocess.run([sys.executable, "-c", wrapper], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def full_world(path: str | None, seed: int = 0) -> Path:
    """A full-scale synthetic world (about 4M flights), generated once and kept."""
    from agentgym.envs.travelplanner.synthetic import generate_world

    folder = Path(path or Path(tempfile.gettempdir()) / f"agentgym-bench-full-seed{seed}")
    if not (folder / "queries").is_dir():
        t = time.perf_counter()
        generate_world(folder, seed=seed, scale="full")
        print(f"generated the full-scale world in {time.perf_counter() - t:.1f} s at {folder}")
    return folder


def row(name: str, ours: float, baseline: float, unit: str, goal: str) -> str:
    ratio = baseline / ours if ours else float("inf")
    shown = f"{ratio:,.0f}x" if ratio >= 10 else f"{ratio:.2f}x"  # below 1: ours is slower
    a, b = (f"{v:,.{2 if v < 1 else 1}f} {unit}" for v in (ours, baseline))
    return f"| {name} | {a} | {b} | {shown} | {goal} |"
