"""A local chat-completions server that plays a scripted policy: for tests and offline demos.

    stub = ChatStub(replay_policy(travelplanner_gold_scripts({"action_format": "json"}, 10)))
    with LiveServer(stub.app()) as server:          # agentgym.server.live_server
        config = ChatAgentConfig(base_url=server.url + "/v1", model="stub")
        stub.inject(Fault(status=429), Fault(delay_s=2.0))   # the next two requests misbehave

It speaks the ``POST /v1/chat/completions`` subset agents use (messages, tools, tool calls,
usage, ``stream``) and ``GET /v1/models``; every request body is kept in ``stub.requests``. Stop
strings (``stop``) end a reply as vLLM does: at the first one, kept only with
``include_stop_str_in_output``, reported as ``finish_reason: "stop"`` with ``stop_reason`` the string.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentgym._deprecated import module_aliases
from agentgym.errors import DependencyNotInstalled

__all__ = ["ChatStub", "Fault", "Policy", "replay_policy", "travelplanner_gold_scripts"]

Policy = Callable[[list[dict[str, Any]], "list[dict[str, Any]] | None"], dict[str, Any]]
"""``(messages, tools) -> assistant message`` (``{"content": ...}`` and/or ``{"tool_calls": [...]}``)."""


@dataclass(frozen=True)
class Fault:
    """How the stub misbehaves on one request: wait ``delay_s``, then fail with ``status`` if set."""

    status: int | None = None
    delay_s: float = 0.0
    retry_after: str | None = None


class ChatStub:
    """The endpoint's state: the policy, queued faults, and the requests received."""

    def __init__(self, policy: Policy, *, model: str = "stub") -> None:
        self.policy, self.model = policy, model
        self.requests: list[dict[str, Any]] = []
        self._faults: deque[Fault] = deque()
        self._ids = itertools.count(1)

    def inject(self, *faults: Fault) -> None:
        """Apply these faults to the next requests, one each, in order."""
        self._faults.extend(faults)

    def app(self) -> Any:
        try:
            from starlette.applications import Starlette
            from starlette.requests import ClientDisconnect, Request
            from starlette.responses import JSONResponse, Response, StreamingResponse
            from starlette.routing import Route
        except ImportError:
            raise DependencyNotInstalled("the chat stub needs starlette: pip install 'agentgym-rl[server]'") from None

        async def complete(request: Request) -> Response:
            try:
                payload = await request.json()
            except ClientDisconnect:  # the client went away (e.g. killed): nobody to answer
                return Response(status_code=499)
            self.requests.append(payload)
            fault = self._faults.popleft() if self._faults else None
            if fault is not None and fault.delay_s:
                await asyncio.sleep(fault.delay_s)
            if fault is not None and fault.status is not None:
                headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else None
                return JSONResponse({"error": {"message": f"injected fault {fault.status}", "code": fault.status}},
                                    status_code=fault.status, headers=headers)
            completion = self._completion(payload)
            if payload.get("stream"):
                return StreamingResponse(_chunks(completion, payload), media_type="text/event-stream")
            return JSONResponse(completion)

        async def models(request: Request) -> JSONResponse:
            return JSONResponse({"object": "list", "data": [{"id": self.model, "object": "model"}]})

        return Starlette(routes=[Route("/v1/chat/completions", complete, methods=["POST"]),
                                 Route("/v1/models", models, methods=["GET"])])

    def _completion(self, payload: dict[str, Any]) -> dict[str, Any]:
        message = {"role": "assistant", "content": None, **self.policy(payload["messages"], payload.get("tools"))}
        stop_reason = None
        if isinstance(message.get("content"), str) and payload.get("stop"):
            message["content"], stop_reason = _stop_at(message["content"], payload)
        prompt_chars = sum(len(str(m.get("content") or "")) for m in payload["messages"])
        completion_chars = len(json.dumps(message))
        return {
            "id": f"chatcmpl-stub-{next(self._ids)}", "object": "chat.completion", "model": payload.get("model"),
            "choices": [{"index": 0, "message": message, "stop_reason": stop_reason,
                         "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            "usage": {"prompt_tokens": prompt_chars // 4, "completion_tokens": completion_chars // 4,
                      "total_tokens": (prompt_chars + completion_chars) // 4},
        }


def _stop_at(text: str, payload: dict[str, Any]) -> tuple[str, str | None]:
    """The reply up to its first stop string (kept with ``include_stop_str_in_output``), and the string."""
    stops = payload["stop"] if isinstance(payload["stop"], list) else [payload["stop"]]
    found = [(at, stop) for stop in stops if stop and (at := text.find(stop)) >= 0]
    if not found:
        return text, None
    at, stop = min(found)
    return text[: at + len(stop)] if payload.get("include_stop_str_in_output") else text[:at], stop


def _chunks(completion: dict[str, Any], payload: dict[str, Any]) -> Any:
    """The completion as server-sent chat-completion chunks: the message, the finish, usage, [DONE]."""
    choice = completion["choices"][0]
    base = {"id": completion["id"], "object": "chat.completion.chunk", "model": completion["model"]}
    message = {k: v for k, v in choice["message"].items() if v is not None}
    if "tool_calls" in message:
        message["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
    events = [{**base, "choices": [{"index": 0, "delta": message, "finish_reason": None}]},
              {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"],
                                    "stop_reason": choice["stop_reason"]}]}]
    if (payload.get("stream_options") or {}).get("include_usage"):
        events.append({**base, "choices": [], "usage": completion["usage"]})
    for event in events:
        yield f"data: {json.dumps(event)}\n\n"
    yield "data: [DONE]\n\n"


def replay_policy(scripts: Mapping[str, Sequence[str]], *, fallback: str = "GiveUp[no script for this task]") -> Policy:
    """Answer each conversation from the script keyed by its first user message.

    The k-th assistant turn gets the script's k-th action. When the request offers tools, an
    action written as ``<tool_call>{...}</tool_call>`` is sent as a native tool call instead.
    """

    def policy(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> dict[str, Any]:
        first = next((m.get("content") for m in messages if m.get("role") == "user"), None)
        script = scripts.get(first or "", ())
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        action = script[turn] if turn < len(script) else fallback
        if tools and action.startswith("<tool_call>") and action.endswith("</tool_call>"):
            call = json.loads(action[len("<tool_call>"):-len("</tool_call>")])
            return {"tool_calls": [{"id": f"call_{turn}", "type": "function", "function": {
                "name": call["name"], "arguments": json.dumps(call.get("arguments", {}))}}]}
        return {"content": action}

    return policy


def travelplanner_gold_scripts(env_kwargs: Mapping[str, Any] | None = None,
                               count: int | None = None) -> dict[str, list[str]]:
    """First observation -> gold-plan actions, for the first ``count`` queries of a TravelPlanner env."""
    import gymnasium

    from agentgym.envs.travelplanner.scripted import gold_plan_actions

    env = gymnasium.make("TravelPlanner-v0", **dict(env_kwargs or {}))
    unwrapped = env.unwrapped
    scripts: dict[str, list[str]] = {}
    for index in range(len(unwrapped.tasks) if count is None else min(count, len(unwrapped.tasks))):
        observation, _ = env.reset(options={"task_index": index})
        if unwrapped.task.annotated_plan:
            scripts[observation] = gold_plan_actions(unwrapped.task, unwrapped.action_format,
                                                     tools=unwrapped.mode == "tool-use")
    env.close()
    return scripts


__getattr__ = module_aliases(__name__, {"travelplanner_reference_scripts": "travelplanner_gold_scripts"})
