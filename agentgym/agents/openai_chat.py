"""A chat agent for any OpenAI-compatible ``/chat/completions`` endpoint (vLLM, SGLang, OpenAI, ...).

    agent = OpenAIChatAgent(ChatAgentConfig(base_url="http://127.0.0.1:8000/v1", model="Qwen/Qwen3-8B"),
                            tools=function_tools(env))
    log = await play_episode(env, agent, seed=0)

The agent keeps the conversation: the first observation is the user turn, each reply the
assistant turn, each next observation a ``tool`` message answering the model's tool call (or a
user turn when the reply had none). With ``tools`` (the env's function schemas, JSON action
format) the model may answer with native tool calls; the agent turns the first one into the
env's ``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` action. Rate limits (429),
server errors (5xx), timeouts and dropped connections are retried with jittered exponential
backoff (``Retry-After`` honoured); other failures raise ``ModelEndpointError``. Each request has
a total deadline (``timeout_s``: connecting, sending and the whole reply, however slowly it comes)
and a cap on the reply's size (``max_response_bytes``, not retried).
"""

from __future__ import annotations

import json
import os
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from agentgym import _http
from agentgym.agents.chat_client import RETRYABLE_STATUSES, ChatClient, RetryPolicy
from agentgym.errors import ModelEndpointError

__all__ = ["ChatAgentConfig", "OpenAIChatAgent", "RETRYABLE_STATUSES", "API_KEY_ENV_VAR"]

API_KEY_ENV_VAR = "OPENAI_API_KEY"


class ChatAgentConfig(BaseModel):
    """How to reach the model and sample from it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["openai"] = "openai"
    base_url: str
    """The API root, e.g. ``http://127.0.0.1:8000/v1`` (requests go to ``{base_url}/chat/completions``)."""
    model: str
    api_key: SecretStr | None = None
    """Default: ``$OPENAI_API_KEY``; local servers usually need none."""
    temperature: float = 0.0
    top_p: float | None = None
    max_tokens: int | None = Field(None, ge=1)
    system_prompt: str | None = None
    native_tools: bool = True
    """Send the env's tool schemas as ``tools`` (JSON action format). Off for servers without
    tool-call parsing: the schemas are in the first observation anyway."""
    extra_body: dict[str, Any] = Field(default_factory=dict)
    """Merged into every request, e.g. ``{"chat_template_kwargs": {"enable_thinking": false}}``."""
    timeout_s: float = Field(300.0, gt=0, le=24 * 3600)
    """Seconds per request, in total: connecting, sending and the whole reply (not per read)."""
    max_retries: int = Field(6, ge=0, le=20)
    backoff_s: float = Field(1.0, ge=0)
    max_backoff_s: float = Field(60.0, ge=0)
    max_response_bytes: int = Field(32 << 20, ge=1024, le=1 << 30)
    """Largest reply read; a longer one raises ``ModelEndpointError`` (not retried)."""

    def identity(self) -> dict[str, Any]:
        """The fields that decide the agent's behaviour (not how it is reached): for run manifests."""
        return self.model_dump(mode="json", include={"kind", "model", "temperature", "top_p", "max_tokens",
                                                     "system_prompt", "native_tools", "extra_body"})


class OpenAIChatAgent:
    """A multi-turn chat agent; one instance plays one episode at a time (``reset`` between)."""

    def __init__(self, config: ChatAgentConfig, *, tools: list[dict[str, Any]] | None = None,
                 client: httpx.AsyncClient | None = None) -> None:
        self.config = config
        self.tools = tools if config.native_tools and tools else None
        self._client = client
        self._owns_client = client is None
        key = config.api_key.get_secret_value() if config.api_key else os.environ.get(API_KEY_ENV_VAR)
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._url = config.base_url.rstrip("/") + "/chat/completions"
        policy = RetryPolicy(config.max_retries, config.backoff_s, config.max_backoff_s)
        self._chat = ChatClient(self._url, policy=policy, deadline_s=config.timeout_s,
                                max_bytes=config.max_response_bytes, headers=self._headers, where=f"{self._url}: ",
                                count=self._count)
        self.messages: list[dict[str, Any]] = []
        self.usage: dict[str, int] = {}
        self._tool_call_id: str | None = None
        self._seed: int | None = None
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        """Start a new conversation; ``seed`` (the episode's sample seed) goes with each request when sampling
        (``temperature > 0``), so the group's samples differ from each other and a rerun draws the same ones."""
        self._seed = seed
        self.messages = [{"role": "system", "content": self.config.system_prompt}] if self.config.system_prompt else []
        self.usage = {"requests": 0, "retries": 0, "prompt_tokens": 0, "completion_tokens": 0}
        self._tool_call_id = None

    async def act(self, observation: str, info: dict[str, Any]) -> str:
        if self._tool_call_id is not None:
            self.messages.append({"role": "tool", "tool_call_id": self._tool_call_id, "content": observation})
            self._tool_call_id = None
        else:
            self.messages.append({"role": "user", "content": observation})
        message = await self._complete()
        return self._take(message)

    def _count(self, name: str) -> None:
        self.usage[name] += 1

    async def aclose(self) -> None:
        if self._client is not None and self._owns_client:
            await self._client.aclose()
            self._client = None

    # -- the request -------------------------------------------------------------------------
    def _payload(self) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.config.model, "messages": self.messages,
                                   "temperature": self.config.temperature}
        if self.config.top_p is not None:
            payload["top_p"] = self.config.top_p
        if self.config.max_tokens is not None:
            payload["max_tokens"] = self.config.max_tokens
        if self._seed is not None and self.config.temperature > 0:
            payload["seed"] = self._seed
        if self.tools:
            payload["tools"] = self.tools
        return {**payload, **self.config.extra_body}

    async def _complete(self) -> dict[str, Any]:
        if self._client is None:
            self._client = httpx.AsyncClient()
        return await self._chat.acomplete(self._client, self._payload(), self._read)

    def _read(self, response: _http.Reply) -> dict[str, Any]:
        try:
            body = response.json()
            message = body["choices"][0]["message"]
            if not isinstance(message, dict):
                raise TypeError("message is not an object")
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ModelEndpointError(f"{self._url} sent a reply that is not a chat completion ({exc}): "
                                     f"{response.text[:300]}", status=200) from None
        usage = body.get("usage") or {}
        for key in ("prompt_tokens", "completion_tokens"):
            if isinstance(usage.get(key), int):
                self.usage[key] += usage[key]
        return message

    # -- the reply ---------------------------------------------------------------------------
    def _take(self, message: dict[str, Any]) -> str:
        """Record the assistant turn; return it as the env's action text."""
        content = message.get("content") or ""
        calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
        if not calls:
            self.messages.append({"role": "assistant", "content": content})
            return content
        call = calls[0]  # the env takes one action per turn; the history keeps only the one acted on
        function = call.get("function") or {}
        self._tool_call_id = str(call.get("id") or f"call_{len(self.messages)}")
        self.messages.append({"role": "assistant", "content": content or None, "tool_calls": [
            {"id": self._tool_call_id, "type": "function", "function": function}]})
        return _tool_call_action(function.get("name"), function.get("arguments"))


def _tool_call_action(name: Any, arguments: Any) -> str:
    if isinstance(arguments, str):  # the API sends arguments as a JSON string; keep it raw if it is not JSON
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            pass
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + "</tool_call>"
