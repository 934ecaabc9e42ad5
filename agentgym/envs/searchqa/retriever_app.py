"""The Search-R1 ``/retrieve`` API over the embedded BM25 or a dense retriever (``agentgym serve-retriever``).

One server per cluster (or node) holds the index once and answers every env's searches::

    agentgym serve-retriever corpus.jsonl --host 0.0.0.0 --port 8000
    gymnasium.make("SearchQA-v0", retriever="http://head-node:8000/retrieve", tasks=...)

``POST /retrieve`` takes ``{"queries": [str, ...], "topk": int | null, "return_scores": bool}``
(``topk`` null or 0 means the server's ``--topk``) and answers ``{"result": [...]}``, one list per
query, of ``{"document": doc, "score": float}`` with scores or of ``doc`` without, where
``doc = {"id", "title", "text", "contents"}`` and ``contents`` is the corpus's own, unchanged
(the quoted title, a newline, the text, in Search-R1's corpora). Search-R1 sends every active
query of a batch in one request (512 prompts x 5 rollouts = 2,560 on a default GRPO run's first
turn), so one request may carry many queries; what it may cost is bounded before any search
(``RetrieverConfig``): its body, each query's and all queries' characters, and queries x topk
(the results it asks for). Its reply is built within ``max_reply_bytes``.

Requests are searched ``max_searches`` at a time (each client: its share, with ``tokens``); a
request waits up to ``queue_timeout_s`` for its turn before its body is read. Parsing, searching
and rendering run on a worker thread, so ``GET /health`` (the corpus size) answers meanwhile.
Refusals are ``{"error": ...}`` naming the limit: 401 without a valid token (when ``tokens`` are
set), 408 a body slower than ``body_timeout_s``, 413 a body over ``max_body_bytes``, 422 a bad
request or one over a limit, 429 the client's share of searches busy, 503 every search slot busy.
Needs the ``server`` extra: ``pip install 'agentgym-rl[server]'``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from agentgym._http import json_bytes
from agentgym._settings import Settings
from agentgym._toolbox import is_int
from agentgym.envs.searchqa.retrievers import Hit, Retriever
from agentgym.errors import ConfigError, DependencyNotInstalled

__all__ = ["create_app", "open_corpus_retriever", "RetrieverConfig", "TOKENS_ENV_VAR"]

CHUNK = 256
"""Queries searched and rendered at a time (the retriever's batch)."""
TOKENS_ENV_VAR = "AGENTGYM_RETRIEVER_TOKENS"
"""Comma-separated bearer tokens ``serve-retriever`` accepts when ``--token`` is not given."""
_ANONYMOUS = "anonymous"
_PARSED_ON_THE_LOOP = 64 << 10
"""Bodies up to this size are parsed and checked on the event loop; larger ones on a worker thread."""


class RetrieverConfig(Settings):
    """Access and limits of ``agentgym serve-retriever``; every field has a safe default."""

    tokens: tuple[str, ...] = ()
    """Accepted bearer tokens, one per client; empty: the route is open (as Search-R1's server)."""
    default_topk: int = Field(3, ge=1)
    """Passages per query when a request sends no ``topk`` (``--topk``); at most ``max_topk``."""
    max_body_bytes: int = Field(8 << 20, ge=1024)
    """Larger request bodies are refused (413) before they are read whole."""
    max_query_chars: int = Field(100_000, ge=1)
    """Characters of one query (422)."""
    max_total_query_chars: int = Field(1_000_000, ge=1)
    """Characters of all the queries of one request (422): about 3 s of BM25 CPU on one core."""
    max_topk: int = Field(1000, ge=1)
    """Largest ``topk`` a request may ask for (422)."""
    max_results: int = Field(10_000, ge=1)
    """Queries x topk of one request (422): Search-R1's 2,560 queries x 3 fit."""
    max_reply_bytes: int = Field(32 << 20, ge=1024)
    """Largest reply; a request whose passages would make it larger is refused (422) once they pass it."""
    max_searches: int = Field(4, ge=1)
    """Requests being searched at once, across clients."""
    max_searches_per_client: int | None = Field(None, ge=1)
    """Requests of one token searched at once; None: an equal share of ``max_searches``."""
    queue_timeout_s: float = Field(5.0, gt=0)
    """How long a request waits for a search slot before 429 (its client's share) or 503 (all of them)."""
    body_timeout_s: float = Field(15.0, gt=0)
    """A body must arrive within this long once its request has a slot (408)."""

    @model_validator(mode="after")
    def _default_within_max(self) -> RetrieverConfig:
        if self.default_topk > self.max_topk:
            raise ConfigError("default_topk", self.default_topk, f"an int from 1 to max_topk ({self.max_topk})")
        return self

    @property
    def per_client_searches(self) -> int:
        if self.max_searches_per_client is not None:
            return self.max_searches_per_client
        return max(1, self.max_searches // max(1, len(self.tokens)))

    @classmethod
    def with_env_tokens(cls, **fields: Any) -> RetrieverConfig:
        """A config whose tokens, when not given, come from ``$AGENTGYM_RETRIEVER_TOKENS``."""
        if not fields.get("tokens"):
            fields["tokens"] = tuple(t.strip() for t in os.environ.get(TOKENS_ENV_VAR, "").split(",") if t.strip())
        return cls(**fields)


class _Refused(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self.status, self.message, self.headers = status, message, headers
        super().__init__(message)


def create_app(retriever: Retriever, *, default_topk: int | None = None, config: RetrieverConfig | None = None) -> Any:
    """A Starlette app serving ``retriever`` at ``POST /retrieve`` and ``GET /health`` (``default_topk``,
    when given, replaces ``config.default_topk``)."""
    try:
        from starlette.applications import Starlette
        from starlette.concurrency import run_in_threadpool
        from starlette.requests import Request
        from starlette.responses import JSONResponse, Response, StreamingResponse
        from starlette.routing import Route
    except ImportError:
        raise DependencyNotInstalled("the retrieval server needs starlette: pip install 'agentgym-rl[server]'") from None
    config = config or RetrieverConfig()
    if default_topk is not None:
        config = RetrieverConfig(**{**config.model_dump(), "default_topk": default_topk})
    owners = {hashlib.sha256(t.encode()).digest(): f"client-{i}" for i, t in enumerate(config.tokens)}
    slots = _Slots(config.max_searches, config.per_client_searches, config.queue_timeout_s)

    async def retrieve(request: Request) -> Response:
        try:
            owner = _owner(owners, request.headers.get("authorization", ""))
            async with slots.held(owner):
                raw = await _read_body(request, config)
                if len(raw) <= _PARSED_ON_THE_LOOP:  # a thread hop costs more than parsing it
                    parts, size = await run_in_threadpool(_search, retriever, _checked(raw, config), config)
                else:
                    parts, size = await run_in_threadpool(_answer, retriever, raw, config)
        except _Refused as refused:
            return JSONResponse({"error": refused.message}, status_code=refused.status, headers=refused.headers)
        return StreamingResponse(_stream(parts), media_type="application/json", headers={"content-length": str(size)})

    async def health(request: Request) -> JSONResponse:
        size = len(retriever) if hasattr(retriever, "__len__") else None
        return JSONResponse({"status": "ok", "passages": size})

    return Starlette(routes=[Route("/retrieve", retrieve, methods=["POST"]), Route("/health", health, methods=["GET"])])


class _Slots:
    """Searches under way: at most ``total`` at once and ``share`` per client; a request waits up
    to ``wait_s`` for one (its client's share first), then is refused naming the limit."""

    def __init__(self, total: int, share: int, wait_s: float) -> None:
        self.total, self.share, self.wait_s = total, share, wait_s
        self.busy: Counter[str] = Counter()
        self._freed = asyncio.Event()

    def _blocked_by(self, owner: str) -> str | None:
        if self.busy[owner] >= self.share:
            return "max_searches_per_client"
        return "max_searches" if sum(self.busy.values()) >= self.total else None

    @contextlib.asynccontextmanager
    async def held(self, owner: str) -> AsyncIterator[None]:
        await self._acquire(owner)
        try:
            yield
        finally:
            self._release(owner)

    async def _acquire(self, owner: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_s
        while (limit := self._blocked_by(owner)) is not None:
            try:
                await asyncio.wait_for(self._freed.wait(), deadline - loop.time())
            except TimeoutError:
                limit_value = self.share if limit == "max_searches_per_client" else self.total
                scope = "this client's" if limit == "max_searches_per_client" else "the server's"
                raise _Refused(429 if limit == "max_searches_per_client" else 503,
                               f"{scope} {limit_value} search slot(s) stayed busy for {self.wait_s:g} s ({limit}); "
                               "retry shortly", {"Retry-After": "1"}) from None
        self.busy[owner] += 1

    def _release(self, owner: str) -> None:
        self.busy[owner] -= 1
        if self.busy[owner] <= 0:
            del self.busy[owner]
        self._freed.set()  # every waiter looks again; later ones wait on a new event
        self._freed = asyncio.Event()


def _owner(owners: dict[bytes, str], authorization: str) -> str:
    if not owners:
        return _ANONYMOUS
    scheme, _, token = authorization.partition(" ")
    owner = owners.get(hashlib.sha256(token.strip().encode()).digest()) if scheme.lower() == "bearer" else None
    if owner is None:
        raise _Refused(401, "a valid 'Authorization: Bearer <token>' header is required",
                       {"WWW-Authenticate": "Bearer"})
    return owner


async def _read_body(request: Any, config: RetrieverConfig) -> bytes:
    """The body, within ``max_body_bytes`` (read no further) and ``body_timeout_s``."""
    limit = config.max_body_bytes
    declared = request.headers.get("content-length")
    too_large = _Refused(413, f"the body is larger than {limit} bytes (max_body_bytes)", {"Connection": "close"})
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise too_large
    parts, size = [], 0
    try:
        async with asyncio.timeout(config.body_timeout_s):
            async for part in request.stream():
                size += len(part)
                if size > limit:
                    raise too_large
                parts.append(part)
    except TimeoutError:
        raise _Refused(408, f"the body did not arrive within {config.body_timeout_s:g} s (body_timeout_s)",
                       {"Connection": "close"}) from None
    return b"".join(parts)


def _answer(retriever: Retriever, raw: bytes, config: RetrieverConfig) -> tuple[list[bytes], int]:
    """The reply's parts and size (on a worker thread): the request checked, searched and rendered."""
    return _search(retriever, _checked(raw, config), config)


def _checked(raw: bytes, config: RetrieverConfig) -> dict[str, Any]:
    """The request, parsed and within the limits, or ``_Refused`` (422)."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise _Refused(422, "the request body is not JSON") from None
    problem = _request_problem(body, config)
    if problem:
        raise _Refused(422, problem)
    return body


def _search(retriever: Retriever, body: dict[str, Any], config: RetrieverConfig) -> tuple[list[bytes], int]:
    k, with_scores, queries = body.get("topk") or config.default_topk, bool(body.get("return_scores")), body["queries"]
    parts, size = [b'{"result":['], 0
    for start in range(0, len(queries), CHUNK):
        try:
            hits = retriever.batch_search(queries[start:start + CHUNK], k)
            chunk = json_bytes([_render(h, with_scores) for h in hits])[1:-1]
        except Exception as exc:  # a backend failure is the server's error, reported as such
            raise _Refused(500, f"search failed: {type(exc).__name__}: {str(exc)[:300]}") from None
        size += len(chunk) + 1
        if size > config.max_reply_bytes:
            raise _Refused(422, f"the reply would pass {config.max_reply_bytes} bytes (max_reply_bytes) after "
                           f"{start + len(hits)} of {len(queries)} queries; send fewer queries or a smaller topk")
        parts.append(b"," + chunk if start else chunk)
    parts.append(b"]}")
    return parts, sum(map(len, parts))


async def _stream(parts: list[bytes]) -> Any:
    for part in parts:
        yield part


def _request_problem(body: Any, config: RetrieverConfig) -> str | None:
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    queries = body.get("queries")
    if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
        return "'queries' must be a list of strings"
    longest, total = max(map(len, queries), default=0), sum(map(len, queries))
    if longest > config.max_query_chars:
        return f"a query has {longest} characters; the limit is {config.max_query_chars} (max_query_chars)"
    if total > config.max_total_query_chars:
        return (f"the queries have {total} characters in all; the limit is {config.max_total_query_chars} "
                "(max_total_query_chars): send them in several requests")
    topk = body.get("topk")
    if topk is not None and (not is_int(topk) or not 0 <= topk <= config.max_topk):
        return f"'topk' must be null or an int in [0, {config.max_topk}] (max_topk)"
    k = topk or config.default_topk
    if len(queries) * k > config.max_results:
        return (f"{len(queries)} queries x topk {k} = {len(queries) * k} results; the limit is "
                f"{config.max_results} (max_results): send fewer queries per request or a smaller topk")
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
