"""BM25Retriever: in-process BM25 over a passage corpus, built with ``bm25s`` and memory-mapped.

The first ``BM25Retriever.open(corpus)`` tokenizes the passages (title and text; English
stopwords and the Snowball English stemmer from PyStemmer), builds the bm25s score matrix and
saves it with the passages under ``$AGENTGYM_CACHE_DIR/searchqa/index/<key>/`` (default
``~/.cache/agentgym``), where the key is a hash of the corpus's content and of the BM25
settings. Nothing is ever written next to the corpus. Later opens memory-map the saved arrays
and passages, so they take milliseconds and share pages between processes.

An explicit ``index_dir`` is used only when it is missing, empty, or carries agentgym's marker
file (``agentgym-index.json``); anything else is refused with ``ConfigError``. Inside an index
folder each build is a subfolder named in the marker; a rebuild writes a new subfolder, then
replaces the marker atomically, then deletes the old subfolder. Only files agentgym wrote are
ever replaced or deleted.

The saved index holds no pickle: arrays are ``.npy`` loaded with ``allow_pickle=False``, the rest
JSON. The marker records each file's size (and the SHA-256 of the small ones); a folder that
does not match is rebuilt, never trusted. Queries go through the same stopwords and stemmer as
the corpus. ``k1``/``b`` default to bm25s's 1.5/0.75; ``BM25_PRESETS["pyserini"]`` is Pyserini's
0.9/0.4 (Search-R1's BM25 baseline).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
from bm25s.utils.corpus import save_mmindex

from agentgym._toolbox import collector_paused, is_number
from agentgym.envs.searchqa.data import Passage, load_passages
from agentgym.envs.searchqa.retrievers import Hit
from agentgym.envs.searchqa.synthetic import cache_base
from agentgym.errors import ConfigError, DataError, DependencyNotInstalled

__all__ = ["BM25Retriever", "STEMMERS", "INDEX_FORMAT", "BM25_PRESETS", "MARKER", "file_digest"]

INDEX_FORMAT = "2"
STEMMERS = ("english", None)
BM25_PRESETS = {"bm25s": (1.5, 0.75), "pyserini": (0.9, 0.4)}
"""``(k1, b)``: bm25s's defaults, and Pyserini's (Lucene BM25 as Search-R1's BM25 server runs it)."""
MARKER = "agentgym-index.json"
_SPLIT = re.compile(r"(?u)\b\w\w+\b").findall  # bm25s's default token pattern
_HASHED_FILE_BYTES = 16 << 20  # files up to this size are checksummed on open; larger ones by size
_OPEN: dict[Path, BM25Retriever] = {}
_OPEN_LOCK = threading.Lock()


def _stemmer(name: str | None) -> Any:
    if name is None:
        return None
    try:
        import Stemmer
    except ImportError:
        raise DependencyNotInstalled("stemming needs PyStemmer: pip install PyStemmer") from None
    return Stemmer.Stemmer(name)


class BM25Retriever:
    """BM25 (Lucene variant; k1 and b as built, 1.5 and 0.75 by default) over a corpus of passages. Thread-safe."""

    def __init__(self, index_dir: str | os.PathLike[str]) -> None:
        """Open an index folder written by ``build`` (use ``open`` to build or reuse one)."""
        self.index_dir = Path(index_dir)
        meta = _read_marker(self.index_dir)
        if meta is None or not meta.get("current"):
            raise DataError(f"{self.index_dir} is not an agentgym BM25 index (no {MARKER} naming a build)")
        build = self.index_dir / str(meta["current"])
        problem = _check_files(build, meta.get("files"))
        if problem:
            raise DataError(f"{self.index_dir} is damaged: {problem}")
        try:
            self._bm25 = bm25s.BM25.load(build / "bm25s", mmap=True, load_corpus=True, allow_pickle=False,
                                         show_progress=False, verbosity=0)
            stopwords = json.loads((build / "stopwords.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, KeyError) as exc:
            raise DataError(f"{self.index_dir} is not a readable BM25 index ({exc})") from None
        self.meta = meta
        self._stopwords = frozenset(stopwords)
        self._stem = _stemmer(meta["stemmer"])
        self._vocab: dict[str, int] = self._bm25.vocab_dict
        self._corpus = self._bm25.corpus
        self._lock = threading.Lock()  # the corpus reader seeks a shared mmap

    # -- building and opening ----------------------------------------------------------------
    @classmethod
    def build(cls, passages: Iterable[Passage | Mapping[str, Any]], index_dir: str | os.PathLike[str], *,
              stemmer: str | None = "english", source: Mapping[str, Any] | None = None,
              k1: float = 1.5, b: float = 0.75) -> BM25Retriever:
        """Index ``passages`` into ``index_dir`` (missing, empty or agentgym's own) and open it."""
        _check_settings(stemmer, k1, b)
        with collector_paused():
            passages = list(load_passages(passages))
        if not passages:
            raise DataError("the corpus has no passages")
        target = Path(index_dir)
        _claim(target)
        build = target / f"build-{secrets.token_hex(6)}"
        build.mkdir()
        try:
            _write_index(passages, build, stemmer, k1, b)
            meta = {"owner": "agentgym", "format": INDEX_FORMAT, "current": build.name, "stemmer": stemmer,
                    "k1": k1, "b": b, "source": dict(source or {}), "passages": len(passages),
                    "bm25s": bm25s.__version__, "files": _file_record(build)}
            old = _read_marker(target)
            _write_marker(target, meta)
        except BaseException:
            shutil.rmtree(build, ignore_errors=True)
            raise
        _drop_old_builds(target, keep=build.name, previous=(old or {}).get("current"))
        with _OPEN_LOCK:
            _OPEN.pop(target.resolve(), None)
        for attempt in range(3):
            try:
                return _opened(target)
            except DataError:  # another process replaced the build between our marker read and open
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    @classmethod
    def open(cls, corpus: str | os.PathLike[str] | Iterable[Passage | Mapping[str, Any]], *,
             index_dir: str | os.PathLike[str] | None = None, cache_dir: str | os.PathLike[str] | None = None,
             stemmer: str | None = "english", k1: float = 1.5, b: float = 0.75) -> BM25Retriever:
        """The index of ``corpus`` (a jsonl/json/parquet file or rows): reused when current, else built.

        The default folder is in the cache, keyed by the corpus's content and the settings."""
        _check_settings(stemmer, k1, b)
        rows = None
        if isinstance(corpus, (str, os.PathLike)):
            source = {"sha256": file_digest(Path(corpus), cache_dir)}
        else:
            rows = list(load_passages(corpus))
            source = {"sha256": _rows_digest(rows)}
        if index_dir is not None:
            folder = Path(index_dir)
            _claim(folder, create=False)
        else:
            key = hashlib.sha256(json.dumps([INDEX_FORMAT, stemmer, k1, b, source], sort_keys=True).encode())
            folder = cache_base(cache_dir) / "searchqa" / "index" / key.hexdigest()[:32]
        found = _reuse(folder, source, stemmer, k1, b)
        if found is not None:
            return found
        with collector_paused():
            passages = rows if rows is not None else list(load_passages(corpus))
        try:
            return cls.build(passages, folder, stemmer=stemmer, source=source, k1=k1, b=b)
        except OSError as exc:
            raise DataError(f"cannot write a BM25 index to {folder}: {exc}") from None

    # -- searching ---------------------------------------------------------------------------
    def token_ids(self, query: str) -> list[int]:
        """The query's vocabulary ids after the corpus's tokenization; unknown words are dropped."""
        words = [w for w in _SPLIT(query.lower()) if w not in self._stopwords]
        if self._stem is not None:
            words = self._stem.stemWords(words)
        vocab = self._vocab
        return [vocab[w] for w in words if w in vocab]

    def search(self, query: str, k: int) -> list[Hit]:
        ids = self.token_ids(query)
        if not ids or k < 1:
            return []
        scores = self._bm25.get_scores_from_ids(ids)
        top = _top_k(scores, min(k, len(scores)))
        with self._lock:
            docs = [self._corpus[int(i)] for i in top]
        return [Hit(str(d["id"]), d["title"], d["text"], float(scores[i]), d.get("contents"))
                for d, i in zip(docs, top, strict=True)]

    def batch_search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return [self.search(q, k) for q in queries]

    def passage(self, index: int) -> Passage:
        """The passage at corpus position ``index``."""
        with self._lock:
            d = self._corpus[index]
        return Passage(str(d["id"]), d["title"], d["text"], d.get("contents"))

    def __len__(self) -> int:
        return int(self.meta["passages"])

    def __getstate__(self) -> dict[str, Any]:
        # Mapped arrays and open files do not pickle; the copy maps the same folder again.
        return {"index_dir": str(self.index_dir)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(_opened(Path(state["index_dir"])).__dict__)

    @property
    def params(self) -> dict[str, Any]:
        """How the index was built: ``k1``, ``b`` and the stemmer."""
        return {"k1": self.meta["k1"], "b": self.meta["b"], "stemmer": self.meta["stemmer"]}

    def __repr__(self) -> str:
        return f"BM25Retriever({str(self.index_dir)!r}, passages={len(self)})"


# -- helpers ---------------------------------------------------------------------------------
def _top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` best positive scores, best first, ties by corpus order.

    The partition finds the k-th best score; every document at or above it is then sorted, so a
    tie at the boundary is broken the same way for every ``k`` (top-2 is a prefix of top-3).
    """
    # Partitioning the negated scores at a small kth is far faster than at -k when many tie at 0.
    threshold = scores[np.argpartition(-scores, k - 1)[:k]].min()
    candidates = np.flatnonzero(scores >= threshold) if threshold > 0 else np.flatnonzero(scores > 0)
    return candidates[np.lexsort((candidates, -scores[candidates]))][:k]


def _check_settings(stemmer: Any, k1: Any, b: Any) -> None:
    if stemmer not in STEMMERS:
        raise ConfigError("stemmer", stemmer, STEMMERS)
    if not is_number(k1) or not 0 < k1 < 100:
        raise ConfigError("k1", k1, "a number in (0, 100), e.g. 1.5 (bm25s) or 0.9 (Pyserini)")
    if not is_number(b) or not 0 <= b <= 1:
        raise ConfigError("b", b, "a number in [0, 1], e.g. 0.75 (bm25s) or 0.4 (Pyserini)")


def _write_index(passages: list[Passage], folder: Path, stemmer: str | None, k1: float, b: float) -> None:
    tokenizer = bm25s.tokenization.Tokenizer(stopwords="en", stemmer=_stemmer(stemmer))
    with collector_paused():
        tokens = tokenizer.tokenize([f"{p.title}\n{p.text}" for p in passages], return_as="tuple", show_progress=False)
        bm25 = bm25s.BM25(k1=float(k1), b=float(b), method="lucene")
        bm25.index(tokens, show_progress=False)
        del tokens
        bm25.save(folder / "bm25s", allow_pickle=False, show_progress=False)
        _write_passages(passages, folder / "bm25s" / "corpus.jsonl")
    (folder / "stopwords.json").write_text(json.dumps(sorted(tokenizer.stopwords)), encoding="utf-8")


def _write_passages(passages: list[Passage], path: Path) -> None:
    """The passages as bm25s's memory-mapped jsonl corpus, with the byte offsets counted while writing."""
    offsets, position = [], 0
    with path.open("wb") as f:
        for p in passages:
            row = {"id": p.id, "title": p.title, "text": p.text}
            if p.raw_contents is not None:  # kept as the corpus had it, for /retrieve and Search-R1's rendering
                row["contents"] = p.raw_contents
            line = (json.dumps(row, ensure_ascii=False) + "\n").encode()
            offsets.append(position)
            position += len(line)
            f.write(line)
    save_mmindex(offsets, path)


# -- the index folder: agentgym's marker, its builds, nothing else ---------------------------
def _read_marker(folder: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict):
        return None
    if meta.get("owner") == "agentgym":
        return meta
    if meta.get("format") == "1" and "bm25s" in meta and "stemmer" in meta:
        return {"owner": "agentgym", "format": "1", "current": None}  # agentgym 0.1's layout: rebuilt
    return None


def _claim(folder: Path, *, create: bool = True) -> None:
    """Make sure ``folder`` is agentgym's: missing or empty (then marked), or already marked."""
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise ConfigError("index_dir", str(folder), "a folder that is missing, empty or an agentgym index")
    if folder.is_dir() and (folder / MARKER).is_file():
        if _read_marker(folder) is None:
            raise ConfigError("index_dir", str(folder), f"a folder whose {MARKER} agentgym wrote")
        return
    if folder.is_dir() and any(folder.iterdir()):
        raise ConfigError("index_dir", str(folder), "a folder that is missing, empty or an agentgym index "
                          "(this one holds other files; agentgym never writes among them)")
    if create:
        folder.mkdir(parents=True, exist_ok=True)
        _write_marker(folder, {"owner": "agentgym", "format": INDEX_FORMAT, "current": None})


def _write_marker(folder: Path, meta: dict[str, Any]) -> None:
    tmp = folder / f".{MARKER}.{secrets.token_hex(4)}.tmp"
    tmp.write_text(json.dumps(meta, indent=2), encoding="utf-8")
    os.replace(tmp, folder / MARKER)  # atomic: a reader sees the old build or the new one


def _drop_old_builds(folder: Path, *, keep: str, previous: Any) -> None:
    # Only names agentgym gives its builds; a reader with the old one mapped keeps its pages.
    if (folder / "bm25s" / "params.index.json").is_file():  # agentgym 0.1's files, directly in the folder
        shutil.rmtree(folder / "bm25s", ignore_errors=True)
        (folder / "stopwords.json").unlink(missing_ok=True)
    for child in folder.iterdir():
        if child.name != keep and child.name.startswith("build-") and child.is_dir() and not child.is_symlink():
            if child.name == previous or _is_stale(child):
                shutil.rmtree(child, ignore_errors=True)


def _is_stale(build: Path) -> bool:
    # An unfinished build of a crashed process; a concurrent build is younger than a minute.
    import time

    try:
        return time.time() - build.stat().st_mtime > 60
    except OSError:
        return False


def _file_record(build: Path) -> dict[str, list[Any]]:
    record = {}
    for path in sorted(build.rglob("*")):
        if path.is_file():
            size = path.stat().st_size
            digest = _sha256(path) if size <= _HASHED_FILE_BYTES else None
            record[str(path.relative_to(build))] = [size, digest]
    return record


def _check_files(build: Path, record: Any) -> str | None:
    if not isinstance(record, dict) or not record:
        return "no file record"
    for name, entry in record.items():
        path = build / name
        if ".." in Path(name).parts or not path.is_file() or path.is_symlink():
            return f"{name} is missing"
        size, digest = entry
        if path.stat().st_size != size or (digest is not None and _sha256(path) != digest):
            return f"{name} changed since it was written"
    return None


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def file_digest(path: Path, cache_dir: Any) -> str:
    """The SHA-256 of a corpus file, remembered in the cache by path, size and mtime (big corpora hash once)."""
    if not path.is_file():
        raise DataError(f"no such corpus file: {path}")
    st = path.stat()
    stamp = [str(path.resolve()), st.st_size, st.st_mtime_ns]
    memo = cache_base(cache_dir) / "searchqa" / "digests" / (hashlib.sha256(str(stamp[0]).encode()).hexdigest()[:32]
                                                              + ".json")
    try:
        saved = json.loads(memo.read_text(encoding="utf-8"))
        if saved.get("stamp") == stamp and isinstance(saved.get("sha256"), str):
            return saved["sha256"]
    except (OSError, ValueError, AttributeError):
        pass
    digest = _sha256(path)
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo.with_name(f".{memo.name}.{secrets.token_hex(4)}.tmp")
        tmp.write_text(json.dumps({"stamp": stamp, "sha256": digest}), encoding="utf-8")
        os.replace(tmp, memo)
    except OSError:
        pass  # a read-only cache only costs a re-hash next time
    return digest


def _rows_digest(rows: list[Passage]) -> str:
    digest = hashlib.sha256()
    for p in rows:
        digest.update(json.dumps([p.id, p.title, p.text, p.raw_contents], ensure_ascii=False).encode())
    return digest.hexdigest()


def _reuse(folder: Path, source: dict[str, Any], stemmer: str | None, k1: float, b: float) -> BM25Retriever | None:
    meta = _read_marker(folder)
    if meta is None or not meta.get("current"):
        return None
    wanted = {"format": INDEX_FORMAT, "stemmer": stemmer, "k1": k1, "b": b, "source": source}
    if any(meta.get(key) != value for key, value in wanted.items()):
        return None
    try:
        return _opened(folder)
    except DataError:
        return None  # damaged or tampered: rebuilt by the caller


def _opened(folder: Path) -> BM25Retriever:
    """One open retriever per index folder and process, shared by every env that uses it."""
    key = folder.resolve()
    with _OPEN_LOCK:
        found = _OPEN.get(key)
        if found is None:
            found = _OPEN[key] = BM25Retriever(key)
        return found
