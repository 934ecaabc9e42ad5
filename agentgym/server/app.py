"""The HTTP door of the env server: the JSON API of ``agentgym.remote.protocol`` on the server core.

    app = create_app(ServerConfig(tokens=("s3cret",)))   # a Starlette app; uvicorn serves it

The core (``agentgym.server.core.EnvServer``: sessions, seq and replay, where env calls run) is
``app.state.server``; this module reads requests (their token, and their body within the size,
pace and byte budget: ``agentgym.server.budget``) and sends the core's replies as they are.
``docs/server.md`` describes the whole protocol.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel

from agentgym.errors import DependencyNotInstalled
from agentgym.remote.protocol import API_PREFIX, MAX_BATCH, CreateSession, ResetRequest, encode
from agentgym.server._fast import read_batch
from agentgym.server._signals import ApiError
from agentgym.server.budget import read_request_body
from agentgym.server.config import ServerConfig, takes_config
from agentgym.server.core import ANONYMOUS, EnvServer, decode_request
from agentgym.server.jobs import Reply
from agentgym.server.sessions import Session

try:
    from starlette.applications import Starlette
    from starlette.requests import ClientDisconnect, Request
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route
except ImportError:  # pragma: no cover - the message is the point
    raise DependencyNotInstalled("the env server needs starlette and uvicorn: pip install 'agentgym-rl[server]'") from None

__all__ = ["create_app", "EnvServer", "HttpDoor"]

log = logging.getLogger("agentgym.server")
_CLOSES = frozenset({"Unauthorized", "BadRequest", "RequestTooLarge", "RequestTimeout", "ServerBusy",
                     "TooManyRequests"})


class HttpDoor:
    """The routes of the JSON API, on ``server``."""

    def __init__(self, server: EnvServer) -> None:
        self.server = server

    def routes(self) -> list[Route]:
        sessions = f"{API_PREFIX}/sessions"
        table = [  # the hot routes first: the router tries them in order
            ("step", sessions + "/{session_id}/step", "POST", self.step),
            ("steps", f"{API_PREFIX}/steps", "POST", self.steps),
            ("reset", sessions + "/{session_id}/reset", "POST", self.reset),
            ("create", sessions, "POST", self.create),
            ("describe", sessions + "/{session_id}", "GET", self.describe),
            ("close", sessions + "/{session_id}", "DELETE", self.close),
            ("envs", f"{API_PREFIX}/envs", "GET", self.list_envs),
            ("health", "/health", "GET", self.health), ("metrics", "/metrics", "GET", self.metrics_text),
        ]
        return [Route(path, self._measured(name, handler), methods=[method]) for name, path, method, handler in table]

    async def health(self, request: Request) -> Response:
        return _json(200, encode(self.server.health()))

    async def metrics_text(self, request: Request) -> Response:
        self._owner(request)
        return PlainTextResponse(self.server.metrics_text(), media_type="text/plain; version=0.0.4")

    async def list_envs(self, request: Request) -> Response:
        self._owner(request)
        return _json(200, encode(self.server.served()))

    async def create(self, request: Request) -> Response:
        owner = self._owner(request)
        body = await self._read(request, CreateSession)
        session = await self.server.open_session(owner, body.env_id, body.preset, body.kwargs)
        return _json(201, encode(session.description))

    async def describe(self, request: Request) -> Response:
        return _json(200, encode(self._session(request).description))

    async def reset(self, request: Request) -> Response:
        session = self._session(request)
        body = await self._read(request, ResetRequest)
        return _json(*await self.server.reset_session(session, body.seed, body.options, body.seq))

    async def step(self, request: Request) -> Response:
        session = self._session(request)  # before the body: a stranger's is never read
        return _json(*await self.server.step_body(session, await self._body(request)))

    async def steps(self, request: Request) -> Response:
        """Many sessions' steps in one request (``AsyncRemoteEnv`` coalesces concurrent steps into one):
        ``[{"session_id", "step": <a step body>}]`` -> ``[[status, <its reply>], ...]``, in order."""
        owner = self._owner(request)
        items = read_batch(await self._body(request))
        if items is None:
            raise ApiError("InvalidBody", 'the body is not a batch: [{"session_id": str, "step": {"action": str, '
                           '"seq": int}}, ...]')
        if len(items) > MAX_BATCH:
            raise ApiError("InvalidBody", f"the batch has {len(items)} steps; the limit is {MAX_BATCH}")
        replies = await asyncio.gather(*(self._step_one(owner, session_id, body) for session_id, body in items))
        return _json(200, b"[" + b",".join(b"[%d,%s]" % reply for reply in replies) + b"]")

    async def _step_one(self, owner: str, session_id: str, body: bytes) -> Reply:
        try:
            return await self.server.step_body(self.server.owned(owner, session_id), body)
        except ApiError as exc:
            return Reply(exc.status, exc.body())

    async def close(self, request: Request) -> Response:
        await self.server.close_session(self._session(request))
        return _json(200, encode({"closed": True}))

    # -- plumbing ----------------------------------------------------------------------------
    def _measured(self, name: str, handler: Callable[[Request], Awaitable[Response]]) -> Callable:
        async def endpoint(request: Request) -> Response:
            start = time.perf_counter()
            try:
                response = await handler(request)
            except ApiError as exc:
                response = _error_response(exc)
            except ClientDisconnect:  # expected (a client gave up mid-body): one line, no traceback
                log.info("%s: the client disconnected before its body arrived", name)
                response = _json(400, b"", {"Connection": "close"})  # nobody is left to read it
            except Exception as exc:  # a server bug: report it, keep serving
                log.exception("%s failed", name)
                response = _error_response(ApiError("EnvFailed", f"internal error: {type(exc).__name__}"))
            finally:
                if (hold := request.scope.pop("agentgym.held", None)) is not None:
                    hold.release()  # the body's bytes and claim come back once the reply is ready
            self.server.metrics.observe(name, response.status_code, time.perf_counter() - start)
            return response

        return endpoint

    def _owner(self, request: Request) -> str:
        owner = self.server.owner_of(request.headers.get("authorization", ""))
        if owner is None:
            raise ApiError("Unauthorized", "a valid 'Authorization: Bearer <token>' header is required",
                           headers={"WWW-Authenticate": "Bearer"})
        request.scope["agentgym.owner"] = owner  # whose share of the body budget its body takes
        return owner

    def _session(self, request: Request) -> Session:
        return self.server.owned(self._owner(request), request.path_params["session_id"])

    async def _read(self, request: Request, model: type[BaseModel]) -> Any:
        return decode_request(await self._body(request), model)

    async def _body(self, request: Request) -> bytes | bytearray:
        """The request body, within the size limit, its pace and deadline, and its client's share and
        the server's budget of bytes in flight (``agentgym.server.budget``)."""
        owner = request.scope.get("agentgym.owner", ANONYMOUS)
        hold = request.scope["agentgym.held"] = self.server.budget.hold(owner)
        return await read_request_body(request.stream(), request.headers.get("content-length"), hold,
                                       self.server.config)


@takes_config
def create_app(config: ServerConfig | None = None, *, clock: Callable[[], float] = time.monotonic) -> Starlette:
    """The env server as a Starlette app; ``app.state.server`` is its ``EnvServer``.

    ``config`` must name tokens (or set ``insecure_no_auth``): an open server is never the default.
    """
    server = EnvServer(config or ServerConfig(), clock)
    app = Starlette(routes=HttpDoor(server).routes(), lifespan=server.lifespan)
    app.state.server = server
    return app


def _error_response(exc: ApiError) -> Response:
    headers = exc.headers
    if exc.kind in _CLOSES:  # the body may be unread (or still arriving): end the connection after the reply
        headers = {**(headers or {}), "Connection": "close"}
    return _json(exc.status, exc.body(), headers)


def _json(status: int, body: bytes, headers: dict[str, str] | None = None) -> Response:
    return Response(body, status_code=status, headers=headers, media_type="application/json")
