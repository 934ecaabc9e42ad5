"""A hostile HTTP server on 127.0.0.1 for the bounded-call tests: it drip-feeds, floods, hangs, nests.

Raw sockets (``socketserver``), so the tests control every byte and its timing. The route picks
the behaviour (any method, any path prefix; ``POST /v1/drip-body/chat/completions`` drips):

* ``ok``            a chat completion whose content ends in ``Score: 7`` (and a Search-R1 result);
* ``drip-body``     headers at once, then one body byte every ``DRIP_S`` seconds;
* ``drip-headers``  the status line, then one header byte every ``DRIP_S`` seconds;
* ``hang``          reads the request and never answers;
* ``huge``          a 200 MB body without Content-Length (read until close), in 64 KiB writes;
* ``huge-declared`` the same with ``Content-Length: 200000000``;
* ``nested``        a 200 body of ``"[" * 200_000``.

Every dripping or hanging reply stops after ``GIVE_UP_S`` seconds, so that a client without a
total deadline is slow (the regression tests fail) rather than stuck forever. ``sent[route]``
counts the body bytes the server managed to write before the client hung up.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import time
from collections import Counter

DRIP_S = 0.05
GIVE_UP_S = 20.0
HUGE = 200_000_000
_CHUNK = b"x" * 65536
_COMPLETION = json.dumps({"id": "x", "choices": [{"index": 0, "message": {
    "role": "assistant", "content": "Agrees.\nScore: 7"}}], "result": [[]]}).encode()


class HostileServer:
    def __init__(self) -> None:
        self.keep_alive = False
        """Whether ``ok`` replies keep the connection open (off: no pooled socket outlives a test)."""
        self.sent: Counter[str] = Counter()
        self.requests: Counter[str] = Counter()
        self.connections = 0
        self._stop = threading.Event()
        server = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                try:
                    server._serve(self.request)
                except OSError:
                    pass  # the client hung up: that is what the tests want

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> HostileServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- behaviours ------------------------------------------------------------------------
    def _serve(self, sock: socket.socket) -> None:
        self.connections += 1
        while True:  # keep-alive: one request after another on the connection
            route = self._read_request(sock)
            if route is None:
                return
            self.requests[route] += 1
            if not self._answer(sock, route):
                return

    def _answer(self, sock: socket.socket, route: str) -> bool:
        """Send the route's reply; True when the connection may carry another request."""
        if route == "ok":
            keep = self.keep_alive
            sock.sendall(_head(200, len(_COMPLETION), close=not keep) + _COMPLETION)
            return keep
        if route == "nested":
            body = b"[" * 200_000
            sock.sendall(_head(200, len(body), close=True) + body)
            return False
        if route == "drip-body":
            sock.sendall(_head(200, 1_000_000))
            self._drip(sock, route, b" ")
        elif route == "drip-headers":
            sock.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            self._drip(sock, route, b"a")
        elif route == "hang":
            self._stop.wait(GIVE_UP_S)
        elif route in ("huge", "huge-declared"):
            declared = HUGE if route == "huge-declared" else None
            sock.sendall(_head(200, declared, close=declared is None))
            while self.sent[route] < HUGE and not self._stop.is_set():
                sock.sendall(_CHUNK)
                self.sent[route] += len(_CHUNK)
        else:
            sock.sendall(_head(404, 0))
            return True
        return False

    def _drip(self, sock: socket.socket, route: str, byte: bytes) -> None:
        end = time.monotonic() + GIVE_UP_S
        while time.monotonic() < end and not self._stop.is_set():
            sock.sendall(byte)
            self.sent[route] += 1
            time.sleep(DRIP_S)

    @staticmethod
    def _read_request(sock: socket.socket) -> str | None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        length = next((int(v) for k, _, v in (line.partition(":") for line in lines[1:])
                       if k.strip().lower() == "content-length"), 0)
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                return None
            rest += chunk
        path = lines[0].split(" ")[1]
        return next((part for part in path.split("/") if part and part != "v1"), "ok")


def _head(status: int, length: int | None, *, close: bool = False) -> bytes:
    lines = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Not Found'}", "Content-Type: application/json"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()
