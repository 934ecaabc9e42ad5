"""The env calls the server makes: build an env, reset it, step it, close it.

They run wherever the server's executor puts env calls (a worker process, a thread or the event
loop), so this module needs neither starlette nor an event loop. Replies are ``Reply``s (status,
JSON bytes), ready to send; errors an env raises on purpose keep their class name on the wire.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, NamedTuple, TypeVar

import gymnasium
from pydantic import BaseModel

from agentgym import errors
from agentgym._toolbox import clip
from agentgym.core.env import TextEnv, describe_env
from agentgym.core.tasks import task_field
from agentgym.remote.protocol import STATUS_OF, encode, error_body
from agentgym.server._signals import ApiError

__all__ = ["Reply", "make_env", "reset_reply", "step_reply", "tasks_reply", "close_quietly", "env_error",
           "error_reply"]

log = logging.getLogger("agentgym.server")
_MAKE_LOCK = threading.Lock()
_PASSED_THROUGH = ("ConfigError", "DataError", "ActionTypeError", "ResetNeeded", "DependencyNotInstalled")
_MESSAGE_CHARS = 2000
"""An env's message may quote what it was given: never echo megabytes back."""
TASK_BYTES = 64 << 10
"""The most one task's description takes in a reply (the size of one inline task a client may send)."""
_Model = TypeVar("_Model", bound=BaseModel)


class Reply(NamedTuple):
    """An env call's reply as the wire carries it: the HTTP door sends it as it is, the other doors read it."""

    status: int
    body: bytes

    def read(self, model: type[_Model]) -> _Model:
        """The reply as ``model`` (``ResetReply``, ``StepReply``): what a client over the wire would read,
        whichever executor ran the call. An error reply raises its ``ApiError``."""
        return model.model_validate(self.json())

    def json(self) -> Any:
        """The reply's JSON; an error reply raises its ``ApiError``."""
        if self.status >= 300:
            raise ApiError.of_reply(self.body)
        return json.loads(self.body)


def make_env(env_id: str, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The env and what a client needs to know about it (limits, action format, tool schemas)."""
    try:
        with _MAKE_LOCK:  # one construction at a time: a first one builds what envs share (agentgym._env_threads)
            env = _make(env_id, kwargs)
    except Exception as exc:
        kind, message, details = env_error(exc)
        raise ApiError(kind, message, **details) from None
    act, obs = env.action_space, env.observation_space
    if not (hasattr(act, "max_length") and hasattr(obs, "max_length")):
        close_quietly(env)
        raise ApiError("ConfigError", f"{env_id} is not a text env (its spaces are {act} and {obs})")
    inner = env.unwrapped  # a TextEnv describes itself; a text env of another kind is read by its attributes
    declared = inner.describe() if isinstance(inner, TextEnv) else describe_env(inner)
    # the outermost env's limits and modes: a wrapper may change them
    description = {**declared, "env_id": env_id, "max_action_chars": act.max_length,
                   "max_observation_chars": obs.max_length, "render_modes": list(env.metadata.get("render_modes", []))}
    return env, description


def _make(env_id: str, kwargs: dict[str, Any]) -> Any:
    # Clients send a scheduled reward's clock with each reset (the server has no run of its own):
    # the reward is the ShapeReward wrapper, which asks for a run length at reset, not at make.
    reward = kwargs.get("reward")
    if reward is None:
        return gymnasium.make(env_id, **kwargs)
    from agentgym.rewards import ShapeReward

    rest = {k: v for k, v in kwargs.items() if k not in ("reward", "total_steps")}
    return ShapeReward(gymnasium.make(env_id, **rest), reward, total_steps=kwargs.get("total_steps"))


def reset_reply(env: Any, seed: int | None, options: dict[str, Any] | None) -> Reply:
    try:
        observation, info = env.reset(seed=seed, options=options)
        return Reply(200, encode({"observation": observation, "info": info}))
    except Exception as exc:
        return error_reply(exc)


def step_reply(env: Any, action: str) -> Reply:
    try:
        observation, reward, terminated, truncated, info = env.step(action)
        return Reply(200, encode({"observation": observation, "reward": reward, "terminated": bool(terminated),
                                  "truncated": bool(truncated), "info": info}))
    except Exception as exc:
        return error_reply(exc)


def tasks_reply(env: Any, start: int | None, stop: int | None, max_bytes: int, split: str) -> Reply:
    """The env's tasks ``[start:stop]`` (slice rules) as ``{"num_tasks": n, "tasks": [...]}``: as many
    whole tasks as fit in ``max_bytes``, each the env's ``describe_task`` (what a client may read of
    it) with its ``index`` and ``split``. ``num_tasks`` is null for an env without a ``tasks`` list."""
    try:
        unwrapped = env.unwrapped
        tasks = getattr(unwrapped, "tasks", None)
        if not hasattr(tasks, "__len__") or not hasattr(tasks, "__getitem__"):
            return Reply(200, b'{"num_tasks":null,"tasks":[]}')
        describe = getattr(unwrapped, "describe_task", None) or _task_id
        rows, size = [], 0
        for index in range(len(tasks))[start:stop]:
            row = encode({**describe(tasks[index]), "index": index, "split": split})
            if len(row) > TASK_BYTES:
                row = encode({"id": clip(task_field(tasks[index], "id"), 200), "index": index, "split": split,
                              "clipped": f"the task's description is over {TASK_BYTES} bytes"})
            size += len(row) + 1
            if size > max_bytes:
                break
            rows.append(row)
        return Reply(200, b'{"num_tasks":%d,"tasks":[%s]}' % (len(tasks), b",".join(rows)))
    except Exception as exc:
        return error_reply(exc)


def _task_id(task: Any) -> dict[str, Any]:
    return {"id": task_field(task, "id")}


def close_quietly(env: Any) -> None:
    try:
        env.close()
    except Exception:  # closing is best effort: the session is gone either way
        log.warning("closing an env failed", exc_info=True)


def error_reply(exc: Exception) -> Reply:
    """The reply answering ``exc``."""
    kind, message, details = env_error(exc)
    return Reply(STATUS_OF[kind], encode(error_body(kind, message, **details)))


def env_error(exc: Exception) -> tuple[str, str, dict[str, Any]]:
    """The wire kind, message and details of an exception an env raised."""
    for name in _PASSED_THROUGH:
        if isinstance(exc, getattr(errors, name)):
            details = {k: _sendable(getattr(exc, k)) for k in ("field", "value", "allowed") if hasattr(exc, k)}
            return name, clip(str(exc), _MESSAGE_CHARS), details
    if isinstance(exc, gymnasium.error.ResetNeeded):  # gymnasium's OrderEnforcing: step before reset
        return "ResetNeeded", str(exc), {}
    if isinstance(exc, gymnasium.error.Error):  # e.g. an unknown env id
        return "ConfigError", clip(f"{type(exc).__name__}: {exc}", _MESSAGE_CHARS), {}
    if isinstance(exc, TypeError) and "argument" in str(exc):  # an unexpected constructor kwarg
        return "ConfigError", clip(f"TypeError: {exc}", _MESSAGE_CHARS), {}
    return "EnvFailed", clip(f"{type(exc).__name__}: {exc}", _MESSAGE_CHARS), {}


def _sendable(value: Any) -> Any:
    # An error's field, value or allowed as the wire can carry it: JSON within bounds, else its repr, clipped.
    try:
        text = encode(value)
    except (TypeError, ValueError):
        return clip(repr(value), 300)
    return value if len(text) <= _MESSAGE_CHARS else clip(repr(value), 300)
