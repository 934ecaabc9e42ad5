"""Bounded JSON POSTs to endpoints agentgym does not control: LLM judges, retrievers, model servers.

Each call has a total deadline (connecting, sending, the headers and the body together, not per
read) and a cap on the reply's size; the reply's JSON nesting is checked before it is parsed.
httpx moves the bytes: the reply is streamed and reading stops at the cap or at the deadline.

* asyncio calls run under ``asyncio.timeout``: the deadline cancels the call wherever it waits.
* Blocking calls give every socket operation the smaller of its own timeout and the time left
  (a thin wrapper over httpcore's network backend), so a server that drip-feeds its headers or
  its body cannot hold a call past the deadline either.

Failures raise :class:`CallFailed` with a reason meant for a log line or an abstention, and
whether trying again may help. HTTP error statuses are not failures here: callers decide.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

from agentgym import _json_limits

__all__ = ["CallFailed", "Reply", "sync_client", "post_json", "apost_json", "json_bytes", "clip"]

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("agentgym_http_deadline", default=None)


class CallFailed(Exception):
    """A bounded call got no usable reply; ``retryable`` says whether trying again may help."""

    def __init__(self, reason: str, *, retryable: bool) -> None:
        self.reason, self.retryable = reason, retryable
        super().__init__(reason)


@dataclass(frozen=True)
class Reply:
    """A whole reply, read within the deadline and the size cap."""

    status: int
    headers: httpx.Headers
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self, *, max_depth: int = _json_limits.MAX_DEPTH) -> Any:
        """The body as JSON; ``ValueError`` when it is not JSON or nests deeper than ``max_depth``."""
        return _json_limits.loads(self.body, max_depth=max_depth)


def json_bytes(body: Any) -> bytes:
    """``body`` as the UTF-8 JSON httpx would send, except that text which is not valid Unicode
    (a lone surrogate, which model text may hold) is sent with U+FFFD in its place instead of
    raising ``UnicodeEncodeError``; surrogate pairs become the character they encode."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode()


def clip(text: str, limit: int = 200) -> str:
    """``text`` cut to ``limit`` characters, for replies quoted in messages."""
    return text if len(text) <= limit else text[:limit] + "..."


# -- blocking ---------------------------------------------------------------------------------
def sync_client(**kwargs: Any) -> httpx.Client:
    """An ``httpx.Client`` whose sockets honour :func:`post_json`'s deadline (kwargs go to the client)."""
    transport = httpx.HTTPTransport()
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if backend is not None and not isinstance(backend, _DeadlineBackend):
        pool._network_backend = _DeadlineBackend(backend)  # type: ignore[union-attr]
    return httpx.Client(transport=transport, **kwargs)


def post_json(client: httpx.Client, url: str, body: Any, *, deadline_s: float, max_bytes: int,
              headers: Mapping[str, str] | None = None) -> Reply:
    """POST ``body`` as JSON and read the whole reply within ``deadline_s`` seconds and ``max_bytes``."""
    deadline = time.monotonic() + deadline_s
    token = _DEADLINE.set(deadline)
    try:
        with client.stream("POST", url, content=json_bytes(body), headers=_json_headers(headers),
                           timeout=deadline_s) as response:
            _check_declared_size(response, max_bytes)
            chunks, size = [], 0
            for chunk in response.iter_bytes():
                size = _add(chunks, chunk, size, max_bytes)
                if time.monotonic() > deadline:
                    raise _too_slow(deadline_s)
            return Reply(response.status_code, response.headers, b"".join(chunks))
    except httpx.TimeoutException:
        raise _too_slow(deadline_s) from None
    except httpx.HTTPError as exc:
        raise _transport_failure(exc) from None
    finally:
        _DEADLINE.reset(token)


# -- asyncio ----------------------------------------------------------------------------------
async def apost_json(client: httpx.AsyncClient, url: str, body: Any, *, deadline_s: float, max_bytes: int,
                     headers: Mapping[str, str] | None = None) -> Reply:
    """:func:`post_json` for an ``httpx.AsyncClient``."""
    try:
        async with asyncio.timeout(deadline_s):
            async with client.stream("POST", url, content=json_bytes(body), headers=_json_headers(headers),
                                     timeout=deadline_s) as response:
                _check_declared_size(response, max_bytes)
                chunks: list[bytes] = []
                size = 0
                async for chunk in response.aiter_bytes():
                    size = _add(chunks, chunk, size, max_bytes)
                return Reply(response.status_code, response.headers, b"".join(chunks))
    except (TimeoutError, httpx.TimeoutException):
        raise _too_slow(deadline_s) from None
    except httpx.HTTPError as exc:
        raise _transport_failure(exc) from None


# -- shared -----------------------------------------------------------------------------------
def _json_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    return {"Content-Type": "application/json", **(headers or {})}


def _check_declared_size(response: httpx.Response, max_bytes: int) -> None:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and len(declared) < 20 and int(declared) > max_bytes:
        raise CallFailed(f"the reply would be {int(declared)} bytes, more than the {max_bytes} bytes allowed",
                         retryable=False)


def _add(chunks: list[bytes], chunk: bytes, size: int, max_bytes: int) -> int:
    size += len(chunk)
    if size > max_bytes:
        raise CallFailed(f"the reply is larger than the {max_bytes} bytes allowed; reading stopped", retryable=False)
    chunks.append(chunk)
    return size


def _too_slow(deadline_s: float) -> CallFailed:
    return CallFailed(f"no answer within {deadline_s:g} s (a deadline for the whole reply)", retryable=True)


def _transport_failure(exc: httpx.HTTPError) -> CallFailed:
    # Connection errors may pass; a reply that does not decode (bad gzip, broken chunking) is retried too.
    what = "cannot connect" if isinstance(exc, httpx.ConnectError) else "connection error"
    return CallFailed(f"{what} ({type(exc).__name__}: {clip(str(exc))})", retryable=True)


def _left(timeout: float | None, expired: type[Exception]) -> float | None:
    """The smaller of an operation's timeout and the time left before the call's deadline."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise expired("the call's deadline has passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        inner = self._inner.start_tls(ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout))
        return _DeadlineStream(inner)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        stream = self._inner.connect_tcp(host, port, _left(timeout, httpcore.ConnectTimeout), local_address,
                                         socket_options)
        return _DeadlineStream(stream)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:
        stream = self._inner.connect_unix_socket(path, _left(timeout, httpcore.ConnectTimeout), socket_options)
        return _DeadlineStream(stream)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)
