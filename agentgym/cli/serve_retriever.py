"""``agentgym serve-retriever``: serve a corpus over the Search-R1 ``/retrieve`` API.

The app and the corpus loading live in ``agentgym.envs.searchqa.retriever_app`` (the API is described there).
Needs the ``server`` extra: ``pip install 'agentgym-rl[server]'``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentgym.cli._front_door import BodyTimeout, HeaderTimeout, Host, LogLevel, Port, serve_uvicorn
from agentgym.envs.searchqa.retriever_app import TOKENS_ENV_VAR, RetrieverConfig, create_app, open_corpus_retriever
from agentgym.errors import ConfigError, DependencyNotInstalled

__all__ = ["serve_retriever"]


def serve_retriever(
    corpus: Annotated[str, typer.Argument(help="Passages: a .jsonl/.json/.parquet file (id + contents, or "
                                                "id + title + text), or 'synthetic[:SIZE]' for the embedded world.")],
    host: Host = "127.0.0.1",
    port: Port = 8000,
    topk: Annotated[int, typer.Option(help="Passages per query when a request sends no topk.")] = 3,
    index_dir: Annotated[Path | None, typer.Option(help="Where to keep the BM25 index: an empty folder or one "
                                                        "agentgym made (default: the agentgym cache).")] = None,
    stem: Annotated[bool, typer.Option(help="Snowball English stemming of corpus and queries.")] = True,
    bm25: Annotated[str, typer.Option(help="BM25 parameters: bm25s (k1 1.5, b 0.75) or pyserini "
                                           "(k1 0.9, b 0.4, Search-R1's BM25 baseline).")] = "bm25s",
    dense_index: Annotated[Path | None, typer.Option(help="A prebuilt FAISS index (Search-R1's e5_Flat.index) "
                                                          "for dense retrieval (needs the dense extra).")] = None,
    encoder: Annotated[str | None, typer.Option(help="Dense retrieval with this e5 encoder (name or path, e.g. "
                                                     "intfloat/e5-base-v2); without --dense-index a Flat index "
                                                     "is built in the cache.")] = None,
    fp16: Annotated[bool, typer.Option(help="Dense: encode queries in half precision, as Search-R1's "
                                            "retrieval server does by default.")] = False,
    token: Annotated[list[str] | None, typer.Option(
        help=f"Accepted bearer token, one per client (repeat). Default: ${TOKENS_ENV_VAR}, comma-separated; "
             "with neither, the route is open, as Search-R1's server is.")] = None,
    max_body_bytes: Annotated[int, typer.Option(help="Largest request body (413).")] = 8 << 20,
    max_query_chars: Annotated[int, typer.Option(help="Characters of one query (422).")] = 100_000,
    max_total_query_chars: Annotated[int, typer.Option(help="Characters of all of a request's queries (422).")]
    = 1_000_000,
    max_topk: Annotated[int, typer.Option(help="Largest topk a request may ask for (422).")] = 1000,
    max_results: Annotated[int, typer.Option(help="Queries x topk of one request (422).")] = 10_000,
    max_reply_bytes: Annotated[int, typer.Option(help="Largest reply (422 once the passages pass it).")] = 32 << 20,
    max_searches: Annotated[int, typer.Option(help="Requests searched at once, across clients.")] = 4,
    max_searches_per_client: Annotated[int | None, typer.Option(
        help="Requests of one token searched at once. Default: an equal share of --max-searches.")] = None,
    queue_timeout: Annotated[float, typer.Option(
        help="Seconds a request waits for a search slot before 429 (its token's share) or 503.")] = 5.0,
    body_timeout: BodyTimeout = 15.0,
    header_timeout: HeaderTimeout = 10.0,
    log_level: LogLevel = "info",
) -> None:
    """Serve a corpus over the Search-R1 /retrieve API, with BM25 or a dense e5 retriever."""
    try:
        import uvicorn  # noqa: F401
    except ImportError:
        raise DependencyNotInstalled("the retrieval server needs uvicorn: pip install 'agentgym-rl[server]'") from None
    try:
        config = RetrieverConfig.with_env_tokens(
            tokens=tuple(token or ()), default_topk=topk, max_body_bytes=max_body_bytes,
            max_query_chars=max_query_chars,
            max_total_query_chars=max_total_query_chars, max_topk=max_topk, max_results=max_results,
            max_reply_bytes=max_reply_bytes, max_searches=max_searches, max_searches_per_client=max_searches_per_client,
            queue_timeout_s=queue_timeout, body_timeout_s=body_timeout)
    except ConfigError as exc:
        raise typer.BadParameter(str(exc)) from None
    retriever = open_corpus_retriever(corpus, index_dir=index_dir, stem=stem, bm25=bm25, dense_index=dense_index,
                                      encoder=encoder, fp16=fp16)  # agentgym's errors become one line in the CLI
    auth = f"{len(config.tokens)} token(s)" if config.tokens else "no token"
    typer.echo(f"serving {len(retriever):,} passages on http://{host}:{port}/retrieve ({auth})", err=True)
    app = create_app(retriever, config=config)
    serve_uvicorn(app, header_timeout, host=host, port=port, log_level=log_level)

