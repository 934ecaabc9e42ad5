"""DenseRetriever: e5-style dense retrieval over a FAISS index, as Search-R1 serves it.

Search-R1's reported results use ``intfloat/e5-base-v2`` over the 2018 Wikipedia dump with a
FAISS Flat inner-product index (``e5_Flat.index``), top 3 passages. This module loads that
layout unchanged:

* the corpus, ``wiki-18.jsonl``: one JSON object per line with ``id`` and ``contents``; row *i* of
  the index is line *i* of the file. Lines are read on demand through a table of line offsets
  (built once, kept in the cache as ``.npy``), so a 21M-line corpus is never held in memory;
* the index, any FAISS index file (``faiss.read_index``, memory-mapped when it can be);
* the encoder, a Hugging Face model by name or local path (``transformers``): queries get the
  ``query: `` prefix, passages ``passage: ``, embeddings are the attention-masked mean of the last
  hidden states, L2-normalized, as e5 expects. ``fp16=True`` encodes queries with the model in
  half precision, pooling and norm included, as Search-R1's retrieval server does by default
  (``retrieval_use_fp16=True``); passages (building an index) stay in float32.

``DenseRetriever.open(corpus, encoder=...)`` without ``index=`` encodes a smaller corpus and
builds a Flat index in the cache, keyed by the corpus's content and the encoder.
Needs the ``dense`` extra: ``pip install 'agentgym-rl[dense]'``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import secrets
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agentgym.envs.searchqa.data import Passage, clip_error
from agentgym.envs.searchqa.retrievers import Hit
from agentgym.envs.searchqa.synthetic import cache_base
from agentgym.errors import ConfigError, DataError, DependencyNotInstalled

__all__ = ["DenseRetriever", "E5Encoder", "JsonlCorpus", "DEFAULT_ENCODER"]

DEFAULT_ENCODER = "intfloat/e5-base-v2"
_CHUNK = 64 << 20


def _faiss() -> Any:
    try:
        import faiss
    except ImportError:
        raise DependencyNotInstalled("dense retrieval needs faiss-cpu: pip install 'agentgym-rl[dense]'") from None
    return faiss


class JsonlCorpus:
    """Random access to the lines of a jsonl corpus by 0-based row number, without loading it."""

    def __init__(self, path: str | os.PathLike[str], *, cache_dir: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise DataError(f"no such corpus file: {self.path}")
        self._starts = _line_starts(self.path, cache_dir)
        self._file = self.path.open("rb")
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._starts)

    def row(self, i: int) -> dict[str, Any]:
        """Line ``i`` as a JSON object."""
        start, end = (int(x) for x in self._starts[i])
        with self._lock:
            self._file.seek(start)
            line = self._file.read(end - start)
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise DataError(f"{self.path}:{i + 1}: not valid JSON ({clip_error(exc)})") from None
        if not isinstance(row, dict):
            raise DataError(f"{self.path}:{i + 1}: each line must be a JSON object")
        return row

    def passage(self, i: int) -> Passage:
        try:
            return Passage.from_row(self.row(i), str(i))
        except DataError as exc:
            raise DataError(f"{self.path}:{i + 1}: {exc}") from None

    def close(self) -> None:
        self._file.close()

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "_starts": self._starts}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._file, self._lock = self.path.open("rb"), threading.Lock()


def _line_starts(path: Path, cache_dir: Any) -> np.ndarray:
    """The line spans (``_scan_lines``), cached as ``.npy`` by path, size and mtime."""
    st = path.stat()
    stamp = json.dumps([str(path.resolve()), st.st_size, st.st_mtime_ns])
    cached = cache_base(cache_dir) / "searchqa" / "lines" / (hashlib.sha256(stamp.encode()).hexdigest()[:32] + ".npy")
    try:
        starts = np.load(cached, allow_pickle=False, mmap_mode="r")
        if starts.ndim == 2 and starts.shape[1] == 2 and starts.dtype == np.int64 and (
                not len(starts) or starts[-1, 1] <= st.st_size):
            return starts
    except (OSError, ValueError):
        pass
    starts = _scan_lines(path)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f".{cached.name}.{secrets.token_hex(4)}.tmp.npy")
        np.save(tmp, starts, allow_pickle=False)
        os.replace(tmp, cached)
    except OSError:
        pass  # a read-only cache only costs a re-scan next time
    return starts


def _scan_lines(path: Path) -> np.ndarray:
    """``(rows, 2)`` int64 ``[start, end)`` byte spans of the non-empty lines, newlines excluded."""
    newlines, size = [], 0
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            newlines.append(np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == 10).astype(np.int64) + size)
            size += len(chunk)
    nl = np.concatenate(newlines) if newlines else np.zeros(0, dtype=np.int64)
    starts = np.concatenate([np.zeros(1, dtype=np.int64), nl + 1])
    stops = np.concatenate([nl, np.array([size], dtype=np.int64)])
    keep = stops > starts  # an empty line (or the end after the last newline) is no row
    return np.stack([starts[keep], stops[keep]], axis=1)


class E5Encoder:
    """Text to unit vectors with a Hugging Face encoder: e5's prefixes, mean pooling, L2 norm."""

    def __init__(self, model: str | os.PathLike[str] = DEFAULT_ENCODER, *, query_prefix: str = "query: ",
                 passage_prefix: str = "passage: ", max_length: int = 256, batch_size: int = 64,
                 device: str = "cpu", fp16: bool = False) -> None:
        try:
            import torch
            from transformers import AutoModel, AutoTokenizer
        except ImportError:
            raise DependencyNotInstalled("the dense encoder needs transformers and torch: "
                                         "pip install 'agentgym-rl[dense]'") from None
        self.name = str(model)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(self.name)
            self.model = AutoModel.from_pretrained(self.name).to(device).eval()
        except (OSError, ValueError) as exc:
            raise ConfigError("encoder", self.name, f"a model name or local path transformers can load "
                              f"({clip_error(exc)})") from None
        self._torch, self.device = torch, device
        self.query_prefix, self.passage_prefix = query_prefix, passage_prefix
        self.max_length, self.batch_size = max_length, batch_size
        self.dim = int(self.model.config.hidden_size)
        if not isinstance(fp16, bool):
            raise ConfigError("fp16", fp16, "True or False")
        self.fp16 = fp16
        # A half-precision copy for queries, as Search-R1's server runs model.half(); the float32
        # model keeps encoding passages.
        self._query_model = copy.deepcopy(self.model).half() if fp16 else self.model

    def encode(self, texts: Sequence[str], *, is_query: bool) -> np.ndarray:
        """``(len(texts), dim)`` float32 unit vectors."""
        prefix = self.query_prefix if is_query else self.passage_prefix
        model = self._query_model if is_query else self.model
        out = []
        torch = self._torch
        for start in range(0, len(texts), self.batch_size):
            batch = [prefix + t for t in texts[start:start + self.batch_size]]
            inputs = self.tokenizer(batch, max_length=self.max_length, padding=True, truncation=True,
                                    return_tensors="pt").to(self.device)
            with torch.inference_mode():
                hidden = model(**inputs).last_hidden_state
            mask = inputs["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)
            out.append(torch.nn.functional.normalize(pooled, dim=-1).float().cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, self.dim), dtype=np.float32)


class DenseRetriever:
    """Top-k passages by inner product of e5 embeddings, over a FAISS index. Thread-safe."""

    def __init__(self, corpus: JsonlCorpus, index: Any, encoder: E5Encoder) -> None:
        if index.ntotal != len(corpus):
            raise DataError(f"the index has {index.ntotal:,} vectors but {corpus.path} has {len(corpus):,} rows; "
                            "row i of the index must be line i of the corpus")
        if index.d != encoder.dim:
            raise ConfigError("encoder", encoder.name,
                              f"an encoder of width {index.d} (the index's), not {encoder.dim}")
        self.corpus, self.index, self.encoder = corpus, index, encoder
        self._lock = threading.Lock()  # the encoder's forward pass and faiss's search share threads

    @classmethod
    def open(cls, corpus: str | os.PathLike[str], *, index: str | os.PathLike[str] | None = None,
             encoder: str | os.PathLike[str] | E5Encoder = DEFAULT_ENCODER,
             cache_dir: str | os.PathLike[str] | None = None, mmap: bool = True, fp16: bool = False) -> DenseRetriever:
        """Search-R1's layout: ``corpus`` (``wiki-18.jsonl``) with a prebuilt ``index`` (``e5_Flat.index``);
        without ``index``, a Flat index of the corpus is built once in the cache. ``fp16``: queries
        encoded in half precision, Search-R1's server default (for an encoder given by name)."""
        faiss = _faiss()
        rows = JsonlCorpus(corpus, cache_dir=cache_dir)
        model = encoder if isinstance(encoder, E5Encoder) else E5Encoder(encoder, fp16=fp16)
        path = Path(index) if index is not None else _built_index(rows, model, cache_dir)
        if not path.is_file():
            raise DataError(f"no such FAISS index file: {path}")
        flags = faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY if mmap else 0
        try:
            loaded = faiss.read_index(str(path), flags)
        except RuntimeError as exc:
            try:  # not every index type can be mapped
                loaded = faiss.read_index(str(path))
            except RuntimeError:
                raise DataError(f"{path} is not a readable FAISS index ({clip_error(exc)})") from None
        return cls(rows, loaded, model)

    def search(self, query: str, k: int) -> list[Hit]:
        return self.batch_search([query], k)[0]

    def batch_search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        if not queries or k < 1:
            return [[] for _ in queries]
        with self._lock:
            vectors = self.encoder.encode(list(queries), is_query=True)
            scores, rows = self.index.search(vectors, min(k, self.index.ntotal))
        return [[self._hit(int(i), float(s)) for i, s in zip(r, sc, strict=True) if i >= 0]
                for r, sc in zip(rows, scores, strict=True)]

    def _hit(self, i: int, score: float) -> Hit:
        p = self.corpus.passage(i)
        return Hit(p.id, p.title, p.text, score, p.raw_contents)

    def __len__(self) -> int:
        return len(self.corpus)

    def __repr__(self) -> str:
        return f"DenseRetriever({str(self.corpus.path)!r}, encoder={self.encoder.name!r}, passages={len(self):,})"


def _built_index(corpus: JsonlCorpus, encoder: E5Encoder, cache_dir: Any) -> Path:
    from agentgym.envs.searchqa.bm25 import file_digest

    faiss = _faiss()
    key = hashlib.sha256(json.dumps([file_digest(corpus.path, cache_dir), encoder.name, encoder.passage_prefix,
                                     encoder.max_length]).encode()).hexdigest()[:32]
    path = cache_base(cache_dir) / "searchqa" / "dense" / f"{key}.Flat.index"
    if path.is_file():
        return path
    index = faiss.IndexFlatIP(encoder.dim)
    batch: list[str] = []
    for i in range(len(corpus)):
        p = corpus.passage(i)
        batch.append(f"{p.title}\n{p.text}" if p.raw_contents is None else p.raw_contents)
        if len(batch) == 1024:
            index.add(encoder.encode(batch, is_query=False))
            batch = []
    if batch:
        index.add(encoder.encode(batch, is_query=False))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    faiss.write_index(index, str(tmp))
    os.replace(tmp, path)
    return path
