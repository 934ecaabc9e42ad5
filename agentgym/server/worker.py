"""A worker process of the env server: it hosts sessions' envs and runs their calls one at a time.

    python -m agentgym.server.worker          # started by agentgym.server.workers, never by hand

The server talks to it over stdin/stdout in frames: 8 bytes (header length, body length, both
big-endian u32), a JSON header, then the body. Nothing but JSON crosses (no pickle): requests
carry their arguments as JSON, replies carry the HTTP reply body ready to send. Each call runs
under an interval timer (SIGALRM) that interrupts it at its deadline; an interrupted env is
closed, as its state is unknown. A call that ignores the signal (stuck in C code) is the
server's to stop: it kills the whole process.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import struct
import sys
import time
from typing import Any, BinaryIO

from agentgym.server._alarm import Alarm, Interrupted

__all__ = ["write_frame", "read_frame", "pack_frame", "main"]

_HEAD = struct.Struct(">II")


def pack_frame(header: dict[str, Any], body: bytes = b"") -> bytes:
    head = json.dumps(header, separators=(",", ":")).encode()
    return _HEAD.pack(len(head), len(body)) + head + body


def write_frame(stream: BinaryIO, header: dict[str, Any], body: bytes = b"") -> None:
    stream.write(pack_frame(header, body))
    stream.flush()


def read_frame(stream: BinaryIO) -> tuple[dict[str, Any], bytes] | None:
    """The next frame, or None at the end of the stream."""
    prefix = _read_exactly(stream, _HEAD.size)
    if prefix is None:
        return None
    head_len, body_len = _HEAD.unpack(prefix)
    head, body = _read_exactly(stream, head_len), _read_exactly(stream, body_len)
    if head is None or body is None:
        return None
    return json.loads(head), body


def _read_exactly(stream: BinaryIO, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


class _Host:
    """The envs of this worker's sessions, by the server's key."""

    def __init__(self) -> None:
        from agentgym.server import jobs

        self.jobs = jobs
        self.envs: dict[str, Any] = {}
        self._alarm = Alarm()

    def handle(self, header: dict[str, Any], body: bytes) -> tuple[dict[str, Any], bytes]:
        key, op, timeout = header["key"], header["op"], float(header["timeout"])
        try:
            args = json.loads(body) if body else {}
        except ValueError as exc:  # a step body forwarded unread (e.g. not UTF-8): the server checked its shape only
            reply = self.jobs.error_body("InvalidBody", f"the body is not JSON: {str(exc)[:200]}")
            return {"status": 422, "seconds": 0.0}, self.jobs.encode(reply)
        start = time.perf_counter()
        try:
            status, reply = self._alarm.run(timeout, self._dispatch, op, key, args)
            extra: dict[str, Any] = {}
        except Interrupted:
            env = self.envs.pop(key, None)
            if env is not None:
                self.jobs.close_quietly(env)
            status, reply, extra = 504, b"", {"timed_out": True}
        return {"status": status, "seconds": time.perf_counter() - start, **extra}, reply

    def _dispatch(self, op: str, key: str, args: dict[str, Any]) -> tuple[int, bytes]:
        jobs = self.jobs
        if op == "make":
            try:
                env, description = jobs.make_env(args["env_id"], args["kwargs"])
            except jobs._ApiError as exc:
                return exc.status, exc.body()
            self.envs[key] = env
            return 201, jobs.encode(description)
        if op == "close":
            env = self.envs.pop(key, None)
            if env is not None:
                jobs.close_quietly(env)
            return 200, b"{}"
        env = self.envs.get(key)
        if env is None:
            return 404, jobs.encode(jobs.error_body("SessionNotFound", "the session's env is gone"))
        if op == "reset":
            return jobs.reset_reply(env, args.get("seed"), args.get("options"))
        return jobs.step_reply(env, args["action"])


def main() -> None:
    # The channel is the original stdout; whatever envs print goes to stderr instead.
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    requests = sys.stdin.buffer
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C goes to the server, which stops us
    hello = read_frame(requests)
    if hello is None:
        return
    import agentgym  # noqa: F401  (registers the env ids)

    for module in hello[0].get("imports", []):
        importlib.import_module(module)
    host = _Host()
    write_frame(channel, {"ready": True, "pid": os.getpid()})
    while (frame := read_frame(requests)) is not None:
        header, body = frame
        reply_header, reply = host.handle(header, body)
        write_frame(channel, {"id": header["id"], **reply_header}, reply)


if __name__ == "__main__":
    main()
