"""The MCP front door: an env's tools as MCP tools, one episode per MCP session.

    agentgym mcp TravelPlanner-v0 --presets presets.yaml        # stdio: an MCP client starts it
    agentgym mcp SearchQA-v0 --transport http --port 8001       # streamable HTTP at /mcp, bearer tokens

Built on the official ``mcp`` SDK (``pip install 'agentgym-rl[mcp]'``). A client calls
``start_episode`` (a preset, seed, reset options and client options, all checked at the same
trust boundary as ``agentgym serve``), gets the task, then calls the env's own tools (each a
step of the env in its JSON action format) and the finishing tool (``submit_plan`` for
TravelPlanner, ``answer`` otherwise), whose result carries the reward and the evaluation.
Env calls run where ``agentgym serve`` runs them (worker processes by default), under its
limits and deadlines: the door sits on the same core (``agentgym.server.core.EnvServer``).

An episode belongs to its MCP session: the stdio connection, or the ``Mcp-Session-Id`` of the
HTTP transport. MCP's 2026-07-28 revision has no sessions on HTTP, so the HTTP server advertises
only the handshake-era versions and the SDK's clients connect with a session.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from agentgym._toolbox import clip, is_int
from agentgym.errors import ConfigError, DependencyNotInstalled
from agentgym.remote.protocol import ResetReply, StepReply
from agentgym.server._signals import ApiError
from agentgym.server.config import ServerConfig, takes_config
from agentgym.server.core import EnvServer
from agentgym.server.sessions import Session

try:
    import mcp_types as types
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken
    from mcp.server.lowlevel import Server
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
except ImportError:  # pragma: no cover - the message is the point
    raise DependencyNotInstalled("the MCP front door needs mcp; pip install 'agentgym-rl[mcp]'") from None

__all__ = ["McpFrontDoor", "create_mcp_app", "run_stdio", "START_TOOL"]

START_TOOL = "start_episode"
_STDIO = "stdio"
_FINISH = {"TravelPlanner-v0": ("submit_plan", "plan", "The plan: a JSON list of days, each with the day, "
                                "current_city, transportation, breakfast, attraction, lunch, dinner and "
                                "accommodation fields, as the task describes.")}
_ANSWER = ("answer", "answer", "The final answer, as short as the task asks.")


@dataclass
class _Held:
    """The server session an MCP session plays its one episode in, and that episode's tools."""

    session: Session
    tools: frozenset[str]
    over: bool = False


class McpFrontDoor:
    """One env id's episodes behind an MCP ``Server`` (``self.mcp``)."""

    def __init__(self, server: EnvServer, env_id: str) -> None:
        if env_id not in server.env_ids:
            raise ConfigError("env_id", env_id, list(server.env_ids))
        self.server, self.env_id = server, env_id
        self.finish_name, self._finish_param, self._finish_text = _FINISH.get(env_id, _ANSWER)
        self._episodes: dict[tuple[str, str], _Held] = {}
        self._starting: set[tuple[str, str]] = set()
        self._env_tools: list[dict[str, Any]] | None = None
        self.mcp: Server = Server("agentgym", instructions=f"Play one {env_id} episode per session: call "
                                  f"{START_TOOL} for the task, use the tools, then {self.finish_name}.",
                                  on_list_tools=self._list_tools, on_call_tool=self._call_tool)

    def require_sessions(self) -> None:
        """Over HTTP, episodes need sessions, which MCP's 2026-07-28 revision lacks: advertise only the
        handshake versions, so that clients fall back to the initialize handshake (as they do for other
        stateful servers). A stdio connection is a session in either revision."""
        self.mcp.add_request_handler("server/discover", types.RequestParams, self._discover)

    # -- MCP handlers ------------------------------------------------------------------------
    async def _discover(self, ctx: Any, params: Any) -> types.DiscoverResult:
        return types.DiscoverResult(supported_versions=list(HANDSHAKE_PROTOCOL_VERSIONS),
                                    capabilities=self.mcp.get_capabilities(protocol_version=ctx.protocol_version))

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[self._start_tool(), *map(_mcp_tool, await self._schemas()),
                                            self._finish_tool()])

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        key = _episode_key(ctx)
        if key is None:
            return _error("this server plays one episode per MCP session; connect with a session "
                          "(the initialize handshake; MCP's 2026-07-28 revision has no sessions)")
        arguments = dict(params.arguments or {})
        try:
            if params.name == START_TOOL:
                return await self._start(key, arguments)
            return await self._act(key, params.name, arguments)
        except ApiError as exc:
            return _refused(exc)

    # -- episodes ----------------------------------------------------------------------------
    async def _start(self, key: tuple[str, str], arguments: dict[str, Any]) -> types.CallToolResult:
        if key in self._episodes or key in self._starting:
            return _error("this MCP session has its episode already; open a new session for another")
        unknown = sorted(set(arguments) - {"preset", "seed", "options", "kwargs"})
        if unknown:
            return _error(f"{START_TOOL} takes preset, seed, options and kwargs; not {', '.join(unknown)}")
        seed = arguments.get("seed")
        if seed is not None and not is_int(seed):
            return _error(f"seed must be an integer, not {clip(repr(seed), 160)}")
        self._prune()
        self._starting.add(key)
        try:
            kwargs = {**_object(arguments, "kwargs"), "action_format": "json"}
            session = await self.server.open_session(key[0], self.env_id, arguments.get("preset"), kwargs)
            try:
                reply = await self.server.reset_session(session, seed, _object(arguments, "options") or None)
                reset = reply.read(ResetReply)
            except BaseException:  # nothing was played: the client may start again, with other arguments
                self.server.discard(session, "client")
                raise
            tools = frozenset(t["function"]["name"] for t in session.description.get("tools") or ())
            self._episodes[key] = _Held(session, tools)
        finally:
            self._starting.discard(key)
        return types.CallToolResult(content=[_text(reset.observation)],
                                    structured_content={"info": reset.info, "tools": sorted(tools)})

    async def _act(self, key: tuple[str, str], name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        episode = self._episodes.get(key)
        if episode is None:
            return _error(f"no episode yet: call {START_TOOL} first")
        if episode.over:
            return _error("this session's episode has ended; open a new MCP session for another")
        if name == self.finish_name:
            answer = arguments.get(self._finish_param)
            if not isinstance(answer, str):
                return _error(f"{name} takes {self._finish_param!r}, a string")
            action = f"<answer>{answer}</answer>"
        elif name in episode.tools:
            action = "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"
        else:
            return _error(f"unknown tool {name[:100]!r}; this episode's tools: "
                          f"{', '.join(sorted(episode.tools | {START_TOOL, self.finish_name}))}")
        reply = await self.server.step_session(episode.session, action)
        try:
            step = reply.read(StepReply)
        except ApiError as exc:
            return self._ended(key, _refused(exc))
        if step.terminated or step.truncated:
            episode.over = True
            await self.server.close_session(episode.session)
        return types.CallToolResult(content=[_text(step.observation)], structured_content={
            "reward": step.reward, "terminated": step.terminated, "truncated": step.truncated, "info": step.info})

    def _ended(self, key: tuple[str, str], result: types.CallToolResult) -> types.CallToolResult:
        # A failed step (the env raised, or overran its deadline) leaves its state unknown: the episode is over.
        episode = self._episodes.get(key)
        if episode is not None:
            episode.over = True
            self.server.discard(episode.session, "client")
        return result

    def _prune(self) -> None:
        # Sessions that idled out (no DELETE) leave their entries: keep the table bounded.
        if len(self._episodes) > 2 * self.server.config.max_sessions:
            for key, episode in list(self._episodes.items()):
                if episode.over or episode.session not in self.server.pool:
                    del self._episodes[key]

    async def end(self, owner: str, session_id: str) -> None:
        """The MCP session ended (the client's DELETE): close its episode's env now."""
        episode = self._episodes.pop((owner, session_id), None)
        if episode is not None and not episode.over:
            await self.server.close_session(episode.session)

    # -- tools -------------------------------------------------------------------------------
    async def _schemas(self) -> list[dict[str, Any]]:
        # The env's tool schemas, from one probe env of the default preset (built once).
        if self._env_tools is None:
            probe = await self.server.open_session("mcp-probe", self.env_id, None, {"action_format": "json"})
            self._env_tools = list(probe.description.get("tools") or ())
            await self.server.close_session(probe)
        return self._env_tools

    def _start_tool(self) -> types.Tool:
        presets = self.server.boundary.preset_names(self.env_id)
        properties: dict[str, Any] = {
            "preset": {"type": "string", "description": "One of the operator's presets (default: the first)."},
            "seed": {"type": "integer", "description": "Seeds the task draw and the env."},
            "options": {"type": "object", "description": "Reset options, e.g. {\"task_index\": 3}."},
            "kwargs": {"type": "object", "description": "Env options a client may set, e.g. {\"max_turns\": 20}."},
        }
        if presets:
            properties["preset"]["enum"] = presets
        return types.Tool(name=START_TOOL, description=f"Start this session's {self.env_id} episode; returns the "
                          "task.", input_schema={"type": "object", "properties": properties,
                                                 "additionalProperties": False})

    def _finish_tool(self) -> types.Tool:
        return types.Tool(name=self.finish_name, description="Submit and end the episode; returns the reward and "
                          "the report.", input_schema={
                              "type": "object", "required": [self._finish_param], "additionalProperties": False,
                              "properties": {self._finish_param: {"type": "string", "description": self._finish_text}}})


@takes_config
def create_mcp_app(config: ServerConfig, env_id: str, *, host: str = "127.0.0.1") -> Any:
    """The streamable HTTP app (endpoint ``/mcp``), behind the same bearer tokens as ``serve``."""
    from starlette.applications import Starlette
    from starlette.routing import Mount

    server = EnvServer(config)
    door = McpFrontDoor(server, env_id)
    door.require_sessions()
    inner = door.mcp.streamable_http_app(host=host, max_request_body_size=config.max_request_bytes,
                                         session_idle_timeout=config.session_ttl_s,
                                         max_sessions=config.max_sessions)

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        async with server.lifespan(app), door.mcp.session_manager.run():
            yield

    app = Starlette(routes=[Mount("/", app=_BearerAuth(inner, door))], lifespan=lifespan)
    app.state.server, app.state.door = server, door
    return app


@takes_config
async def run_stdio(config: ServerConfig, env_id: str) -> None:
    """Serve one MCP client over this process's stdin and stdout (its episodes end with it)."""
    from mcp.server.stdio import stdio_server

    server = EnvServer(config)
    door = McpFrontDoor(server, env_id)
    async with server.lifespan(None), stdio_server() as (read, write):
        await door.mcp.run(read, write, door.mcp.create_initialization_options())


class _BearerAuth:
    """ASGI middleware: the env server's bearer tokens in front of the MCP endpoint, and each token's
    share of MCP sessions.

    The token's owner reaches the SDK as the request's authenticated user, so the SDK binds each
    session id to the token that opened it: another token's GET, POST or DELETE with that id gets
    the SDK's 404 ``Session not found`` and the session goes on. A request that would open a
    session (no ``Mcp-Session-Id``) is refused beyond the token's share (``per_client_limit``,
    429) or the server's ``max_sessions`` (503), counting sessions being opened as well.
    """

    def __init__(self, app: Any, door: McpFrontDoor) -> None:
        self.app, self.door = app, door
        self._opening: Counter[str] = Counter()  # requests without a session id under way, per owner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        owner = self.door.server.owner_of(headers.get("authorization", ""))
        if owner is None:
            body = json.dumps({"error": {"type": "Unauthorized", "message": "a valid 'Authorization: Bearer "
                                         "<token>' header is required"}}).encode()
            return await _send_json(send, 401, body, (b"www-authenticate", b"Bearer"), (b"connection", b"close"))
        scope["agentgym.owner"] = owner
        scope["user"] = AuthenticatedUser(AccessToken(token="", client_id=owner, scopes=[]))
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            refusal = self._refusal(owner)
            if refusal is not None:
                return await _send_json(send, *refusal)
            return await self._open(owner, scope, receive, send)
        await self.app(scope, receive, send)
        if scope["method"] == "DELETE":
            await self.door.end(owner, session_id)  # keyed by owner: another token's DELETE ends nothing
        return None

    async def _open(self, owner: str, scope: dict[str, Any], receive: Any, send: Any) -> None:
        # Counted as opening until its reply starts: by then the SDK has the session in its table.
        self._opening[owner] += 1
        counted = True

        def done() -> None:
            nonlocal counted
            if counted:
                counted = False
                self._opening[owner] -= 1
                if self._opening[owner] <= 0:
                    del self._opening[owner]

        async def replying(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                done()
            await send(message)

        try:
            await self.app(scope, receive, replying)
        finally:
            done()

    def _refusal(self, owner: str) -> tuple[int, bytes, tuple[bytes, bytes]] | None:
        """Why ``owner`` may not open another session now (status, JSON-RPC error body, header); None: it may."""
        owners = self.door.mcp.session_manager._session_owners  # mcp 2.3.0: session id -> its opener
        config = self.door.server.config
        share = config.per_client_limit
        if sum(o["client_id"] == owner for o in owners.values()) + self._opening[owner] >= share:
            message = (f"this token has its share of {share} open MCP sessions (max_sessions_per_client); end one "
                       "(DELETE) or wait for an idle one to expire")
            return 429, _rpc_error(message), (b"retry-after", b"1")
        if len(owners) + sum(self._opening.values()) >= config.max_sessions:
            message = f"the server's {config.max_sessions} MCP sessions are open (max_sessions); retry shortly"
            return 503, _rpc_error(message), (b"retry-after", b"1")
        return None


async def _send_json(send: Any, status: int, body: bytes, *headers: tuple[bytes, bytes]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


def _rpc_error(message: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": types.INVALID_REQUEST,
                                                               "message": message}}).encode()


def _episode_key(ctx: Any) -> tuple[str, str] | None:
    request = getattr(ctx, "request", None)
    if request is None:  # stdio: the connection is the session
        return (_STDIO, _STDIO)
    session_id = request.headers.get("mcp-session-id")
    owner = request.scope.get("agentgym.owner")
    return (owner, session_id) if session_id and owner else None


def _mcp_tool(schema: dict[str, Any]) -> types.Tool:
    function = schema["function"]
    return types.Tool(name=function["name"], description=function.get("description"),
                      input_schema=function.get("parameters") or {"type": "object"})


def _object(arguments: dict[str, Any], name: str) -> dict[str, Any]:
    value = arguments.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ApiError("ConfigError", f"{name} must be an object", field=name)
    return value


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[_text(message)], is_error=True)


def _refused(exc: ApiError) -> types.CallToolResult:
    return _error(f"{exc.kind}: {exc.message}")
