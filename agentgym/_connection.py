"""One keep-alive HTTP/1.1 connection, blocking or asyncio, for the env server's JSON API.

A remote env sends one request at a time, so it needs a single persistent connection rather
than a pool: under 64 concurrent sessions this is several times cheaper per call than a pooled
async HTTP client (see ``benchmarks/bench_server.py``), which matters when the client shares
the machine with the env server. The reply parser handles what HTTP/1.1 servers and reverse
proxies send (Content-Length, chunked, close-delimited, 1xx). No proxy support; ``https`` URLs
use the default SSL context.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import urlsplit

from agentgym._version import __version__
from agentgym.errors import ConfigError

__all__ = ["Endpoint", "Reply", "ConnectionLost", "ProtocolError", "SyncConnection", "AsyncConnection"]

_READ_SIZE = 256 * 1024


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


class ProtocolError(Exception):
    """The server's bytes are not an HTTP/1.1 reply."""


_MAX_HEAD_BYTES = 64 * 1024


class _Exchange:
    """The sans-IO half: request bytes out, reply bytes in, and whether the connection is reusable.

    Replies are framed by Content-Length, chunked transfer encoding, or the end of the connection.
    """

    def __init__(self) -> None:
        self._clear()

    def _clear(self) -> None:
        self._buffer = bytearray()
        self._status: int | None = None
        self._headers: dict[str, str] = {}
        self._framing = ""
        self._length = 0
        self._chunks: list[bytes] = []
        self._eof = False
        self.reusable = True

    def request(self, endpoint: Endpoint, method: str, path: str, body: bytes | None,
                headers: dict[str, str]) -> bytes:
        lines = [f"{method} {endpoint.base_path}{path} HTTP/1.1", f"Host: {endpoint.host_header}",
                 f"User-Agent: agentgym/{__version__}", "Accept: application/json",
                 *(f"{k}: {v}" for k, v in headers.items())]
        if body is not None:
            lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        return head + body if body else head

    def receive(self, data: bytes) -> Reply | None:
        """Feed bytes (``b""`` at EOF); the reply once it is complete, else None."""
        self._eof = self._eof or not data
        self._buffer += data
        while self._status is None or self._status < 200:
            if not self._read_head():
                return None
        body = self._read_body()
        if body is None:
            return None
        return Reply(self._status, self._headers, body)

    def _read_head(self) -> bool:
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            if self._eof or len(self._buffer) > _MAX_HEAD_BYTES:
                raise ProtocolError("the connection closed before a complete reply head" if self._eof
                                    else "the reply head is too large")
            return False
        status_line, *header_lines = bytes(self._buffer[:end]).decode("latin-1").split("\r\n")
        del self._buffer[:end + 4]
        version, _, rest = status_line.partition(" ")
        if not version.startswith("HTTP/1.") or not rest[:3].isdigit():
            raise ProtocolError(f"not an HTTP/1.x status line: {status_line[:80]!r}")
        self._status = int(rest[:3])
        self._headers = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            self._headers[name.strip().lower()] = value.strip()
        self._frame(version)
        return True

    def _frame(self, version: str) -> None:
        connection = self._headers.get("connection", "").lower()
        self.reusable = "close" not in connection and (version == "HTTP/1.1" or "keep-alive" in connection)
        if self._status in (204, 304) or 100 <= self._status < 200:
            self._framing, self._length = "length", 0
        elif "chunked" in self._headers.get("transfer-encoding", "").lower():
            self._framing, self._chunks = "chunked", []
        elif self._headers.get("content-length", "").isdigit():
            self._framing, self._length = "length", int(self._headers["content-length"])
        else:
            self._framing, self.reusable = "close", False

    def _read_body(self) -> bytes | None:
        if self._framing == "length":
            if len(self._buffer) < self._length:
                if self._eof:
                    raise ProtocolError("the connection closed mid-reply")
                return None
            body = bytes(self._buffer[:self._length])
            del self._buffer[:self._length]
            return body
        if self._framing == "chunked":
            return self._read_chunks()
        return bytes(self._buffer) if self._eof else None

    def _read_chunks(self) -> bytes | None:
        while True:
            line_end = self._buffer.find(b"\r\n")
            if line_end < 0:
                break
            size_text = bytes(self._buffer[:line_end]).split(b";")[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise ProtocolError(f"bad chunk size {size_text[:20]!r}") from None
            if size == 0:  # the last chunk: skip any trailers, up to the blank line
                end = self._buffer.find(b"\r\n\r\n", line_end)
                if end < 0:
                    break
                del self._buffer[:end + 4]
                return b"".join(self._chunks)
            if len(self._buffer) < line_end + 2 + size + 2:
                break
            self._chunks.append(bytes(self._buffer[line_end + 2:line_end + 2 + size]))
            del self._buffer[:line_end + 2 + size + 2]
        if self._eof:
            raise ProtocolError("the connection closed mid-reply")
        return None

    def next_cycle(self) -> bool:
        """Ready the connection for the next request; False when it must be closed instead."""
        reusable = self.reusable and not self._buffer and not self._eof
        self._clear()
        return reusable


class SyncConnection:
    """A blocking connection, opened on first use and reopened after a failure."""

    def __init__(self, endpoint: Endpoint, timeout: float) -> None:
        self.endpoint, self.timeout = endpoint, timeout
        self._sock: socket.socket | None = None
        self._exchange = _Exchange()

    def request(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> Reply:
        """One request and its reply. Raises ``ConnectionLost``, or ``TimeoutError`` after ``timeout``."""
        reused = self._sock is not None
        sock = self._sock or self._open()
        got_bytes = False
        try:
            sock.sendall(self._exchange.request(self.endpoint, method, path, body, headers))
            reply = None
            while reply is None:
                data = sock.recv(_READ_SIZE)
                got_bytes = got_bytes or bool(data)
                reply = self._exchange.receive(data)
        except TimeoutError:
            self.close()
            raise
        except (OSError, ProtocolError) as exc:
            self.close()
            raise ConnectionLost(f"{type(exc).__name__}: {exc}", maybe_processed=got_bytes or not reused) from exc
        if not self._exchange.next_cycle():
            self.close()
        return reply

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock, self._exchange = None, _Exchange()

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
        self._exchange = _Exchange()
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
                writer.write(self._exchange.request(self.endpoint, method, path, body, headers))
                await writer.drain()
                reply = None
                while reply is None:
                    data = await reader.read(_READ_SIZE)
                    got_bytes = got_bytes or bool(data)
                    reply = self._exchange.receive(data)
        except TimeoutError:
            self.close()
            raise
        except (OSError, ProtocolError) as exc:
            self.close()
            raise ConnectionLost(f"{type(exc).__name__}: {exc}", maybe_processed=got_bytes or not reused) from exc
        if not self._exchange.next_cycle():
            self.close()
        return reply

    def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
        self._streams, self._exchange = None, _Exchange()

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
