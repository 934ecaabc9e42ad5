"""The OpenEnv front door: any agentgym env as an OpenEnv environment, served by OpenEnv's own server.

    agentgym openenv TravelPlanner-v0 --port 8002   # OpenEnv's /ws, /reset, /step, /state, /health, task routes

    from agentgym.server.openenv_app import AgentgymAction, AgentgymEnvClient
    async with AgentgymEnvClient(base_url="http://127.0.0.1:8002") as env:
        result = await env.reset(seed=0, split="validation", index=3)
        result = await env.step(AgentgymAction(text="CitySearch[Texas]"))

Needs ``pip install 'agentgym-rl[openenv]'`` (openenv 0.10; openenv-core 0.3, its previous
distribution, works too, without the task routes). Each OpenEnv session (one WebSocket) is one
session of the server core (``agentgym.server.core``), so env calls run where ``agentgym serve``
runs them (worker processes by default), under its limits and deadlines; a client picks among the operator's presets
and sets only the bounded options (``agentgym.server.boundary``), passed as ``reset`` arguments:
``preset``, ``env_kwargs``, ``options``, ``seed``, and ``split`` and ``index`` (a task of a split).
OpenEnv's protocol has no authentication: serve it on loopback or behind a proxy that checks tokens.

The environment is OpenEnv 0.10's ``TaskProvider``: ``/{env}/splits``, ``/tasks``, ``/num_tasks``,
``/task`` and ``/task_range`` list the splits the operator's config gives and their tasks, each
as its env describes it to clients, a bounded page per reply (the core's ``splits``: ``agentgym.server.splits``).

OpenEnv's HTTP routes build a fresh environment for each request and close it after, so HTTP
``/reset`` plays a reset and HTTP ``/step`` a one-step episode: it resets first, with the
request's ``seed``, ``options``, ``preset`` and ``env_kwargs`` (extra fields of OpenEnv's step
request), then steps. HTTP request bodies get ``agentgym serve``'s cap, pace and byte budget
(``max_request_bytes``: 413, 408, 429/503); WebSocket messages are capped at
``max_request_bytes`` by uvicorn. A refused option or a failed env call answers its status
(400 ``ConfigError``, 503 ``ServerFull``...) with ``{"detail": message, "error": {"type",
"message"}}``, over HTTP as its error message over WebSocket: never a 500 and a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from agentgym.errors import AgentGymError, ConfigError, DependencyNotInstalled
from agentgym.remote.protocol import STATUS_OF, ResetReply, StepReply
from agentgym.server._signals import ApiError
from agentgym.server.budget import read_request_body
from agentgym.server.config import ServerConfig, takes_config
from agentgym.server.core import ANONYMOUS, EnvServer
from agentgym.server.sessions import Session

try:
    from openenv.core import EnvClient
    from openenv.core.client_types import StepResult
    from openenv.core.env_server import Action, Environment, Observation, State, create_app
    from starlette.responses import JSONResponse
except ImportError:  # pragma: no cover - the message is the point
    raise DependencyNotInstalled("the OpenEnv front door needs openenv: pip install 'agentgym-rl[openenv]'") from None

__all__ = ["AgentgymAction", "AgentgymObservation", "AgentgymState", "AgentgymEnvironment", "AgentgymEnvClient",
           "create_openenv_app"]

_RESET_ARGS = ("seed", "episode_id", "preset", "env_kwargs", "options", "split", "index")
_Model = TypeVar("_Model", bound=BaseModel)


class AgentgymAction(Action):
    """One action: the text the env takes (a ReAct line, a ``<tool_call>``, an ``<answer>``...)."""

    text: str = Field(description="The action text, as the env's action format has it.")


class AgentgymObservation(Observation):
    """What the env answered: its text, its ``info`` dict, and whether the episode was truncated.

    ``done`` is ``terminated or truncated``, as OpenEnv has one flag; ``truncated`` tells them apart.
    """

    text: str = Field("", description="The observation text.")
    info: dict[str, Any] = Field(default_factory=dict, description="The env's step info (a plain dict).")
    truncated: bool = Field(False, description="The episode ended at its turn limit, not by the agent.")


class AgentgymState(State):
    """The session's env, preset and turn, besides OpenEnv's episode id and step count."""

    env_id: str | None = None
    preset: str | None = None


class AgentgymEnvironment(Environment[AgentgymAction, AgentgymObservation, AgentgymState]):
    """One OpenEnv session: a session of ``env_id`` on the server core, opened on the first ``reset``.

    It is OpenEnv's ``TaskProvider`` too (``list_splits``, ``num_tasks``, ``list_tasks``, ``get_task``,
    ``get_task_range``: the core's ``splits(env_id)``), and ``reset(split=, index=)`` plays that task.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, server: EnvServer, env_id: str) -> None:
        super().__init__()
        self.server, self.env_id = server, env_id
        self._session: Session | None = None
        self._config: tuple[str | None, str] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._state = AgentgymState(env_id=env_id)
        self._splits = server.splits(env_id)

    async def reset_async(self, seed: int | None = None, episode_id: str | None = None,
                          preset: str | None = None, env_kwargs: dict[str, Any] | None = None,
                          options: dict[str, Any] | None = None, split: str | None = None, index: int | None = None,
                          **unknown: Any) -> AgentgymObservation:
        if unknown:
            raise ConfigError("reset", sorted(unknown), list(_RESET_ARGS))
        preset, env_kwargs, options = self._splits.choose(split, index, preset, env_kwargs, options)
        config = (preset, json.dumps(env_kwargs, sort_keys=True))
        if self._session is None or config != self._config or self._session not in self.server.pool:
            self._drop()  # another preset or options: another env
            self._loop = asyncio.get_running_loop()
            self._session = await _as_client(self.server.open_session(ANONYMOUS, self.env_id, preset, env_kwargs))
            self._config = config
        reset = await _as_client(self.server.reset_session(self._session, seed, options), ResetReply)
        self._state = AgentgymState(episode_id=episode_id, step_count=0, env_id=self.env_id,
                                    preset=self._session.description.get("preset"))
        return AgentgymObservation(text=reset.observation, info=reset.info)

    async def step_async(self, action: AgentgymAction, timeout_s: float | None = None, request_id: str | None = None,
                         **reset_args: Any) -> AgentgymObservation:
        if self._session is None:  # OpenEnv's HTTP /step: a fresh environment, so a one-step episode
            await self.reset_async(**reset_args)
        elif reset_args:
            raise ConfigError("step", sorted(reset_args), "an action only: this session's episode is under way")
        step = await _as_client(self.server.step_session(self._session, action.text), StepReply)
        self._state.step_count += 1
        return AgentgymObservation(text=step.observation, info=step.info, reward=step.reward,
                                   done=step.terminated or step.truncated, truncated=step.truncated)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> AgentgymObservation:
        raise RuntimeError("AgentgymEnvironment runs on the server's event loop: OpenEnv calls reset_async")

    def step(self, action: AgentgymAction, timeout_s: float | None = None, **kwargs: Any) -> AgentgymObservation:
        raise RuntimeError("AgentgymEnvironment runs on the server's event loop: OpenEnv calls step_async")

    @property
    def state(self) -> AgentgymState:
        return self._state

    # -- OpenEnv's TaskProvider: its task routes call these on a fresh instance -------------------
    async def list_splits(self) -> list[dict[str, Any]]:
        """The splits whose tasks load: ``{"name", "type", "num_tasks"}``."""
        return await self._splits.listed()

    async def num_tasks(self, split: str) -> int:
        return await self._splits.count(split)

    async def list_tasks(self, split: str) -> list[dict[str, Any]]:
        """The split's first tasks, as many as fit in one reply (all of a small split): page on with
        ``get_task_range``."""
        return (await self._splits.page(split, 0, None))["tasks"]

    async def get_task(self, split: str, index: int) -> dict[str, Any]:
        if not isinstance(index, int) or index < 0:
            raise IndexError(index)
        tasks = (await self._splits.page(split, index, index + 1))["tasks"]
        if not tasks:
            raise IndexError(index)  # OpenEnv answers 400 "Invalid task index"
        return tasks[0]

    async def get_task_range(self, split: str, start: int | None = None,
                             stop: int | None = None) -> list[dict[str, Any]]:
        """The split's tasks ``[start:stop]`` (slice rules), as many as fit in one reply: a shorter list
        than asked for means "ask again from where it ends"."""
        return (await self._splits.page(split, start, stop))["tasks"]

    def close(self) -> None:
        # OpenEnv closes a session's environment from a thread: hand the session back on the loop.
        self._drop()

    def _drop(self) -> None:
        session, self._session = self._session, None
        if session is not None and self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.server.discard, session, "client")


class AgentgymEnvClient(EnvClient[AgentgymAction, AgentgymObservation, AgentgymState]):
    """OpenEnv's client for an agentgym environment (what every OpenEnv env package ships)."""

    def _step_payload(self, action: AgentgymAction) -> dict[str, Any]:
        return {"text": action.text}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[AgentgymObservation]:
        observation = AgentgymObservation(**payload.get("observation", {}), reward=payload.get("reward"),
                                          done=payload.get("done", False))
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> AgentgymState:
        return AgentgymState(**payload)


@takes_config
def create_openenv_app(config: ServerConfig, env_id: str) -> Any:
    """OpenEnv's FastAPI app for ``env_id``, its sessions on a server core (``EnvServer``) with ``config``.

    ``config.tokens`` are not checked (OpenEnv's protocol carries none); ``max_sessions`` caps
    OpenEnv's concurrent sessions too.
    """
    if not config.tokens and not config.insecure_no_auth:
        config = config.model_copy(update={"insecure_no_auth": True})
    server = EnvServer(config)
    if env_id not in server.env_ids:
        raise ConfigError("env_id", env_id, list(server.env_ids))
    # OpenEnv 0.10 publishes the state's fields in /schema; 0.3 takes no state class.
    state = {"state_cls": AgentgymState} if "state_cls" in inspect.signature(create_app).parameters else {}
    app = create_app(functools.partial(AgentgymEnvironment, server, env_id), AgentgymAction, AgentgymObservation,
                     env_name=env_name(env_id), max_concurrent_envs=config.max_sessions, **state)
    app.add_exception_handler(AgentGymError, _error_response)
    app.add_middleware(_BodyLimits, server=server)
    openenv_lifespan = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        async with server.lifespan(app), openenv_lifespan(app):
            yield

    app.router.lifespan_context = lifespan
    app.state.server = server
    return app


def env_name(env_id: str) -> str:
    """The env's name in OpenEnv's task routes (``/{env_name}/splits``): its id, a namespace's ``/`` as ``-``."""
    return env_id.replace("/", "-")


class _BodyLimits:
    """ASGI middleware: an HTTP request's body read as ``agentgym serve`` reads one (its size, pace,
    deadline and byte budget), then handed to OpenEnv's routes; a WebSocket closed quietly."""

    def __init__(self, app: Any, server: EnvServer) -> None:
        self.app, self.server = app, server

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            return await self.app(scope, receive, _closing_quietly(send))
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD"):
            return await self.app(scope, receive, send)
        hold = self.server.budget.hold(ANONYMOUS)
        try:
            body = await read_request_body(_chunks(receive), dict(scope["headers"]).get(b"content-length"), hold,
                                           self.server.config)
        except ApiError as refused:
            hold.release()
            headers = {**(refused.headers or {}), "Connection": "close"}  # the rest of the body goes unread
            return await JSONResponse(_error_json(refused.kind, refused.message), refused.status, headers)(
                scope, receive, send)
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        try:
            await self.app(scope, replay, send)
        finally:
            hold.release()


async def _as_client(call: Awaitable[Any], model: type[_Model] | None = None) -> Any:
    """Await a call of the core (its ``Reply`` read as ``model``); a refusal or an error reply raises its
    error as a client sees it, which OpenEnv's routes answer."""
    try:
        done = await call
        return done if model is None else done.read(model)
    except ApiError as exc:
        raise exc.client_error() from None


def _closing_quietly(send: Any) -> Any:
    """``send``, with a close of a WebSocket its client already closed made a no-op: OpenEnv 0.3 closes
    each session's socket after its client has (``EnvClient.close``), and uvicorn's refusal of that
    close (``ClientDisconnected``) reached the log as a 60-line "Exception in ASGI application"."""

    async def guarded(message: dict[str, Any]) -> None:
        try:
            await send(message)
        except OSError:  # uvicorn's ClientDisconnected: nothing is left to close
            if message["type"] != "websocket.close":
                raise

    return guarded


async def _chunks(receive: Any) -> AsyncIterator[bytes]:
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away: what came is all there is
            return
        yield message.get("body", b"")
        if not message.get("more_body"):
            return


def _error_response(request: Any, exc: AgentGymError) -> JSONResponse:
    kind = type(exc).__name__
    status = getattr(exc, "status", None) or STATUS_OF.get(kind, 500)
    return JSONResponse(_error_json(kind, str(exc)), status)


def _error_json(kind: str, message: str) -> dict[str, Any]:
    return {"detail": message, "error": {"type": kind, "message": message}}
