"""Peak memory of this process while a block runs (psutil), for the bounded-memory tests."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psutil


@contextmanager
def peak_rss() -> Iterator[dict[str, float]]:
    """``{"mb": ...}``: the RSS growth at its peak while the block runs, sampled every 2 ms."""
    proc, out, done = psutil.Process(), {"mb": 0.0}, threading.Event()
    base = proc.memory_info().rss

    def sample() -> None:
        while not done.is_set():
            out["mb"] = max(out["mb"], (proc.memory_info().rss - base) / 2**20)
            done.wait(0.002)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield out
    finally:
        done.set()
        thread.join()
        out["mb"] = max(out["mb"], (proc.memory_info().rss - base) / 2**20)
