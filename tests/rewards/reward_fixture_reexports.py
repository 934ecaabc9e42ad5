"""A user module that imports standard-library callables: custom terms must not reach them through it."""

from __future__ import annotations

import os  # noqa: F401  (reached as "reward_fixture_reexports:os.abort")
import subprocess  # noqa: F401
from functools import partial
from os import abort as stop  # noqa: F401
from signal import pause  # noqa: F401

environ = os.environ
shell = partial(subprocess.run, "true")
threshold = 0.5


def no_inputs():
    return 1.0


def _private(answer):
    return 1.0


class Scorer:
    def __call__(self, answer):
        return 1.0 if answer else 0.0


scorer = Scorer()
