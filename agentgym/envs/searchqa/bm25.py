"""BM25Retriever: in-process BM25 over a passage corpus, built with ``bm25s`` and memory-mapped.

The first ``BM25Retriever.open(corpus)`` tokenizes the passages (title and text; English
stopwords and the Snowball English stemmer from PyStemmer), builds the bm25s score matrix and
saves it with the passages: next to a corpus file as ``<file>.bm25s/`` when that folder is
writable (by its mode bits too), else under ``$AGENTGYM_CACHE_DIR/searchqa/index/``. Later opens memory-map the saved
arrays and passages, so they take milliseconds and share pages between processes. An index
records what it was built from (path, size, mtime, or a hash of in-memory rows) and is rebuilt
when that changes. Queries go through the same stopwords and stemmer as the corpus.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
from bm25s.utils.corpus import save_mmindex

from agentgym.envs.searchqa.data import Passage, load_passages
from agentgym.envs.searchqa.retrievers import Hit
from agentgym.envs.searchqa.synthetic import cache_base
from agentgym.errors import ConfigError, DataError, DependencyNotInstalled

__all__ = ["BM25Retriever", "STEMMERS", "INDEX_FORMAT"]

INDEX_FORMAT = "1"
STEMMERS = ("english", None)
_SPLIT = re.compile(r"(?u)\b\w\w+\b").findall  # bm25s's default token pattern
_META = "agentgym-index.json"
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
    """BM25 (Lucene variant, k1=1.5, b=0.75) over a corpus of passages. Thread-safe."""

    def __init__(self, index_dir: str | os.PathLike[str]) -> None:
        """Open an index folder written by ``build`` (use ``open`` to build or reuse one)."""
        self.index_dir = Path(index_dir)
        try:
            self.meta = json.loads((self.index_dir / _META).read_text(encoding="utf-8"))
            self._bm25 = bm25s.BM25.load(self.index_dir / "bm25s", mmap=True, load_corpus=True,
                                         show_progress=False, verbosity=0)
            stopwords = json.loads((self.index_dir / "stopwords.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, KeyError) as exc:
            raise DataError(f"{self.index_dir} is not a readable BM25 index ({exc})") from None
        self._stopwords = frozenset(stopwords)
        self._stem = _stemmer(self.meta["stemmer"])
        self._vocab: dict[str, int] = self._bm25.vocab_dict
        self._corpus = self._bm25.corpus
        self._lock = threading.Lock()  # the corpus reader seeks a shared mmap

    # -- building and opening ----------------------------------------------------------------
    @classmethod
    def build(cls, passages: Iterable[Passage | Mapping[str, Any]], index_dir: str | os.PathLike[str], *,
              stemmer: str | None = "english", source: Mapping[str, Any] | None = None) -> BM25Retriever:
        """Index ``passages`` into ``index_dir`` (replacing what is there) and open it."""
        if stemmer not in STEMMERS:
            raise ConfigError("stemmer", stemmer, STEMMERS)
        with _gc_paused():
            passages = list(load_passages(passages))
        if not passages:
            raise DataError("the corpus has no passages")
        target = Path(index_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=target.name + ".tmp-", dir=target.parent))
        try:
            _write_index(passages, tmp, stemmer, dict(source or {}))
            _install(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return _opened(target)

    @classmethod
    def open(cls, corpus: str | os.PathLike[str] | Iterable[Passage | Mapping[str, Any]], *,
             index_dir: str | os.PathLike[str] | None = None, cache_dir: str | os.PathLike[str] | None = None,
             stemmer: str | None = "english") -> BM25Retriever:
        """The index of ``corpus`` (a jsonl/json/parquet file or rows): reused when current, else built."""
        if stemmer not in STEMMERS:
            raise ConfigError("stemmer", stemmer, STEMMERS)
        rows = None
        if isinstance(corpus, (str, os.PathLike)):
            source = _file_source(Path(corpus))
        else:
            rows = list(load_passages(corpus))
            source = {"sha256": _rows_digest(rows)}
        candidates = [Path(index_dir)] if index_dir is not None else _default_dirs(corpus, source, stemmer, cache_dir)
        for folder in candidates:
            found = _reuse(folder, source, stemmer)
            if found is not None:
                return found
        return _build_somewhere(cls, rows if rows is not None else corpus, candidates, stemmer, source)

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
        return [Hit(str(d["id"]), d["title"], d["text"], float(scores[i])) for d, i in zip(docs, top, strict=True)]

    def batch_search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return [self.search(q, k) for q in queries]

    def passage(self, index: int) -> Passage:
        """The passage at corpus position ``index``."""
        with self._lock:
            d = self._corpus[index]
        return Passage(str(d["id"]), d["title"], d["text"])

    def __len__(self) -> int:
        return int(self.meta["passages"])

    def __getstate__(self) -> dict[str, Any]:
        # Mapped arrays and open files do not pickle; the copy maps the same folder again.
        return {"index_dir": str(self.index_dir)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(_opened(Path(state["index_dir"])).__dict__)

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


def _write_index(passages: list[Passage], folder: Path, stemmer: str | None, source: dict[str, Any]) -> None:
    tokenizer = bm25s.tokenization.Tokenizer(stopwords="en", stemmer=_stemmer(stemmer))
    with _gc_paused():
        tokens = tokenizer.tokenize([f"{p.title}\n{p.text}" for p in passages], return_as="tuple", show_progress=False)
        bm25 = bm25s.BM25()
        bm25.index(tokens, show_progress=False)
        del tokens
        bm25.save(folder / "bm25s", show_progress=False)
        _write_passages(passages, folder / "bm25s" / "corpus.jsonl")
    (folder / "stopwords.json").write_text(json.dumps(sorted(tokenizer.stopwords)), encoding="utf-8")
    meta = {"format": INDEX_FORMAT, "stemmer": stemmer, "source": source, "passages": len(passages),
            "bm25s": bm25s.__version__}
    (folder / _META).write_text(json.dumps(meta, indent=2), encoding="utf-8")


def _write_passages(passages: list[Passage], path: Path) -> None:
    """The passages as bm25s's memory-mapped jsonl corpus, with the byte offsets counted while writing."""
    offsets, position = [], 0
    with path.open("wb") as f:
        for p in passages:
            line = (json.dumps({"id": p.id, "title": p.title, "text": p.text}, ensure_ascii=False) + "\n").encode()
            offsets.append(position)
            position += len(line)
            f.write(line)
    save_mmindex(offsets, path)


@contextlib.contextmanager
def _gc_paused():
    # Tokenizing builds millions of small lists; cyclic GC passes over them add ~40% to the build.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _install(tmp: Path, target: Path) -> None:
    # Rename is atomic, so a reader never sees half an index; a stale one is moved aside first.
    if target.exists():
        old = target.with_name(f"{target.name}.old-{os.getpid()}")
        try:
            os.replace(target, old)
            shutil.rmtree(old, ignore_errors=True)
        except OSError:
            pass
    try:
        os.replace(tmp, target)
    except OSError:
        if not (target / _META).is_file():  # lost a race only if the winner left an index
            raise
    with _OPEN_LOCK:
        _OPEN.pop(target.resolve(), None)


def _file_source(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise DataError(f"no such corpus file: {path}")
    st = path.stat()
    return {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _rows_digest(rows: list[Passage]) -> str:
    digest = hashlib.sha256()
    for p in rows:
        digest.update(json.dumps([p.id, p.title, p.text], ensure_ascii=False).encode())
    return digest.hexdigest()


def _default_dirs(corpus: Any, source: dict[str, Any], stemmer: str | None, cache_dir: Any) -> list[Path]:
    suffix = ".bm25s" if stemmer == "english" else ".bm25s-nostem"
    key = hashlib.sha256(json.dumps([INDEX_FORMAT, stemmer, source], sort_keys=True).encode()).hexdigest()[:24]
    cached = cache_base(cache_dir) / "searchqa" / "index" / key
    if isinstance(corpus, (str, os.PathLike)) and _writable(Path(corpus).parent):
        return [Path(corpus).with_name(Path(corpus).name + suffix), cached]
    return [cached]


def _writable(folder: Path) -> bool:
    # The mode bits count too: root may write anywhere, but a folder marked read-only (a
    # shared data set) must not get an index dropped into it.
    try:
        return os.access(folder, os.W_OK) and bool(folder.stat().st_mode & 0o222)
    except OSError:
        return False


def _reuse(folder: Path, source: dict[str, Any], stemmer: str | None) -> BM25Retriever | None:
    try:
        meta = json.loads((folder / _META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if meta.get("format") != INDEX_FORMAT or meta.get("stemmer") != stemmer or meta.get("source") != source:
        return None
    return _opened(folder)


def _opened(folder: Path) -> BM25Retriever:
    """One open retriever per index folder and process, shared by every env that uses it."""
    key = folder.resolve()
    with _OPEN_LOCK:
        found = _OPEN.get(key)
        if found is None:
            found = _OPEN[key] = BM25Retriever(key)
        return found


def _build_somewhere(cls: type[BM25Retriever], corpus: Any, candidates: list[Path], stemmer: str | None,
                     source: dict[str, Any]) -> BM25Retriever:
    with _gc_paused():
        passages = corpus if isinstance(corpus, list) else list(load_passages(corpus))
    error: OSError | None = None
    for folder in candidates:
        try:
            return cls.build(passages, folder, stemmer=stemmer, source=source)
        except OSError as exc:  # a read-only data folder: try the cache next
            error = exc
    raise DataError(f"cannot write a BM25 index to any of {[str(c) for c in candidates]}: {error}")
