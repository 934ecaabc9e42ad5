"""Cache folders that hold data only, are checked on every open, and replace only what agentgym wrote.

A cache folder is filled in a fresh temporary sibling, gets a ``manifest.json`` (its kind, format
version and each file's size and CRC-32), and is then renamed into place. Opening checks the
manifest against the files byte for byte; a folder that fails (truncated, corrupted, edited, an
extra or a missing file) is rebuilt. Nothing in a cache is code: numpy arrays are read with
``allow_pickle=False`` and everything else is JSON, so a planted file can at worst be rejected.

A write that fails (a full disk, permissions, an I/O error) is a :class:`StorageError` naming the
cache folder. A folder is replaced only when it carries agentgym's manifest: anything else at the
cache path (a user's folder, a file, a symlink) is left alone and reported as a :class:`DataError`.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from agentgym.envs.travelplanner.world._integrity import cache_unwritable
from agentgym.errors import AgentGymError, DataError

__all__ = ["MANIFEST", "checksum", "is_valid", "install", "kind_of"]

MANIFEST = "manifest.json"
_MANIFEST_MAX_BYTES = 1 << 20
_READ_BYTES = 1 << 20
_STALE_SECONDS = 3600  # a temporary folder this old belongs to no running build


def checksum(path: Path) -> str:
    """CRC-32 of a file's bytes, read through one small buffer (no memory grows with the file)."""
    crc = 0
    buf = bytearray(_READ_BYTES)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            crc = zlib.crc32(view[:n], crc)
    return f"{crc:08x}"


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST)


def _write_manifest(folder: Path, kind: str, version: str) -> None:
    files = {rel: {"bytes": (folder / rel).stat().st_size, "crc32": checksum(folder / rel)} for rel in _files(folder)}
    body = {"format": kind, "version": version, "files": files}
    (folder / MANIFEST).write_text(json.dumps(body, indent=1, sort_keys=True), encoding="utf-8")


def _manifest(folder: Path) -> dict[str, Any] | None:
    """The folder's manifest if it is one of agentgym's (any kind or version), else None."""
    path = folder / MANIFEST
    try:
        if folder.is_symlink() or not folder.is_dir() or path.is_symlink() or path.stat().st_size > _MANIFEST_MAX_BYTES:
            return None
        body = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(body, dict) or not str(body.get("format", "")).startswith("agentgym-"):
        return None
    return body


def kind_of(folder: Path) -> str | None:
    """The kind of agentgym cache ``folder`` says it is (its manifest's format; not checked), else None."""
    body = _manifest(folder)
    return None if body is None else str(body["format"])


def is_valid(folder: Path, kind: str, version: str) -> bool:
    """Whether ``folder`` is a complete cache of this kind and version whose files match the manifest."""
    body = _manifest(folder)
    if body is None or body.get("format") != kind or body.get("version") != version:
        return False
    files = body.get("files")
    if not isinstance(files, dict):
        return False
    try:
        if sorted(files) != _files(folder):
            return False
        for rel, meta in files.items():
            path = folder / rel
            if path.is_symlink() or not isinstance(meta, dict) or path.stat().st_size != meta.get("bytes"):
                return False
        # zlib and file reads release the GIL: the largest files are checked side by side.
        with ThreadPoolExecutor(max_workers=2) as pool:
            sums = list(pool.map(checksum, [folder / rel for rel in files]))
    except OSError:
        return False
    return sums == [meta.get("crc32") for meta in files.values()]


def install(target: Path, kind: str, version: str, fill: Callable[[Path], Any]) -> Any:
    """Build the cache ``target`` with ``fill(tmp)`` and rename it into place; returns what ``fill`` returned.

    An existing valid cache (another process may have won the race) is kept. An invalid one is
    replaced only if it is agentgym's; anything else at ``target`` raises :class:`DataError`. A
    failed write (a full disk, permissions, an I/O error) raises :class:`StorageError`; ``fill``
    turns its own read failures into errors that are not ``OSError``.
    """
    _check_replaceable(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale(target)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    except OSError as exc:
        raise cache_unwritable(target.parent, exc) from None
    try:
        result = fill(tmp)
        _write_manifest(tmp, kind, version)
        for _ in range(3):
            if is_valid(target, kind, version):
                return result  # someone else built it meanwhile
            _move_aside(target)
            try:
                os.replace(tmp, target)
                return result
            except OSError:
                if not target.exists():
                    raise
        raise DataError(f"could not install the cache {target}: it keeps being replaced by another process")
    except OSError as exc:
        if isinstance(exc, AgentGymError):
            raise
        raise cache_unwritable(target.parent, exc) from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _remove_stale(target: Path) -> None:
    """Delete this cache's own leftovers (a build or a removal that was killed), once they are old."""
    now = time.time()
    for pattern in (f".{target.name}.tmp-*", f".{target.name}.old-*"):
        for leftover in target.parent.glob(pattern):
            try:
                old = now - leftover.stat().st_mtime > _STALE_SECONDS
                stale = old and leftover.is_dir() and not leftover.is_symlink()
            except OSError:
                continue
            if stale:
                shutil.rmtree(leftover, ignore_errors=True)


def _check_replaceable(target: Path) -> None:
    if not (target.exists() or target.is_symlink()):
        return
    empty_dir = target.is_dir() and not target.is_symlink() and not any(target.iterdir())
    if not empty_dir and _manifest(target) is None:
        raise DataError(
            f"{target} exists but is not an agentgym cache (no agentgym manifest.json), so it is left alone; "
            f"remove it or choose another cache directory (AGENTGYM_CACHE_DIR)"
        )


def _move_aside(target: Path) -> None:
    """Rename an invalid agentgym cache out of the way, then delete it."""
    if not (target.exists() or target.is_symlink()):
        return
    _check_replaceable(target)
    trash = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    try:
        os.replace(target, trash / "cache")
    except FileNotFoundError:
        pass  # another process moved it first
    shutil.rmtree(trash, ignore_errors=True)
