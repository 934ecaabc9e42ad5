"""One keep-alive HTTP/1.1 connection, blocking or asyncio, for the env server's JSON API.

The HTTP is h11's ``Connection`` state machine (the one httpcore/httpx use): request bytes,
Content-Length/chunked/close-delimited replies, 1xx, whether the connection can be reused. This
module only moves bytes between a socket and h11. A remote env sends one request at a time, so one
connection per env does, without httpx's pool and request machinery: with 64 sessions in
``benchmarks/bench_server.py`` httpx's ``AsyncClient`` managed 270-350 steps/s, this 3,800-4,800.
No proxy support; ``https`` URLs use the default SSL context.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import urlsplit

import h11

from agentgym._version import __version__
from agentgym.errors import ConfigError

__all__ = ["Endpoint", "Reply", "ConnectionLost", "ProtocolError", "SyncConnection", "AsyncConnection"]

_READ_SIZE = 256 * 1024
_MAX_HEAD_BYTES = 64 * 1024


class Reply(NamedTuple):
    status: int
    headers: dict[str, str]
    body: bytes


class ConnectionLost(Exception):
    """The exchange failed. ``maybe_processed`` is False only when the server cannot have acted on
    the request: the connection was never made, or a reused one was found closed before any reply."""

    def __init__(self, message: str, *, maybe_processed: bool) -> None:
        self.maybe_processed = maybe_processed
        super().__init__(message)


class ProtocolError(Exception):
    """The server's bytes are not an HTTP/1.1 reply."""


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int
    base_path: str
    ssl_context: ssl.SSLContext | None

    @classmethod
    def parse(cls, url: str, ssl_context: ssl.SSLContext | None = None) -> Endpoint:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError("url", url, "an http:// or https:// URL, e.g. http://127.0.0.1:8000")
        if parts.scheme == "https" and ssl_context is None:
            ssl_context = ssl.create_default_context()
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return cls(parts.hostname, port, parts.path.rstrip("/"), ssl_context if parts.scheme == "https" else None)

    @property
    def host_header(self) -> str:
        return f"{self.host}:{self.port}"


_END = h11.EndOfMessage()
_USER_AGENT = f"agentgym/{__version__}".encode("ascii")


class _Exchange:
    """One connection's h11 state: ``request`` gives the bytes to send, ``receive`` takes the bytes
    read (``b""`` at EOF) and gives the reply once h11 has all of it, ``next_cycle`` says whether
    h11 lets the connection carry another request (and readies it). h11 errors become ``ProtocolError``."""

    def __init__(self, endpoint: Endpoint) -> None:
        self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=_MAX_HEAD_BYTES)
        self._prefix = endpoint.base_path.encode("ascii")
        self._fixed = [(b"Host", endpoint.host_header.encode("ascii")), (b"User-Agent", _USER_AGENT),
                       (b"Accept", b"application/json")]
        self._reset_reply()

    def _reset_reply(self) -> None:
        self._status = 0
        self._headers: dict[str, str] = {}
        self._body: list[bytes] = []

    def request(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> bytes:
        # Bytes: h11 still validates them, but need not encode them.
        fields = self._fixed + [(name.encode("latin-1"), value.encode("latin-1"))
                                for name, value in headers.items()]
        if body is not None:
            fields += [(b"Content-Type", b"application/json"), (b"Content-Length", b"%d" % len(body))]
        send = self._h11.send
        head = send(h11.Request(method=method.encode("ascii"), target=self._prefix + path.encode("ascii"),
                                headers=fields))
        return head + send(h11.Data(data=body)) + send(_END) if body else head + send(_END)

    def receive(self, data: bytes) -> Reply | None:
        conn = self._h11
        try:
            conn.receive_data(data)
            while True:
                event = conn.next_event()
                kind = type(event)
                if kind is h11.Data:
                    self._body.append(event.data)
                elif kind is h11.Response:
                    self._status = event.status_code
                    self._headers = {name.decode("latin-1").lower(): value.decode("latin-1")
                                     for name, value in event.headers.raw_items()}  # cheaper than iterating
                elif kind is h11.EndOfMessage:
                    reply = Reply(self._status, self._headers, b"".join(self._body))
                    self._reset_reply()
                    return reply
                elif event is h11.NEED_DATA:
                    return None
                # else an InformationalResponse (1xx): the final reply follows
        except h11.RemoteProtocolError as exc:
            raise ProtocolError(str(exc)) from exc

    def next_cycle(self) -> bool:
        """Ready the connection for the next request; False when it must be closed instead."""
        conn = self._h11
        if conn.our_state is h11.DONE and conn.their_state is h11.DONE and conn.trailing_data == (b"", False):
            conn.start_next_cycle()
            return True
        return False


class SyncConnection:
    """A blocking connection, opened on first use and reopened after a failure."""

    def __init__(self, endpoint: Endpoint, timeout: float) -> None:
        self.endpoint, self.timeout = endpoint, timeout
        self._sock: socket.socket | None = None
        self._exchange = _Exchange(endpoint)

    def request(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> Reply:
        """One request and its reply. Raises ``ConnectionLost``, or ``TimeoutError`` after ``timeout``."""
        reused = self._sock is not None
        sock = self._sock or self._open()
        exchange = self._exchange
        got_bytes = False
        try:
            sock.sendall(exchange.request(method, path, body, headers))
            reply = None
            while reply is None:
                data = sock.recv(_READ_SIZE)
                got_bytes = got_bytes or bool(data)
                reply = exchange.receive(data)
        except (OSError, ProtocolError) as exc:
            self.close()
            if isinstance(exc, TimeoutError):
                raise
            raise ConnectionLost(f"{type(exc).__name__}: {exc}", maybe_processed=got_bytes or not reused) from exc
        except BaseException:  # cancelled or interrupted mid-exchange: the socket cannot be reused
            self.close()
            raise
        if not exchange.next_cycle():
            self.close()
        return reply

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock, self._exchange = None, _Exchange(self.endpoint)

    def _open(self) -> socket.socket:
        try:
            sock = socket.create_connection((self.endpoint.host, self.endpoint.port), timeout=self.timeout)
        except OSError as exc:  # refused, unreachable, or no answer within the timeout
            raise ConnectionLost(f"cannot connect to {self.endpoint.host_header}: {exc}",
                                 maybe_processed=False) from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.endpoint.ssl_context is not None:
            sock = self.endpoint.ssl_context.wrap_socket(sock, server_hostname=self.endpoint.host)
        self._sock = sock
        return sock


class AsyncConnection:
    """The asyncio twin of ``SyncConnection``; one request at a time."""

    def __init__(self, endpoint: Endpoint, timeout: float) -> None:
        self.endpoint, self.timeout = endpoint, timeout
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._exchange = _Exchange(endpoint)
        self._lock = asyncio.Lock()  # two tasks sharing one env must not interleave on the socket

    async def request(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> Reply:
        async with self._lock:
            return await self._request(method, path, body, headers)

    async def _request(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> Reply:
        reused = self._streams is not None
        got_bytes = False
        try:
            async with asyncio.timeout(self.timeout):
                reader, writer = self._streams or await self._open()
                exchange = self._exchange
                writer.write(exchange.request(method, path, body, headers))
                await writer.drain()
                reply = None
                while reply is None:
                    data = await reader.read(_READ_SIZE)
                    got_bytes = got_bytes or bool(data)
                    reply = exchange.receive(data)
        except (OSError, ProtocolError) as exc:
            self.close()
            if isinstance(exc, TimeoutError):
                raise
            raise ConnectionLost(f"{type(exc).__name__}: {exc}", maybe_processed=got_bytes or not reused) from exc
        except BaseException:  # cancelled or interrupted mid-exchange: the socket cannot be reused
            self.close()
            raise
        if not exchange.next_cycle():
            self.close()
        return reply

    def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
        self._streams, self._exchange = None, _Exchange(self.endpoint)

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        ssl_context = self.endpoint.ssl_context
        try:
            streams = await asyncio.open_connection(self.endpoint.host, self.endpoint.port, ssl=ssl_context,
                                                    server_hostname=self.endpoint.host if ssl_context else None,
                                                    limit=_READ_SIZE)
        except OSError as exc:
            raise ConnectionLost(f"cannot connect to {self.endpoint.host_header}: {exc}",
                                 maybe_processed=False) from exc
        sock = streams[1].get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._streams = streams
        return streams
