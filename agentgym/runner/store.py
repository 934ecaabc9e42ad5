"""The run folder: a manifest, and results appended one complete line per finished episode.

Crash safety rests on three rules. Each record is one ``write`` of one line on a file opened
with ``O_APPEND``, then ``fsync``: a kill leaves at most a torn last line, which the next open
cuts off. An episode is written once, when it has finished, so a killed run loses only the
episodes under way, and the rerun plays exactly those again. And one run at a time holds the
folder's lock, so two runs cannot write the same episodes.

A write that fails (a full disk, a lost mount, permissions) raises ``StorageError``, naming the
path and how many results are safely in the folder; the part of the line already written is cut
off again, so the file holds whole records only and a rerun resumes from them.
"""

from __future__ import annotations

import errno as errnos
import json
import os
from pathlib import Path
from typing import Any

from agentgym.errors import ConfigError, DataError, StorageError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory lock, the rest still holds
    fcntl = None

__all__ = ["ResultStore", "RESULTS", "MANIFEST", "ERRORS"]

RESULTS, MANIFEST, ERRORS, LOCK = "results.jsonl", "run.json", "errors.jsonl", ".lock"
_FORMAT = 1


class ResultStore:
    """``with ResultStore(folder) as store: done = store.open(identity); store.append(record)``."""

    def __init__(self, folder: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.folder, self.fsync = Path(folder), fsync
        self._lock_fd: int | None = None
        self._results_fd: int | None = None
        self.saved = 0
        """Records safely in ``results.jsonl``: those found by ``open`` and those appended since."""

    def open(self, identity: dict[str, Any]) -> dict[int, dict[str, Any]]:
        """Lock the folder, check or write the manifest; return the finished episodes' records."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._lock()
            self._check_manifest(json.loads(json.dumps(identity)))
            path = self.folder / RESULTS
            done = load_results(path, repair=True)
            self._results_fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            self.close()
            raise self._storage_error(exc, exc.filename or self.folder) from None
        self.saved = len(done)
        return done

    def append(self, record_json: str) -> None:
        """Add one finished episode's record (a JSON object on one line)."""
        if self._results_fd is None:
            raise RuntimeError("the store is not open")
        try:
            _write_line(self._results_fd, record_json, self.fsync)
        except OSError as exc:
            raise self._storage_error(exc, self.folder / RESULTS) from None
        self.saved += 1

    def append_error(self, entry: dict[str, Any]) -> None:
        """Note a failed episode in ``errors.jsonl`` (informational: the rerun retries it)."""
        path = self.folder / ERRORS
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                _write_line(fd, json.dumps(entry, ensure_ascii=False), self.fsync)
            finally:
                os.close(fd)
        except OSError as exc:
            raise self._storage_error(exc, path) from None

    def _storage_error(self, exc: OSError, path: str | os.PathLike[str]) -> StorageError:
        code = errnos.errorcode.get(exc.errno or 0)
        reason = exc.strerror or str(exc)
        return StorageError(f"cannot write {path}: {reason}{f' ({code})' if code else ''}; {self.saved} result(s) "
                            f"are safely in {self.folder / RESULTS}: fix this and rerun the same command to resume",
                            errno=exc.errno, path=str(path))

    def close(self) -> None:
        if self._results_fd is not None:
            os.close(self._results_fd)
            self._results_fd = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _lock(self) -> None:
        self._lock_fd = os.open(self.folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        if fcntl is None:
            return
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.close()
            raise ConfigError("out", str(self.folder), "a folder no other agentgym run is writing to") from None

    def _check_manifest(self, identity: dict[str, Any]) -> None:
        path = self.folder / MANIFEST
        if path.exists() and _has_results(self.folder):  # a folder without results is free to reuse
            recorded = _renamed(_recorded_identity(path))
            if recorded != identity:
                differing = sorted(k for k in set(identity) | set(recorded or {})
                                   if (recorded or {}).get(k) != identity.get(k))
                raise ConfigError("out", str(self.folder), f"a folder of the same run, or a new one (--out): its "
                                  f"results come from a run with other {', '.join(differing)}")
            return
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"format": _FORMAT, "identity": identity}, indent=2), encoding="utf-8")
        os.replace(tmp, path)  # atomic: a manifest is whole or absent


def _recorded_identity(path: Path) -> Any:
    """The identity a manifest records; a manifest that is not one is a DataError, as a corrupt
    results line is."""
    try:
        manifest = json.loads(path.read_bytes())
        if not isinstance(manifest, dict) or not isinstance(manifest.get("identity"), dict):
            raise ValueError("no 'identity' object")
    except ValueError as exc:  # JSON and UTF-8 errors are ValueErrors
        raise DataError(f"{path} is not a run manifest ({exc}); fix or remove it (the run writes it again), "
                        f"or write to a new folder with --out") from None
    return manifest["identity"]


def _renamed(identity: Any) -> Any:
    # Runs recorded under retired names still resume, until 0.3: 0.1's gold-plan replay was agent
    # kind "reference", and the task selection was recorded as "tasks" (now the task set's word).
    if isinstance(identity, dict) and identity.get("agent") == {"kind": "reference"}:
        identity = {**identity, "agent": {"kind": "gold"}}
    if isinstance(identity, dict) and "tasks" in identity and "selection" not in identity:
        identity = {("selection" if k == "tasks" else k): v for k, v in identity.items()}
    return identity


def _has_results(folder: Path) -> bool:
    try:
        return (folder / RESULTS).stat().st_size > 0
    except FileNotFoundError:
        return False


def load_results(path: Path, *, repair: bool = False) -> dict[int, dict[str, Any]]:
    """Records by episode. A torn last line (a crash mid-write) is ignored, and cut off when
    ``repair``; a record repeated for an episode keeps its first copy."""
    if not path.exists():
        return {}
    data = path.read_bytes()
    complete = data.rfind(b"\n") + 1
    if complete < len(data) and repair:
        with open(path, "r+b") as f:
            f.truncate(complete)
    done: dict[int, dict[str, Any]] = {}
    for number, line in enumerate(data[:complete].splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            episode = int(record["episode"])
        except (ValueError, KeyError, TypeError) as exc:
            raise DataError(f"{path}:{number} is not a result record ({exc}); fix or remove that line") from None
        done.setdefault(episode, record)
    return done


def _write_line(fd: int, text: str, fsync: bool) -> None:
    """Append one line; on failure cut off what of it was written, then raise the OSError."""
    data = (text + "\n").encode("utf-8")
    view, written = memoryview(data), 0
    try:
        while written < len(data):  # one write in practice; loop in case the kernel takes part of it
            written += os.write(fd, view[written:])
        if fsync:
            os.fsync(fd)
    except OSError:
        if written:
            _cut(fd, written)
        raise


def _cut(fd: int, tail: int) -> None:
    """Remove the last ``tail`` bytes (a line that could not be written whole); truncating needs no space."""
    try:
        os.ftruncate(fd, max(0, os.fstat(fd).st_size - tail))
    except OSError:
        pass  # the next open cuts the torn line off anyway
