"""uvicorn as the env server runs it: with a header-read timeout.

uvicorn times out idle keep-alive connections, but not a client that opens a connection and
sends its request headers slowly, or never: each such connection is held forever (slowloris).
``HeaderTimeout`` protocols close a connection whose request headers are not complete within
``header_timeout_s`` of the connection opening, or of the request's first byte.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["uvicorn_config"]


class _HeaderDeadline:
    """Mixed into a uvicorn HTTP protocol: a timer from the first byte until the headers end."""

    header_timeout_s = 10.0
    _header_timer: asyncio.TimerHandle | None = None

    def _start_header_timer(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._header_timed_out)

    def _stop_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timed_out(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            self.transport.close()


def _httptools_protocol(timeout: float) -> type:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class HeaderTimeoutHttpTools(_HeaderDeadline, HttpToolsProtocol):
        header_timeout_s = timeout

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._start_header_timer()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._start_header_timer()

        def on_headers_complete(self) -> None:
            self._stop_header_timer()
            super().on_headers_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_header_timer()
            super().connection_lost(exc)

    return HeaderTimeoutHttpTools


def _h11_protocol(timeout: float) -> type:
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderTimeoutH11(_HeaderDeadline, H11Protocol):
        header_timeout_s = timeout

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._start_header_timer()

        def data_received(self, data: bytes) -> None:
            if self.cycle is None or self.cycle.response_complete:  # bytes of a new request
                self._start_header_timer()
            super().data_received(data)
            if self.cycle is not None and not self.cycle.response_complete:  # its headers were parsed
                self._stop_header_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_header_timer()
            super().connection_lost(exc)

    return HeaderTimeoutH11


def http_protocol(header_timeout_s: float) -> type:
    """The HTTP protocol class: httptools' when installed (as uvicorn's ``auto`` picks), else h11's."""
    try:
        import httptools  # noqa: F401
    except ImportError:
        return _h11_protocol(header_timeout_s)
    return _httptools_protocol(header_timeout_s)


def uvicorn_config(app: Any, *, header_timeout_s: float, **options: Any) -> Any:
    """A ``uvicorn.Config`` for the env server (no proxy headers: the server never uses the client's address)."""
    import uvicorn

    options.setdefault("access_log", False)
    return uvicorn.Config(app, http=http_protocol(header_timeout_s), proxy_headers=False, **options)
