"""``agentgym serve-retriever``: serve a corpus over the Search-R1 ``/retrieve`` API.

The app and the corpus loading live in ``agentgym.envs.searchqa.retriever_app`` (the API is described there).
Needs the ``server`` extra: ``pip install 'agentgym-rl[server]'``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentgym.envs.searchqa.retriever_app import create_app, open_corpus_retriever
from agentgym.errors import DependencyNotInstalled

__all__ = ["serve_retriever"]


def serve_retriever(
    corpus: Annotated[str, typer.Argument(help="Passages: a .jsonl/.json/.parquet file (id + contents, or "
                                                "id + title + text), or 'synthetic[:SIZE]' for the embedded world.")],
    host: Annotated[str, typer.Option(help="Interface to bind; 0.0.0.0 to serve other machines.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
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
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
) -> None:
    """Serve a corpus over the Search-R1 /retrieve API, with BM25 or a dense e5 retriever."""
    try:
        import uvicorn
    except ImportError:
        raise DependencyNotInstalled("the retrieval server needs uvicorn: pip install 'agentgym-rl[server]'") from None
    retriever = open_corpus_retriever(corpus, index_dir=index_dir, stem=stem, bm25=bm25, dense_index=dense_index,
                                      encoder=encoder, fp16=fp16)  # agentgym's errors become one line in the CLI
    typer.echo(f"serving {len(retriever):,} passages on http://{host}:{port}/retrieve", err=True)
    uvicorn.run(create_app(retriever, default_topk=topk), host=host, port=port, log_level=log_level)
