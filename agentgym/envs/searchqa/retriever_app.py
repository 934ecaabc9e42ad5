"""The Search-R1 ``/retrieve`` API over the embedded BM25 or a dense retriever (``agentgym serve-retriever``).

One server per cluster (or node) holds the index once and answers every env's searches::

    agentgym serve-retriever corpus.jsonl --host 0.0.0.0 --port 8000
    gymnasium.make("SearchQA-v0", retriever="http://head-node:8000/retrieve", tasks=...)

``POST /retrieve`` takes ``{"queries": [str, ...], "topk": int | null, "return_scores": bool}``
(``topk`` null or 0 means the server's ``--topk``) and answers ``{"result": [...]}``, one list per
query, of ``{"document": doc, "score": float}`` with scores or of ``doc`` without, where
``doc = {"id", "title", "text", "contents"}`` and ``contents`` is the corpus's own, unchanged
(the quoted title, a newline, the text, in Search-R1's corpora). There is no cap on the number
of queries beyond the body size (``MAX_BODY_BYTES``): Search-R1 sends every active query of a
batch in one request (512 prompts x 5 rollouts = 2,560 on a default GRPO run's first turn), and
the server answers them in chunks of ``CHUNK`` queries through the retriever's batched search,
each chunk on a worker thread so other requests keep being served. Bad requests get HTTP 422
with ``{"error": ...}``, a body over the limit 413. ``GET /health`` reports the corpus size.
Needs the ``server`` extra: ``pip install 'agentgym-rl[server]'``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentgym._toolbox import is_int
from agentgym.envs.searchqa.retrievers import Hit, Retriever
from agentgym.errors import DependencyNotInstalled

__all__ = ["create_app", "open_corpus_retriever"]

MAX_BODY_BYTES = 64 << 20
MAX_TOPK = 1000
MAX_QUERY_CHARS = 100_000
CHUNK = 256


def create_app(retriever: Retriever, *, default_topk: int = 3) -> Any:
    """A Starlette app serving ``retriever`` at ``POST /retrieve`` and ``GET /health``."""
    try:
        from starlette.applications import Starlette
        from starlette.concurrency import run_in_threadpool
        from starlette.requests import Request
        from starlette.responses import JSONResponse
        from starlette.routing import Route
    except ImportError:
        raise DependencyNotInstalled("the retrieval server needs starlette: pip install 'agentgym-rl[server]'") from None

    async def retrieve(request: Request) -> JSONResponse:
        raw = await _read_body(request)
        if raw is None:
            return JSONResponse({"error": f"the body is larger than {MAX_BODY_BYTES} bytes"}, status_code=413)
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            return JSONResponse({"error": "the request body is not JSON"}, status_code=422)
        problem = _request_problem(body)
        if problem:
            return JSONResponse({"error": problem}, status_code=422)
        k, with_scores, queries = body.get("topk") or default_topk, bool(body.get("return_scores")), body["queries"]
        result: list[list[dict[str, Any]]] = []
        try:
            for start in range(0, len(queries), CHUNK):
                chunk = await run_in_threadpool(_search_chunk, retriever, queries[start:start + CHUNK], k, with_scores)
                result.extend(chunk)
        except Exception as exc:  # a backend failure is the server's error, reported as such
            return JSONResponse({"error": f"search failed: {type(exc).__name__}: {str(exc)[:300]}"}, status_code=500)
        return JSONResponse({"result": result})

    async def health(request: Request) -> JSONResponse:
        size = len(retriever) if hasattr(retriever, "__len__") else None
        return JSONResponse({"status": "ok", "passages": size})

    return Starlette(routes=[Route("/retrieve", retrieve, methods=["POST"]), Route("/health", health, methods=["GET"])])


async def _read_body(request: Any) -> bytes | None:
    """The body, or None once it passes ``MAX_BODY_BYTES`` (read no further)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return None
    parts, size = [], 0
    async for part in request.stream():
        size += len(part)
        if size > MAX_BODY_BYTES:
            return None
        parts.append(part)
    return b"".join(parts)


def _search_chunk(retriever: Retriever, queries: list[str], k: int, with_scores: bool) -> list[list[dict[str, Any]]]:
    return [_render(hits, with_scores) for hits in retriever.batch_search(queries, k)]


def _request_problem(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    queries = body.get("queries")
    if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
        return "'queries' must be a list of strings"
    if any(len(q) > MAX_QUERY_CHARS for q in queries):
        return f"a query is longer than {MAX_QUERY_CHARS} characters"
    topk = body.get("topk")
    if topk is not None and (not is_int(topk) or not 0 <= topk <= MAX_TOPK):
        return f"'topk' must be null or an int in [0, {MAX_TOPK}]"
    if not isinstance(body.get("return_scores", False), bool):
        return "'return_scores' must be a boolean"
    return None


def _render(hits: list[Hit], with_scores: bool) -> list[dict[str, Any]]:
    if with_scores:
        return [{"document": h.to_document(), "score": h.score} for h in hits]
    return [h.to_document() for h in hits]


def open_corpus_retriever(corpus: str, *, index_dir: Path | None = None, stem: bool = True, bm25: str = "bm25s",
                          dense_index: Path | None = None, encoder: str | None = None, fp16: bool = False) -> Retriever:
    """The retriever of a corpus file (or of the embedded world for ``synthetic[:SIZE]``): BM25, or dense
    when ``encoder`` is given (with Search-R1's prebuilt ``dense_index``, or one built in the cache)."""
    from agentgym.envs.searchqa.bm25 import BM25_PRESETS, BM25Retriever
    from agentgym.envs.searchqa.synthetic import synthetic_world_folder
    from agentgym.errors import ConfigError

    if corpus == "synthetic" or corpus.startswith("synthetic:"):
        size: str | int = corpus.partition(":")[2] or "default"
        size = int(size) if isinstance(size, str) and size.isdigit() else size
        corpus = str(synthetic_world_folder(size) / "corpus.jsonl")
    if encoder is not None or dense_index is not None:
        from agentgym.envs.searchqa.dense import DEFAULT_ENCODER, DenseRetriever

        return DenseRetriever.open(corpus, index=dense_index, encoder=encoder or DEFAULT_ENCODER, fp16=fp16)
    if bm25 not in BM25_PRESETS:
        raise ConfigError("bm25", bm25, sorted(BM25_PRESETS))
    k1, b = BM25_PRESETS[bm25]
    return BM25Retriever.open(corpus, index_dir=index_dir, stemmer="english" if stem else None, k1=k1, b=b)
