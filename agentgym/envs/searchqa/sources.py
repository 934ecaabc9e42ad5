"""Where an env's questions and searches come from: files, rows, a server, or the embedded world.

Explicit arguments win over environment variables, which win over the embedded world:

* questions: the ``questions`` argument, else ``$AGENTGYM_SEARCHQA_QUESTIONS``, else a split of
  the embedded world (a split name given as ``questions`` also means the embedded world);
* searches: the ``retriever`` argument (a ``Retriever`` or a ``/retrieve`` URL), else the
  ``corpus`` argument (BM25), else ``$AGENTGYM_SEARCHQA_RETRIEVER``, else
  ``$AGENTGYM_SEARCHQA_CORPUS``, else the embedded world's corpus when its questions are used.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

from agentgym.envs.searchqa.bm25 import BM25_PRESETS, BM25Retriever
from agentgym.envs.searchqa.data import Question, load_questions
from agentgym.envs.searchqa.retrievers import HttpRetriever, Retriever
from agentgym.envs.searchqa.synthetic import SPLITS, synthetic_world_folder
from agentgym.errors import ConfigError, DataError

__all__ = ["resolve_sources", "QUESTIONS_ENV_VAR", "CORPUS_ENV_VAR", "RETRIEVER_ENV_VAR"]

QUESTIONS_ENV_VAR = "AGENTGYM_SEARCHQA_QUESTIONS"
CORPUS_ENV_VAR = "AGENTGYM_SEARCHQA_CORPUS"
RETRIEVER_ENV_VAR = "AGENTGYM_SEARCHQA_RETRIEVER"


def resolve_sources(questions: Any, corpus: Any, retriever: Any, *, long_form: bool, synthetic_size: str | int,
                    synthetic_seed: int, index_dir: Any, cache_dir: Any,
                    bm25: str = "bm25s") -> tuple[list[Question], Retriever]:
    """The env's questions and its retriever (see the module docstring for the order)."""
    if questions is None:
        questions = os.environ.get(QUESTIONS_ENV_VAR) or "train"
    world_corpus = None
    if isinstance(questions, str) and questions in SPLITS and not Path(questions).exists():
        folder = synthetic_world_folder(synthetic_size, synthetic_seed, cache_dir)
        name = f"{questions}{'.longform' if long_form else ''}.questions.jsonl"
        loaded = _cached_questions(*_file_key(folder / name))
        world_corpus = folder / "corpus.jsonl"
    elif isinstance(questions, (str, os.PathLike)):
        loaded = _cached_questions(*_file_key(Path(questions)))
    else:
        loaded = tuple(load_questions(questions))
    if not loaded:
        raise DataError(f"no questions in {questions!r}")
    if bm25 not in BM25_PRESETS:
        raise ConfigError("bm25", bm25, sorted(BM25_PRESETS))
    return list(loaded), _retriever(retriever, corpus, world_corpus, index_dir, cache_dir, bm25)


def _retriever(retriever: Any, corpus: Any, world_corpus: Path | None, index_dir: Any, cache_dir: Any,
               bm25: str) -> Retriever:
    if retriever is None and corpus is None:
        retriever = os.environ.get(RETRIEVER_ENV_VAR) or None
        corpus = os.environ.get(CORPUS_ENV_VAR) or world_corpus
    if retriever is not None:
        if isinstance(retriever, str):
            return HttpRetriever(retriever)
        if isinstance(retriever, Retriever):
            return retriever
        raise ConfigError("retriever", retriever, "a Retriever (search, batch_search) or a /retrieve URL")
    if corpus is None:
        raise ConfigError("corpus", None, "a passage file or rows, or a retriever, to search for these questions")
    k1, b = BM25_PRESETS[bm25]
    return BM25Retriever.open(corpus, index_dir=index_dir, cache_dir=cache_dir, k1=k1, b=b)


def _file_key(path: Path) -> tuple[str, int, int]:
    if not path.is_file():
        raise DataError(f"no such question file: {path}")
    st = path.stat()
    return str(path.resolve()), st.st_size, st.st_mtime_ns


@functools.lru_cache(maxsize=32)
def _cached_questions(path: str, size: int, mtime_ns: int) -> tuple[Question, ...]:
    # Keyed by size and mtime, so an edited file is read again; envs on one file share the rows.
    return tuple(load_questions(path))
