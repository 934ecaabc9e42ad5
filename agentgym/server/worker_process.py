"""A worker process of the env server: it hosts sessions' envs and runs their calls one at a time.

    python -m agentgym.server.worker_process          # started by agentgym.server.worker_pool, never by hand

The server talks to it over stdin/stdout in frames: 8 bytes (header length, body length, both
big-endian u32), a JSON header, then the body. Nothing but JSON crosses (no pickle): requests
carry their arguments as JSON, replies carry the HTTP reply body ready to send. Each call runs
under an interval timer (SIGALRM) that interrupts it at its deadline; an interrupted env is
closed, as its state is unknown. A call that ignores the signal (stuck in C code) is the
server's to stop: it kills the whole process.

One slow call must not hold up the other sessions of the worker (a hung retriever, a slow
judge): calls run on the main thread, but once the main thread's call has taken longer than
``_SLOW_S``, a lookout thread reads the next requests itself and runs them on overflow threads
until the main thread is free again. An overflow call's deadline interrupts it with an
asynchronous exception (``PyThreadState_SetAsyncExc``), which lands at its next bytecode: a call
blocked in I/O stops when the I/O returns, one stuck in C code is again the server's to kill.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import signal
import struct
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO

from agentgym.server._alarm import Alarm
from agentgym.server._signals import ApiError, Interrupted

__all__ = ["write_frame", "pack_frame", "main"]

_HEAD = struct.Struct(">II")
_SLOW_S = 0.05
"""How long the main thread's call may run before the next requests go to overflow threads."""
_TICK_S = 0.01
_OVERFLOW_THREADS = 32
_DIRECT_BYTES = 1 << 20


def pack_frame(header: dict[str, Any], body: bytes = b"", *, size: int | None = None) -> bytes:
    """A frame; with ``size``, only its head, for a body of that size sent after it."""
    head = json.dumps(header, separators=(",", ":")).encode()
    return _HEAD.pack(len(head), len(body) if size is None else size) + head + body


def write_frame(stream: BinaryIO, header: dict[str, Any], body: bytes = b"") -> None:
    stream.write(pack_frame(header, body))
    stream.flush()


class _Requests:
    """The request channel, read in large chunks, so that the worker knows when it is about to wait
    for the next request: the moment to flush the replies it wrote (one system call for many)."""

    def __init__(self, fd: int) -> None:
        self.fd, self._buffer, self._start = fd, bytearray(), 0

    def frame(self, before_waiting: Any = None) -> tuple[dict[str, Any], bytes] | None:
        """The next request, or None at the end of the stream; ``before_waiting()`` runs before a read blocks."""
        while (end := self._frame_end()) is None:
            if (large := self._large_head()) is not None:
                return self._read_large(*large, before_waiting)
            if before_waiting is not None:
                before_waiting()
            data = os.read(self.fd, 1 << 20)
            if not data:
                return None
            if self._start:  # compact what was consumed before growing
                del self._buffer[:self._start]
                self._start = 0
            self._buffer += data
        head_len, _ = _HEAD.unpack_from(self._buffer, self._start)
        head_end = self._start + _HEAD.size + head_len
        with memoryview(self._buffer) as view:
            header, body = json.loads(bytes(view[self._start + _HEAD.size:head_end])), bytes(view[head_end:end])
        self._start = end
        if self._start == len(self._buffer):  # all consumed: let a large request's bytes go now
            self._buffer, self._start = bytearray(), 0
        return header, body

    def _large_head(self) -> tuple[dict[str, Any], int] | None:
        # A large body (an 8 MB step) is read straight into a buffer of its size: held once, not grown.
        if len(self._buffer) - self._start < _HEAD.size:
            return None
        head_len, body_len = _HEAD.unpack_from(self._buffer, self._start)
        head_end = self._start + _HEAD.size + head_len
        if body_len <= _DIRECT_BYTES or head_end > len(self._buffer):
            return None
        header = json.loads(bytes(self._buffer[self._start + _HEAD.size:head_end]))
        self._start = head_end
        return header, body_len

    def _read_large(self, header: dict[str, Any], size: int,
                    before_waiting: Any) -> tuple[dict[str, Any], bytearray] | None:
        body = bytearray(size)
        got = min(size, len(self._buffer) - self._start)
        body[:got] = self._buffer[self._start:self._start + got]
        self._buffer, self._start = self._buffer[self._start + got:], 0
        with memoryview(body) as view:
            while got < size:
                if before_waiting is not None:
                    before_waiting()
                n = os.readv(self.fd, [view[got:]])
                if not n:
                    return None
                got += n
        return header, body

    def _frame_end(self) -> int | None:
        if len(self._buffer) - self._start < _HEAD.size:
            return None
        head_len, body_len = _HEAD.unpack_from(self._buffer, self._start)
        end = self._start + _HEAD.size + head_len + body_len
        return end if end <= len(self._buffer) else None


class _Host:
    """The envs of this worker's sessions, by the server's key."""

    def __init__(self) -> None:
        from agentgym.server import jobs

        self.jobs = jobs
        self.envs: dict[str, Any] = {}
        self._alarm = Alarm()
        self._read_lock, self._write_lock, self._overflow_lock = threading.Lock(), threading.Lock(), threading.Lock()
        self._busy_since: float | None = None  # when the main thread's call began; None when it reads
        self._overflow: dict[int, list[Any]] = {}  # call id -> [deadline, thread ident, interrupted]
        self._pool = ThreadPoolExecutor(_OVERFLOW_THREADS, thread_name_prefix="agentgym-overflow",
                                        initializer=_alarm_to_main_thread)

    def serve(self, requests: _Requests, channel: BinaryIO) -> None:
        """Answer requests until the server closes the channel.

        The main thread's replies are written as they come but flushed (one system call for
        many) only when no other request is waiting, or by the lookout once a call runs long.
        """
        threading.Thread(target=self._lookout, args=(requests, channel), daemon=True).start()
        threading.Thread(target=self._deadlines, daemon=True).start()
        flush = lambda: self._flush(channel)  # noqa: E731
        while True:
            if not self._read_lock.acquire(blocking=False):  # the lookout is reading: it may wait long
                flush()
                self._read_lock.acquire()
            try:
                frame = requests.frame(before_waiting=flush)
            finally:
                self._read_lock.release()
            if frame is None:
                return
            self._busy_since = time.monotonic()
            try:
                reply_header, reply = self.handle(*frame, interrupt=self._alarm.run)
            finally:
                self._busy_since = None
            self._write(channel, frame[0]["id"], reply_header, reply, flush=False)

    def _write(self, channel: BinaryIO, call_id: int, header: dict[str, Any], body: bytes, *,
               flush: bool = True) -> None:
        with self._write_lock:
            channel.write(pack_frame({"id": call_id, **header}, body))
            if flush:
                channel.flush()

    def _flush(self, channel: BinaryIO) -> None:
        with self._write_lock:
            channel.flush()

    def _lookout(self, requests: _Requests, channel: BinaryIO) -> None:
        # While the main thread is stuck in a slow call, read the next requests and run them elsewhere.
        _alarm_to_main_thread()
        while True:
            time.sleep(_TICK_S)
            since = self._busy_since
            if since is None or time.monotonic() - since < _SLOW_S:
                continue
            self._flush(channel)  # the replies the main thread wrote before this slow call
            if not self._read_lock.acquire(blocking=False):
                continue
            try:
                frame = requests.frame()
            finally:
                self._read_lock.release()
            if frame is None:
                return
            self._pool.submit(self._run_overflow, channel, *frame)

    def _run_overflow(self, channel: BinaryIO, header: dict[str, Any], body: bytes) -> None:
        call_id = header["id"]
        reply_header, reply = self.handle(header, body, interrupt=lambda timeout, fn, *args: self._guarded(
            call_id, timeout, fn, *args))
        self._unguard(call_id)  # again: the interruption may have landed inside the first
        self._write(channel, call_id, reply_header, reply)

    def _guarded(self, call_id: int, timeout: float, fn: Any, *args: Any) -> Any:
        entry = [time.monotonic() + timeout, threading.get_ident(), False]
        with self._overflow_lock:
            self._overflow[call_id] = entry
        try:
            return fn(*args)
        finally:
            self._unguard(call_id)

    def _unguard(self, call_id: int) -> None:
        # After this, no interruption is pending for this thread: none is set once the entry is gone,
        # and one set before it is cleared here (or has already been raised).
        with self._overflow_lock:
            entry = self._overflow.pop(call_id, None)
            if entry is not None and entry[2]:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(entry[1]), None)

    def _deadlines(self) -> None:
        _alarm_to_main_thread()
        while True:
            time.sleep(_TICK_S)
            now = time.monotonic()
            with self._overflow_lock:
                for entry in self._overflow.values():
                    if entry[0] <= now and not entry[2]:
                        entry[2] = True
                        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(entry[1]),
                                                                   ctypes.py_object(Interrupted))

    def handle(self, header: dict[str, Any], body: bytes, interrupt: Any) -> tuple[dict[str, Any], bytes]:
        """Run one request under its deadline (``interrupt(timeout, fn, *args)``); the reply header and body."""
        key, op, timeout = header["key"], header["op"], float(header["timeout"])
        try:
            args = json.loads(body) if body else {}
        except ValueError as exc:  # a step body forwarded unread (e.g. not UTF-8): the server checked its shape only
            reply = self.jobs.error_body("InvalidBody", f"the body is not JSON: {str(exc)[:200]}")
            return {"status": 422, "seconds": 0.0}, self.jobs.encode(reply)
        start = time.perf_counter()
        try:
            status, reply = interrupt(timeout, self._dispatch, op, key, args)
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
            except ApiError as exc:
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
        if op == "tasks":
            return jobs.tasks_reply(env, args["start"], args["stop"], args["max_bytes"], args["split"])
        return jobs.step_reply(env, args["action"])


def _alarm_to_main_thread() -> None:
    # SIGALRM is the main thread's deadline: a call there that blocks it (as C code may) must stay
    # uninterrupted, for the server to kill, rather than have another thread take the signal.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})


def main() -> None:
    # The channel is the original stdout; whatever envs print goes to stderr instead.
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    from agentgym.server.budget import return_large_blocks

    return_large_blocks()  # an 8 MB request's memory goes back to the system once it is answered
    requests = _Requests(sys.stdin.fileno())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C goes to the server, which stops us
    hello = requests.frame()
    if hello is None:
        return
    import agentgym  # noqa: F401  (registers the env ids)

    for module in hello[0].get("imports", []):
        importlib.import_module(module)
    host = _Host()
    write_frame(channel, {"ready": True, "pid": os.getpid()})
    host.serve(requests, channel)


if __name__ == "__main__":
    main()
