"""Serve an ASGI app on a loopback port in a background thread: for tests, examples and benchmarks.

    with LiveServer(create_app(config)) as server:
        env = RemoteEnv(server.url, "TravelPlanner-v0")
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

from agentgym.errors import DependencyNotInstalled

__all__ = ["LiveServer"]


class LiveServer:
    """uvicorn on 127.0.0.1 and a port the OS picks (bound before the thread starts, so no race)."""

    def __init__(self, app: Any, *, lifespan: str = "on", startup_timeout_s: float = 30.0) -> None:
        try:
            import uvicorn
        except ImportError:
            raise DependencyNotInstalled("serving needs uvicorn: pip install 'agentgym-rl[server]'") from None
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.port: int = self._socket.getsockname()[1]
        from agentgym.server.http import uvicorn_config

        server_state = getattr(getattr(app, "state", None), "server", None)  # an env server's app
        limits = {} if server_state is None else {"header_timeout_s": server_state.config.header_timeout_s,
                                                  "ws_max_size": server_state.config.max_request_bytes}
        config = uvicorn_config(app, **{"header_timeout_s": 10.0, **limits}, log_level="warning", lifespan=lifespan,
                                timeout_graceful_shutdown=2)
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self._socket]},
                                        name=f"agentgym-live-server-{self.port}", daemon=True)
        self._startup_timeout_s = startup_timeout_s

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LiveServer:
        self._thread.start()
        deadline = time.monotonic() + self._startup_timeout_s
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self._socket.close()
                raise RuntimeError("the live server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=15)
        self._socket.close()

    def __enter__(self) -> LiveServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
