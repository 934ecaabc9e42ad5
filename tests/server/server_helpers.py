"""Helpers and fixtures of the env server and client tests (tests/server and tests/remote: their conftests
put this folder on sys.path and import the fixtures)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sleepy_env

from agentgym.server import ServerConfig, create_app
from agentgym.server.live_server import LiveServer

TOKEN, OTHER_TOKEN = "token-alice", "token-bob"
SLEEPY = sleepy_env.ENV_ID


def settings(**fields: Any) -> ServerConfig:
    fields.setdefault("tokens", (TOKEN, OTHER_TOKEN))
    fields.setdefault("env_ids", ("TravelPlanner-v0", "SearchQA-v0", SLEEPY))
    return ServerConfig(**fields)


@pytest.fixture(scope="module")
def live_server() -> Iterator[LiveServer]:
    """One env server on a loopback socket for the module (two tokens, the default limits)."""
    with LiveServer(create_app(settings())) as server:
        yield server


@pytest.fixture
def serve() -> Iterator[Callable[..., LiveServer]]:
    """``serve(**settings)`` starts a server just for the test; all are stopped at its end."""
    started: list[LiveServer] = []

    def start(**fields: Any) -> LiveServer:
        server = LiveServer(create_app(settings(**fields))).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def auth(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def asgi(app: Any, coroutine_fn: Callable[[Any], Any]) -> Any:
    """Run ``coroutine_fn(client)`` against ``app`` in this (main) thread, without sockets."""
    import httpx

    async def main() -> Any:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://asgi") as client:
            return await coroutine_fn(client)

    return asyncio.run(main())


class DroppingProxy:
    """A TCP proxy to ``port`` that can lose the server's next reply: it forwards the request,
    waits for the reply, then closes the client's connection without passing the reply on."""

    def __init__(self, port: int) -> None:
        import socket
        import threading

        self.upstream = port
        self.drop_replies = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._threads: list[threading.Thread] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._closed = True
        self._listener.close()

    def _accept(self) -> None:
        import socket
        import threading

        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.upstream))
            threading.Thread(target=self._pipe, args=(client, server), daemon=True).start()

    def _pipe(self, client, server) -> None:
        # One request at a time, as RemoteEnv sends them: read it, forward it, relay (or drop) the reply.
        # h11 does the HTTP: one connection faces the client, the other the server.
        import h11

        facing_client, facing_server = h11.Connection(h11.SERVER), h11.Connection(h11.CLIENT)
        with client, server:
            while True:
                request = _read_message(facing_client, client)
                if request is None:
                    return
                server.sendall(b"".join(facing_server.send(event) for event in request))
                reply = _read_message(facing_server, server)
                if reply is None:
                    return
                if self.drop_replies > 0:
                    self.drop_replies -= 1
                    return  # both connections close: the reply is lost after the server acted
                client.sendall(b"".join(facing_client.send(event) for event in reply))
                for conn in (facing_client, facing_server):
                    if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                        return
                    conn.start_next_cycle()


def _read_message(conn, sock) -> list | None:
    """The h11 events of the next message (interim 1xx replies included), or None at EOF."""
    import h11

    events = []
    while not events or type(events[-1]) is not h11.EndOfMessage:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(sock.recv(1 << 16))
        elif type(event) is h11.ConnectionClosed:
            return None
        else:
            events.append(event)
    return events
