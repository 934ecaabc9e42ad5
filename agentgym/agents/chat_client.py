"""One OpenAI-compatible ``/chat/completions`` client with bounded retries: the chat agent's and the LLM judge's.

Each attempt is one bounded POST (``agentgym._http``: a total deadline and a cap on the reply's
size). An attempt fails with ``ModelEndpointError``: retryable for timeouts, dropped connections
and the statuses the policy retries; not for other HTTP errors or oversized replies. A 200 reply
goes to the caller's reader, which returns the caller's value or raises ``ModelEndpointError``
itself (retryable or not, the caller decides). Retryable failures are tried again at most
``max_retries`` times after exponential backoff (jittered and ``Retry-After`` honoured when the
policy says); the last failure is raised. Failure messages never quote the URL unless ``where`` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from agentgym import _http
from agentgym.errors import ModelEndpointError

__all__ = ["ChatClient", "RetryPolicy", "RETRYABLE_STATUSES"]

RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
T = TypeVar("T")
Reader = Callable[[_http.Reply], T]


def _ignore(_name: str) -> None:
    pass


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait before trying a failed attempt again."""

    max_retries: int
    backoff_s: float
    max_backoff_s: float
    retry_status: Callable[[int], bool] = RETRYABLE_STATUSES.__contains__
    jitter: bool = True
    """Wait a random share (half to all) of the backoff: concurrent callers do not retry in lockstep."""
    retry_after: bool = True
    """Wait what the server's ``Retry-After`` header says (capped at ``max_backoff_s``) when it says a number."""

    def delay(self, retry: int, reply: _http.Reply | None) -> float:
        """Seconds to wait before retry number ``retry`` (0 for the first), after ``reply`` (None: no reply)."""
        if self.retry_after and reply is not None:
            wait = _seconds(reply.headers.get("retry-after", ""))
            if wait is not None:
                return min(max(wait, 0.0), self.max_backoff_s)
        ceiling = min(self.backoff_s * 2 ** retry, self.max_backoff_s)
        return random.uniform(ceiling / 2, ceiling) if self.jitter else ceiling


def _seconds(text: str) -> float | None:
    try:
        wait = float(text)
    except ValueError:
        return None
    return wait if math.isfinite(wait) else None  # "nan" or "inf" from a hostile or broken server


class ChatClient:
    """Bounded, retried POSTs of chat-completion payloads to one URL, over the caller's httpx client.

    ``count`` is called with ``"requests"`` for every attempt and ``"retries"`` before every retry;
    ``slots`` (blocking calls only) is held around each POST, not around the waits between them.
    """

    def __init__(self, url: str, *, policy: RetryPolicy, deadline_s: float, max_bytes: int,
                 headers: Mapping[str, str] | None = None, where: str = "",
                 count: Callable[[str], None] = _ignore, slots: AbstractContextManager[Any] | None = None) -> None:
        self.url, self.policy, self.headers, self.where = url, policy, headers, where
        self.deadline_s, self.max_bytes = deadline_s, max_bytes
        self._count, self._slots = count, slots

    def complete(self, http: httpx.Client, payload: dict[str, Any], read: Reader[T]) -> T:
        """POST ``payload`` until ``read`` accepts a reply or a failure is final; blocking."""
        for retry in range(self.policy.max_retries + 1):
            self._count("requests")
            with self._slots or contextlib.nullcontext():
                reply, failure = self._call(lambda: _http.post_json(http, self.url, payload, **self._bounds()))
            value, failure = self._outcome(reply, failure, read)
            if failure is None:
                return value
            self._give_up_unless_retryable(failure, retry)
            time.sleep(self.policy.delay(retry, reply))
        raise AssertionError("unreachable")

    async def acomplete(self, http: httpx.AsyncClient, payload: dict[str, Any], read: Reader[T]) -> T:
        """:meth:`complete` for an ``httpx.AsyncClient``."""
        for retry in range(self.policy.max_retries + 1):
            self._count("requests")
            try:
                reply, failure = await _http.apost_json(http, self.url, payload, **self._bounds()), None
            except _http.CallFailed as exc:
                reply, failure = None, self._failed(exc)
            value, failure = self._outcome(reply, failure, read)
            if failure is None:
                return value
            self._give_up_unless_retryable(failure, retry)
            await asyncio.sleep(self.policy.delay(retry, reply))
        raise AssertionError("unreachable")

    # -- one attempt -------------------------------------------------------------------------
    def _bounds(self) -> dict[str, Any]:
        return {"headers": self.headers, "deadline_s": self.deadline_s, "max_bytes": self.max_bytes}

    def _call(self, post: Callable[[], _http.Reply]) -> tuple[_http.Reply | None, ModelEndpointError | None]:
        try:
            return post(), None
        except _http.CallFailed as exc:
            return None, self._failed(exc)

    def _failed(self, exc: _http.CallFailed) -> ModelEndpointError:
        return ModelEndpointError(f"{self.where}{exc.reason}", retryable=exc.retryable)

    def _outcome(self, reply: _http.Reply | None, failure: ModelEndpointError | None,
                 read: Reader[T]) -> tuple[Any, ModelEndpointError | None]:
        if failure is not None or reply is None:
            return None, failure
        if reply.status != 200:
            return None, ModelEndpointError(f"{self.where}HTTP {reply.status}: {_http.clip(reply.text)!r}",
                                            status=reply.status, retryable=self.policy.retry_status(reply.status))
        try:
            return read(reply), None
        except ModelEndpointError as exc:
            return None, exc

    def _give_up_unless_retryable(self, failure: ModelEndpointError, retry: int) -> None:
        if not failure.retryable or retry == self.policy.max_retries:
            raise failure
        self._count("retries")
