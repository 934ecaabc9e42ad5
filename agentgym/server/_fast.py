"""Step bodies read without pydantic: the server's hot path (msgspec, when installed).

``peek_step`` checks a step body's shape and reads its ``seq`` without building the action
string, so a worker-process server forwards the body as it came (the worker parses it once).
``read_step`` builds the action for in-process env calls. Both answer None when unsure (no
msgspec, a lone surrogate escape, a ``seq`` past 64 bits...); the caller then takes the strict
pydantic path, whose verdicts and messages stay the protocol's.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["peek_step", "read_step", "read_batch"]

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

    class _Item(msgspec.Struct, forbid_unknown_fields=True):
        session_id: str
        step: msgspec.Raw

    _PEEK, _STEP = msgspec.json.Decoder(_Peek), msgspec.json.Decoder(_Step)
    _BATCH = msgspec.json.Decoder(list[_Item])


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


def read_batch(body: bytes) -> list[tuple[str, bytes]] | None:
    """A batch body ``[{"session_id": ..., "step": <a step request>}, ...]`` as (session id, step body)
    pairs; None when it is not one."""
    if msgspec is not None:
        try:
            return [(item.session_id, bytes(item.step)) for item in _BATCH.decode(body)]
        except msgspec.DecodeError:  # not a batch, or one msgspec cannot scan (a lone surrogate escape)
            pass
    return _read_batch_slowly(body)


def _read_batch_slowly(body: bytes) -> list[tuple[str, bytes]] | None:
    from agentgym.remote.protocol import encode

    try:
        items = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(items, list) or not all(
            isinstance(item, dict) and set(item) == {"session_id", "step"} and isinstance(item["session_id"], str)
            for item in items):
        return None
    return [(item["session_id"], encode(item["step"])) for item in items]
