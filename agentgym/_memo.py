"""Memos bounded in bytes, for results keyed or filled by model text.

A count bound is no bound when a key can be a megabyte of model text, so every memo here counts
the bytes of what it keeps (``sys.getsizeof`` of the strings, through tuples and small objects;
``nbytes``) and stores nothing larger than its per-entry limit. When the total passes the budget, the
older half goes (dicts keep insertion order): a long stream of new texts keeps the recent half
warm instead of dropping everything at once.

Reads are a plain ``dict.get``; only a miss that is stored pays for the size and takes the lock.
"""

from __future__ import annotations

import functools
import itertools
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Memo", "memoize", "nbytes"]

T = TypeVar("T")
_MISS = object()
_ENTRY = 100  # a dict slot, the key's and value's headers: what an entry costs beyond its contents
_REF = 8


def nbytes(obj: Any, depth: int = 1) -> int:
    """Bytes ``obj`` holds: strings in full at any depth; containers and objects through their items
    and attributes for ``depth`` levels (a long sequence from its first items), else their own size."""
    kind = type(obj)
    if kind is str or kind in _FLAT or depth <= 0:
        return sys.getsizeof(obj)
    if kind in _SEQUENCES or isinstance(obj, tuple):  # named tuples (world rows) included
        n = len(obj)
        head = obj if n <= _SAMPLE else list(itertools.islice(obj, _SAMPLE))
        part = sum([nbytes(x, depth - 1) for x in head])
        return sys.getsizeof(obj) + (part if n <= _SAMPLE else part * n // _SAMPLE)
    if kind is dict:
        return sys.getsizeof(obj) + sum([nbytes(k, 0) + nbytes(v, depth - 1) for k, v in obj.items()])
    fields = getattr(obj, "__dict__", None)
    if fields is None:
        slots = getattr(kind, "__slots__", ())
        fields = {name: getattr(obj, name, None) for name in ((slots,) if isinstance(slots, str) else slots)}
    return sys.getsizeof(obj) + sum([nbytes(v, depth - 1) for v in fields.values()])


_FLAT = frozenset({bytes, int, float, bool, type(None)})
_SEQUENCES = frozenset({tuple, list, set, frozenset})
_SAMPLE = 8  # a longer sequence is estimated from its first items (its entry's key bounds its text)


class Memo(dict):  # type: ignore[type-arg]
    """A dict bounded in bytes: read it with ``get``, fill it with ``put``."""

    __slots__ = ("max_bytes", "max_entry_bytes", "nbytes", "_lock")

    def __init__(self, max_bytes: int, max_entry_bytes: int | None = None) -> None:
        super().__init__()
        self.max_bytes = max_bytes
        self.max_entry_bytes = max_bytes // 64 if max_entry_bytes is None else max_entry_bytes
        self.nbytes = 0
        self._lock = threading.Lock()

    def put(self, key: Any, value: T) -> T:
        """Store ``value`` under ``key`` when the entry fits its limit; return ``value`` either way."""
        cost = _cost(key, value)
        if cost > self.max_entry_bytes:
            return value
        with self._lock:
            old = super().pop(key, _MISS)  # a replaced entry moves to the newest end, so eviction spares it
            if old is not _MISS:
                self.nbytes -= _cost(key, old)
            dict.__setitem__(self, key, value)
            self.nbytes += cost
            if self.nbytes > self.max_bytes:
                self._drop_older_half()
        return value

    def clear(self) -> None:
        with self._lock:
            super().clear()
            self.nbytes = 0

    def _drop_older_half(self) -> None:
        for key in list(itertools.islice(self, max(1, len(self) // 2))):
            self.nbytes -= _cost(key, self.pop(key))

    def __setitem__(self, key: Any, value: Any) -> None:  # every store is counted
        self.put(key, value)


def _cost(key: Any, value: Any) -> int:
    return _ENTRY + nbytes(key) + nbytes(value)


def memoize(max_bytes: int, max_entry_bytes: int | None = None,
            keep: Callable[[Any], bool] | None = None) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Memoize a function of hashable arguments in a :class:`Memo` (``fn.memo``; ``fn.cache_clear()``
    empties it, ``fn.__wrapped__`` is the uncached function). Results that ``keep`` rejects (failed
    lookups) are returned but not stored. A one-argument call is keyed by the argument itself."""

    def wrap(fn: Callable[..., T]) -> Callable[..., T]:
        memo = Memo(max_bytes, max_entry_bytes)
        get, put = memo.get, memo.put

        @functools.wraps(fn)
        def cached(*args: Any) -> T:
            key = args[0] if len(args) == 1 else args
            hit = get(key, _MISS)
            if hit is not _MISS:
                return hit  # type: ignore[no-any-return]
            value = fn(*args)
            return value if keep is not None and not keep(value) else put(key, value)

        cached.memo = memo  # type: ignore[attr-defined]
        cached.cache_clear = memo.clear  # type: ignore[attr-defined]
        return cached

    return wrap
