"""The console script turns configuration mistakes into one line and a non-zero exit."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("args, message", [
    (["serve-retriever", "/nonexistent/corpus.jsonl"], "error: no such corpus file"),
    (["serve", "--env-calls", "bogus"], "error: env_calls: Input should be"),
    (["travelplanner", "solve", "--queries", "/nonexistent.jsonl"], "no query file"),
])
def test_mistakes_end_with_one_line_not_a_traceback(args, message):
    out = subprocess.run([sys.executable, "-m", "agentgym.cli", *args], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert message in text and "Traceback" not in text


def test_help_lists_every_command():
    out = subprocess.run([sys.executable, "-m", "agentgym.cli", "--help"], capture_output=True, text=True, timeout=120)
    for command in ("demo", "list", "run", "serve", "eval", "travelplanner", "verl", "train", "serve-retriever"):
        assert command in out.stdout
