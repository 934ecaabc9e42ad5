"""Infrastructure that fails on purpose, for the tests of failed rollouts: a real HTTP retriever on
127.0.0.1 that drops connections, and a SearchQA env that raises.

* ``DroppingRetriever``: the Search-R1 ``/retrieve`` API over the small embedded world's BM25; it
  closes the connection without a reply for a query containing ``drop``, for every
  ``drop_every``-th request, or for the queries a hash picks (``drop_share`` of them: the same
  query always fails, whatever order concurrent requests arrive in);
* ``FlakySearchQA-v0``: ``SearchQA-v0`` whose step raises ``RuntimeError`` for an action containing
  ``crash``, on every ``crash_every``-th step of the process (a counter shared by its instances),
  or for the actions a hash picks (``crash_share`` of them).
"""

from __future__ import annotations

import itertools
import json
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import gymnasium

from agentgym.envs.searchqa.env import SearchQAEnv

ENV_ID = "FlakySearchQA-v0"


class FlakySearchQA(SearchQAEnv):
    """SearchQA that raises on ``crash`` actions, or on every ``crash_every``-th step."""

    _steps = itertools.count(1)
    _lock = threading.Lock()

    def __init__(self, *, crash_every: int | None = None, crash_share: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.crash_every, self.crash_share = crash_every, crash_share

    @classmethod
    def restart_count(cls) -> None:
        with cls._lock:
            cls._steps = itertools.count(1)

    def on_step(self, action: str) -> Any:
        with FlakySearchQA._lock:
            count = next(FlakySearchQA._steps)
        if "crash" in action or (self.crash_every and count % self.crash_every == 0) or picked(action, self.crash_share):
            raise RuntimeError("the env broke")
        return super().on_step(action)


if ENV_ID not in gymnasium.registry:
    gymnasium.register(ENV_ID, entry_point=f"{__name__}:FlakySearchQA")


def picked(text: str, share: float) -> bool:
    """Whether ``text`` is among the ``share`` of texts a fixed hash picks."""
    return share > 0 and zlib.crc32(text.encode()) % 1000 < share * 1000


class DroppingRetriever:
    """A loopback Search-R1 retriever that drops some requests (module docstring)."""

    def __init__(self, *, drop_every: int | None = None, drop_share: float = 0.0) -> None:
        self.backend = SearchQAEnv(synthetic_size="small").retriever
        self.drop_every, self.drop_share, self.requests, self.dropped = drop_every, drop_share, 0, 0
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                queries = [str(q) for q in body.get("queries", [])]
                with lock:
                    outer.requests += 1
                    drop = any("drop" in q or picked(q, outer.drop_share) for q in queries) or bool(
                        outer.drop_every and outer.requests % outer.drop_every == 0)
                    outer.dropped += drop
                if drop:  # hang up without a reply, as a crashed or overloaded server does
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                hits = [self._documents(q, int(body.get("topk", 3))) for q in queries]
                data = json.dumps({"result": hits}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _documents(self, query: str, k: int) -> list[dict[str, Any]]:
                return [{"document": hit.to_document(), "score": hit.score} for hit in outer.backend.search(query, k)]

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/retrieve"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
