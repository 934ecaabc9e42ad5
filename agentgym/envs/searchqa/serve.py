"""``agentgym serve-retriever``: the Search-R1 ``/retrieve`` API over the embedded BM25 retriever.

One server per cluster (or node) holds the index once and answers every env's searches::

    agentgym serve-retriever corpus.jsonl --host 0.0.0.0 --port 8000
    gymnasium.make("SearchQA-v0", retriever="http://head-node:8000/retrieve", questions=...)

``POST /retrieve`` takes ``{"queries": [str, ...], "topk": int | null, "return_scores": bool}``
(``topk`` null or 0 means the server's ``--topk``) and answers ``{"result": [...]}``, one list per
query, of ``{"document": doc, "score": float}`` with scores or of ``doc`` without, where
``doc = {"id", "title", "text", "contents"}`` (``contents`` = quoted title, newline, text, as
in Search-R1). Bad requests get HTTP 422 with ``{"error": ...}``. ``GET /health`` reports the
corpus size. Needs the ``server`` extra: ``pip install 'agentgym[server]'``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agentgym.envs.searchqa.retrievers import Hit, Retriever
from agentgym.errors import DependencyNotInstalled

__all__ = ["create_app", "serve_retriever", "open_corpus_retriever"]

MAX_QUERIES = 1024
MAX_TOPK = 1000
MAX_QUERY_CHARS = 100_000


def create_app(retriever: Retriever, *, default_topk: int = 3) -> Any:
    """A Starlette app serving ``retriever`` at ``POST /retrieve`` and ``GET /health``."""
    try:
        from starlette.applications import Starlette
        from starlette.concurrency import run_in_threadpool
        from starlette.requests import Request
        from starlette.responses import JSONResponse
        from starlette.routing import Route
    except ImportError:
        raise DependencyNotInstalled("the retrieval server needs starlette: pip install 'agentgym[server]'") from None

    async def retrieve(request: Request) -> JSONResponse:
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse({"error": "the request body is not JSON"}, status_code=422)
        problem = _request_problem(body)
        if problem:
            return JSONResponse({"error": problem}, status_code=422)
        k = body.get("topk") or default_topk
        try:
            results = await run_in_threadpool(retriever.batch_search, body["queries"], k)
        except Exception as exc:  # a backend failure is the server's error, reported as such
            return JSONResponse({"error": f"search failed: {type(exc).__name__}: {exc}"}, status_code=500)
        return JSONResponse({"result": [_render(hits, bool(body.get("return_scores"))) for hits in results]})

    async def health(request: Request) -> JSONResponse:
        size = len(retriever) if hasattr(retriever, "__len__") else None
        return JSONResponse({"status": "ok", "passages": size})

    return Starlette(routes=[Route("/retrieve", retrieve, methods=["POST"]), Route("/health", health, methods=["GET"])])


def _request_problem(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    queries = body.get("queries")
    if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
        return "'queries' must be a list of strings"
    if len(queries) > MAX_QUERIES:
        return f"at most {MAX_QUERIES} queries per request"
    if any(len(q) > MAX_QUERY_CHARS for q in queries):
        return f"a query is longer than {MAX_QUERY_CHARS} characters"
    topk = body.get("topk")
    if topk is not None and (isinstance(topk, bool) or not isinstance(topk, int) or not 0 <= topk <= MAX_TOPK):
        return f"'topk' must be null or an int in [0, {MAX_TOPK}]"
    if not isinstance(body.get("return_scores", False), bool):
        return "'return_scores' must be a boolean"
    return None


def _render(hits: list[Hit], with_scores: bool) -> list[dict[str, Any]]:
    if with_scores:
        return [{"document": h.to_document(), "score": h.score} for h in hits]
    return [h.to_document() for h in hits]


def open_corpus_retriever(corpus: str, *, index_dir: Path | None = None, stem: bool = True) -> Retriever:
    """The BM25 retriever of a corpus file, or of the embedded world for ``synthetic[:SIZE]``."""
    from agentgym.envs.searchqa.bm25 import BM25Retriever
    from agentgym.envs.searchqa.synthetic import synthetic_world_folder

    if corpus == "synthetic" or corpus.startswith("synthetic:"):
        size: str | int = corpus.partition(":")[2] or "default"
        size = int(size) if isinstance(size, str) and size.isdigit() else size
        corpus = str(synthetic_world_folder(size) / "corpus.jsonl")
    return BM25Retriever.open(corpus, index_dir=index_dir, stemmer="english" if stem else None)


def serve_retriever(
    corpus: Annotated[str, typer.Argument(help="Passages: a .jsonl/.json/.parquet file (id + contents, or "
                                                "id + title + text), or 'synthetic[:SIZE]' for the embedded world.")],
    host: Annotated[str, typer.Option(help="Interface to bind; 0.0.0.0 to serve other machines.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    topk: Annotated[int, typer.Option(help="Passages per query when a request sends no topk.")] = 3,
    index_dir: Annotated[Path | None, typer.Option(help="Where to keep the BM25 index (default: next to "
                                                        "the corpus, or the agentgym cache).")] = None,
    stem: Annotated[bool, typer.Option(help="Snowball English stemming of corpus and queries.")] = True,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
) -> None:
    """Serve a corpus over the Search-R1 /retrieve API with the embedded BM25 retriever."""
    try:
        import uvicorn
    except ImportError:
        raise DependencyNotInstalled("the retrieval server needs uvicorn: pip install 'agentgym[server]'") from None
    retriever = open_corpus_retriever(corpus, index_dir=index_dir, stem=stem)
    typer.echo(f"serving {len(retriever):,} passages on http://{host}:{port}/retrieve", err=True)
    uvicorn.run(create_app(retriever, default_topk=topk), host=host, port=port, log_level=log_level)
