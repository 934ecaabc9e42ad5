"""``ast.literal_eval`` made safe to call from several threads at once.

CPython 3.11 can raise ``SystemError: AST constructor recursion depth mismatch`` when two
threads build ASTs at the same time (gh-106905). Envs are built and stepped in worker threads
(the env server, verl's executors), so every literal parse in agentgym goes through one lock.
"""

from __future__ import annotations

import ast
import threading
from typing import Any

__all__ = ["literal_eval"]

_LOCK = threading.Lock()


def literal_eval(text: str) -> Any:
    """``ast.literal_eval(text)`` under a process-wide lock; raises what it raises."""
    with _LOCK:
        return ast.literal_eval(text)
