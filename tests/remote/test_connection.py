"""The keep-alive client connection over h11: replies as servers and proxies frame them, connections
reused or not as HTTP says, and failures mapped to ``ConnectionLost`` with the right ``maybe_processed``."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import h11
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgym.remote._connection import (AsyncConnection, ConnectionLost, Endpoint, ProtocolError, Reply, SyncConnection,
                                  _Exchange)
from agentgym.errors import ConfigError

BODY = b'{"a": [1]}\n'


def h11_reply(*events: h11.Event, http_10_client: bool = False) -> bytes:
    """The bytes an h11 server sends for ``events`` (after reading a GET)."""
    server = h11.Connection(h11.SERVER)
    server.receive_data(b"GET / HTTP/1.0\r\n\r\n" if http_10_client else b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    while type(server.next_event()) is not h11.EndOfMessage:
        pass
    return b"".join(server.send(event) for event in events)


LENGTH = h11_reply(h11.Response(status_code=200, headers=[("Content-Type", "application/json"),
                                                         ("Content-Length", str(len(BODY)))]),
                   h11.Data(data=BODY), h11.EndOfMessage())
CHUNKED = h11_reply(h11.Response(status_code=201, headers=[("Transfer-Encoding", "chunked")]),
                    h11.Data(data=BODY[:4]), h11.Data(data=BODY[4:]), h11.EndOfMessage(headers=[("X-Trailer", "yes")]))
CONTINUE = h11_reply(h11.InformationalResponse(status_code=100, headers=[])) + LENGTH


class ScriptedServer:
    """A loopback server answering each request with the next scripted reply: raw bytes, after which
    the server closes the connection when ``close`` is set. It records the requests (as h11 read them)
    and how many connections it accepted."""

    def __init__(self, *script: tuple[bytes, bool]) -> None:
        self.script = list(script)
        self.requests: list[tuple[h11.Request, bytes]] = []
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def close(self) -> None:
        self._listener.close()

    def _serve(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            with sock:
                while self.script and self._answer(sock):
                    pass

    def _answer(self, sock: socket.socket) -> bool:
        conn, request, body = h11.Connection(h11.SERVER), None, b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(sock.recv(65536))
            elif type(event) is h11.ConnectionClosed:
                return False
            elif type(event) is h11.Request:
                request = event
            elif type(event) is h11.Data:
                body += event.data
            elif type(event) is h11.EndOfMessage:
                break
        self.requests.append((request, body))
        raw, close = self.script.pop(0)
        sock.sendall(raw)
        return not close


@pytest.fixture(params=["sync", "async"])
def connect(request):
    """``connect(url, timeout)`` gives a ``send(method, path, body=None)``; closed at the end."""
    closers = []

    def make(url: str, timeout: float = 5.0):
        if request.param == "sync":
            conn = SyncConnection(Endpoint.parse(url), timeout)
            closers.append(conn.close)
            return lambda method, path, body=None: conn.request(method, path, body, {"Authorization": "Bearer t"})
        loop, conn = asyncio.new_event_loop(), AsyncConnection(Endpoint.parse(url), timeout)
        closers.extend([loop.close, conn.close])
        return lambda method, path, body=None: loop.run_until_complete(
            conn.request(method, path, body, {"Authorization": "Bearer t"}))

    yield make
    for close in reversed(closers):
        close()


def feed(raw: bytes, cuts: list[int]) -> tuple[Reply | None, _Exchange]:
    exchange = _Exchange(Endpoint.parse("http://x"))
    exchange.request("GET", "/", None, {})
    points = sorted({c % (len(raw) + 1) for c in cuts} | {len(raw)})
    start, reply = 0, None
    for point in points:
        if point > start and reply is None:
            reply = exchange.receive(raw[start:point])
        start = point
    return reply, exchange


@given(st.lists(st.integers(min_value=0, max_value=300), max_size=8))
def test_a_content_length_or_chunked_reply_is_assembled_however_the_reads_cut_it(cuts):
    reply, exchange = feed(LENGTH, cuts)
    assert reply == Reply(200, {"content-type": "application/json", "content-length": "11"}, BODY)
    assert type(reply.body) is bytes and exchange.next_cycle() is True
    reply, exchange = feed(CHUNKED, cuts)
    assert reply.status == 201 and reply.body == BODY and exchange.next_cycle() is True


def test_requests_carry_the_base_path_host_headers_and_body(connect):
    server = ScriptedServer((LENGTH, False), (LENGTH, False))
    send = connect(server.url + "/envs/")
    assert send("POST", "/v1/sessions", b'{"x":1}').body == BODY
    assert send("DELETE", "/v1/sessions/abc").status == 200
    (post, post_body), (delete, delete_body) = server.requests
    assert (post.method, post.target, post_body) == (b"POST", b"/envs/v1/sessions", b'{"x":1}')
    headers = dict(post.headers)
    assert headers[b"host"] == server.url.removeprefix("http://").encode()
    assert headers[b"authorization"] == b"Bearer t" and headers[b"content-length"] == b"7"
    assert headers[b"content-type"] == b"application/json" and headers[b"user-agent"].startswith(b"agentgym/")
    assert (delete.method, delete.target, delete_body) == (b"DELETE", b"/envs/v1/sessions/abc", b"")
    assert server.connections == 1  # kept alive
    server.close()


def test_chunked_replies_and_an_interim_100_continue_keep_the_connection(connect):
    server = ScriptedServer((CHUNKED, False), (CONTINUE, False), (LENGTH, False))
    send = connect(server.url)
    assert [send("GET", "/") for _ in range(3)] == [
        Reply(201, {"transfer-encoding": "chunked"}, BODY),
        Reply(200, {"content-type": "application/json", "content-length": "11"}, BODY),
        Reply(200, {"content-type": "application/json", "content-length": "11"}, BODY)]
    assert server.connections == 1
    server.close()


@pytest.mark.parametrize("raw, server_closes", [
    (b"HTTP/1.1 200 OK\r\n\r\nall of it", True),                                       # close-delimited
    (b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nConnection: close\r\n\r\nall of it", False),
    (b"HTTP/1.0 200 OK\r\nContent-Length: 9\r\n\r\nall of it", False),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nall of itJUNK", False),               # bytes past the reply
])
def test_replies_that_end_the_connection_are_read_whole_and_the_next_request_reconnects(connect, raw,
                                                                                       server_closes):
    server = ScriptedServer((raw, server_closes), (LENGTH, False))
    send = connect(server.url)
    assert send("GET", "/a").body == b"all of it"
    assert send("GET", "/b").body == BODY
    assert server.connections == 2
    server.close()


def test_a_reused_connection_the_server_closed_between_requests_was_not_processed(connect):
    server = ScriptedServer((LENGTH, True), (LENGTH, False))  # closes after a keep-alive reply
    send = connect(server.url)
    assert send("GET", "/a").status == 200
    time.sleep(0.05)
    with pytest.raises(ConnectionLost) as lost:
        send("POST", "/b", b"{}")
    assert lost.value.maybe_processed is False
    assert send("POST", "/b", b"{}").body == BODY  # a fresh connection
    assert [request.target for request, _ in server.requests] == [b"/a", b"/b"]
    server.close()


@pytest.mark.parametrize("raw", [
    b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort",                      # cut mid-body
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",            # cut mid-chunk
    b"HTTP/1.1 200 OK\r\nContent-Le",                                          # cut mid-head
    b"SSH-2.0-OpenSSH_9.6\r\n\r\n",                                           # not HTTP
    b"HTTP/1.1 2xx OK\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
])
def test_a_broken_or_truncated_reply_is_lost_and_maybe_processed(connect, raw):
    server = ScriptedServer((raw, True), (LENGTH, False))
    send = connect(server.url)
    with pytest.raises(ConnectionLost) as lost:
        send("POST", "/step", b"{}")
    assert lost.value.maybe_processed is True and isinstance(lost.value.__cause__, ProtocolError)
    assert send("GET", "/").status == 200
    server.close()


def test_no_server_is_lost_and_not_processed_and_silence_is_a_timeout(connect):
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with pytest.raises(ConnectionLost) as lost:
        connect(f"http://127.0.0.1:{port}")("GET", "/")
    assert lost.value.maybe_processed is False
    silent = socket.create_server(("127.0.0.1", 0))
    with silent, pytest.raises(TimeoutError):
        connect(f"http://127.0.0.1:{silent.getsockname()[1]}", timeout=0.2)("GET", "/")


def test_a_cancelled_request_does_not_leave_its_reply_for_the_next_one():
    head_only = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n"  # the body never comes
    server = ScriptedServer((head_only, False), (CHUNKED, False))
    conn = AsyncConnection(Endpoint.parse(server.url), 5.0)

    async def main() -> Reply:
        task = asyncio.ensure_future(conn.request("GET", "/slow", None, {}))
        while not server.requests:
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        try:
            return await conn.request("GET", "/next", None, {})
        finally:
            conn.close()

    assert asyncio.run(main()).status == 201
    assert server.connections == 2
    server.close()


def test_urls_are_checked():
    endpoint = Endpoint.parse("https://example.test/api/")
    assert (endpoint.port, endpoint.base_path, endpoint.host_header) == (443, "/api", "example.test:443")
    assert endpoint.ssl_context is not None and Endpoint.parse("http://h").ssl_context is None
    with pytest.raises(ConfigError):
        Endpoint.parse("ftp://example.test")
