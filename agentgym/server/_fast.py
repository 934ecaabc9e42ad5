"""Step bodies read without pydantic: the server's hot path (msgspec, when installed).

``peek_step`` checks a step body's shape and reads its ``seq`` without building the action
string, so a worker-process server forwards the body as it came (the worker parses it once).
``read_step`` builds the action for in-process env calls. Both answer None when unsure (no
msgspec, a lone surrogate escape, a ``seq`` past 64 bits...); the caller then takes the strict
pydantic path, whose verdicts and messages stay the protocol's.
"""

from __future__ import annotations

from typing import Any

__all__ = ["peek_step", "read_step"]

try:
    import msgspec
except ImportError:  # pragma: no cover - the slow path serves the same requests
    msgspec = None

_UNSURE = None

if msgspec is not None:
    class _Peek(msgspec.Struct, forbid_unknown_fields=True):
        action: msgspec.Raw
        seq: int | None = None

    class _Step(msgspec.Struct, forbid_unknown_fields=True):
        action: str
        seq: int | None = None

    _PEEK, _STEP = msgspec.json.Decoder(_Peek), msgspec.json.Decoder(_Step)


def peek_step(body: bytes) -> tuple[int | None] | None:
    """``(seq,)`` when ``body`` is a well-formed step request whose action is a JSON string; else None."""
    if msgspec is None:
        return _UNSURE
    try:
        peeked = _PEEK.decode(body)
    except msgspec.DecodeError:
        return _UNSURE
    if memoryview(peeked.action)[:1] != b'"':  # a number, list...: let the strict path say what is wrong
        return _UNSURE
    return (peeked.seq,)


def read_step(body: bytes) -> Any:
    """The step request (``.action``, ``.seq``), or None when unsure."""
    if msgspec is None:
        return _UNSURE
    try:
        return _STEP.decode(body)
    except msgspec.DecodeError:
        return _UNSURE
