"""The server core, driven without a door: every executor answers alike, replies read typed, and the
signals that cross its modules never pass for the public errors."""

from __future__ import annotations

import asyncio
import inspect
import json

import pytest
from server_helpers import SLEEPY, settings

from agentgym.remote.protocol import ResetReply, StepReply
from agentgym.server import EnvServer
from agentgym.server._signals import ApiError

PLANNER = "TravelPlanner-v0"


def _run(server: EnvServer, scenario) -> object:
    """``scenario()`` while the core's lifespan is up, then a moment for its workers' pipes to close."""
    async def main() -> object:
        async with server.lifespan(None):
            outcome = await scenario()
        await asyncio.sleep(0.2)
        return outcome

    return asyncio.run(main())


def _play(env_calls: str) -> list:
    """One scripted session on a core whose env calls run as ``env_calls`` says: what each call answers."""
    server = EnvServer(settings(env_calls=env_calls, env_workers=1))

    async def scenario() -> list:
        session = await server.open_session("alice", PLANNER, None, {"action_format": "react"})
        seen = [(await server.reset_session(session, seed=0, seq=1)).json()]
        body = json.dumps({"action": "CitySearch[Texas]", "seq": 2}).encode()
        first = await server.step_body(session, body)  # a step request's body, as the HTTP door passes it on
        seen += [first.json(), await server.step_body(session, body) == first]  # the retry: its stored reply
        seen.append((await server.step_session(session, "nonsense", seq=3)).read(StepReply).model_dump())
        with pytest.raises(ApiError) as skipped:
            await server.step_session(session, "x", seq=9)
        refused = await server.reset_session(session, options={"task_index": "x" * 70_000}, seq=4)
        with pytest.raises(ApiError) as refusal:
            refused.read(ResetReply)
        seen += [skipped.value.kind, refusal.value.kind, refusal.value.status, server.metrics.replayed]
        await server.close_session(session)
        with pytest.raises(ApiError) as gone:
            server.owned("alice", session.id)
        return [*seen, gone.value.kind, len(server.pool)]

    return _run(server, scenario)


def test_every_executor_answers_alike():
    """Worker processes (the body forwarded as it came) and in-process calls (the body read here)
    sit behind one interface: the same calls get the same replies, retries and refusals."""
    in_workers, in_process = _play("processes"), _play("auto")
    assert in_workers == in_process
    reset, step, replayed, nonsense, *rest = in_workers
    assert reset["info"]["turn"] == 0 and step["info"]["turn"] == 1 and replayed is True
    assert nonsense["info"]["error"]["code"] == "unparseable_action"
    assert rest == ["OutOfOrder", "ConfigError", 400, 1, "SessionNotFound", 0]


def test_an_overrun_closes_the_session_whichever_executor_ran_it():
    for env_calls in ("processes", "auto"):
        server = EnvServer(settings(env_calls=env_calls, env_workers=1, request_timeout_s=0.3))

        async def scenario() -> tuple[str, str, int]:
            session = await server.open_session("alice", SLEEPY, None, {})
            await server.reset_session(session)
            with pytest.raises(ApiError) as timed_out:
                await server.step_session(session, "spin 30")
            return timed_out.value.kind, str(timed_out.value), server.metrics.sessions_closed["timeout"]

        kind, message, closed = _run(server, scenario)
        assert (kind, closed) == ("Timeout", 1) and "interrupted and the session is closed" in message, env_calls


def test_no_signal_of_the_server_shares_a_name_with_a_public_error():
    """A private ``_WorkerLost`` sat beside the public ``WorkerLost``: one name for two things."""
    import importlib
    import pkgutil
    import warnings

    import agentgym.errors
    import agentgym.server

    public = {name.lower() for name in agentgym.errors.__all__}
    clashes = []
    for info in pkgutil.iter_modules(agentgym.server.__path__, "agentgym.server."):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", agentgym.AgentGymDeprecationWarning)  # old paths, kept a release
                module = importlib.import_module(info.name)
        except agentgym.errors.DependencyNotInstalled:  # an extra this machine lacks
            continue
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and issubclass(cls, BaseException) \
                    and name.lstrip("_").lower() in public:
                clashes.append(f"{module.__name__}.{name}")
    assert clashes == []
