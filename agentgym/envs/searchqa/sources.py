"""Where an env's tasks and searches come from: files, rows, a server, or the embedded world.

Explicit arguments win over environment variables, which win over the embedded world:

* tasks: the ``tasks`` argument, else ``$AGENTGYM_SEARCHQA_TASKS`` (or its retired name
  ``$AGENTGYM_SEARCHQA_QUESTIONS``), else a split of the embedded world (a split name given as
  ``tasks`` also means the embedded world);
* searches: the ``retriever`` argument (a ``Retriever`` or a ``/retrieve`` URL), else the
  ``corpus`` argument (BM25), else ``$AGENTGYM_SEARCHQA_RETRIEVER``, else
  ``$AGENTGYM_SEARCHQA_CORPUS``, else the embedded world's corpus when its tasks are used.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

from agentgym._deprecated import alias, renamed_env_var
from agentgym.envs.searchqa.bm25 import BM25_PRESETS, BM25Retriever
from agentgym.envs.searchqa.data import QATask, load_tasks
from agentgym.envs.searchqa.retrievers import HttpRetriever, Retriever
from agentgym.envs.searchqa.synthetic import SPLITS, synthetic_world_folder
from agentgym.errors import ConfigError, DataError

__all__ = ["resolve_sources", "TASKS_ENV_VAR", "CORPUS_ENV_VAR", "RETRIEVER_ENV_VAR"]

TASKS_ENV_VAR = "AGENTGYM_SEARCHQA_TASKS"
_OLD_TASKS_ENV_VAR = "AGENTGYM_SEARCHQA_QUESTIONS"
alias("environment variable", _OLD_TASKS_ENV_VAR, TASKS_ENV_VAR)
CORPUS_ENV_VAR = "AGENTGYM_SEARCHQA_CORPUS"
RETRIEVER_ENV_VAR = "AGENTGYM_SEARCHQA_RETRIEVER"


def resolve_sources(tasks: Any, corpus: Any, retriever: Any, *, long_form: bool, synthetic_size: str | int,
                    synthetic_seed: int, index_dir: Any, cache_dir: Any,
                    bm25: str = "bm25s") -> tuple[list[QATask], Retriever]:
    """The env's tasks and its retriever (see the module docstring for the order)."""
    if tasks is None:
        tasks = _tasks_from_environment() or "train"
    world_corpus = None
    if isinstance(tasks, str) and tasks in SPLITS and not Path(tasks).exists():
        folder = synthetic_world_folder(synthetic_size, synthetic_seed, cache_dir)
        name = f"{tasks}{'.longform' if long_form else ''}.questions.jsonl"
        loaded = _cached_tasks(*_file_key(folder / name))
        world_corpus = folder / "corpus.jsonl"
    elif isinstance(tasks, (str, os.PathLike)):
        loaded = _cached_tasks(*_file_key(Path(tasks)))
    else:
        loaded = tuple(load_tasks(tasks))
    if not loaded:
        raise DataError(f"no tasks in {tasks!r}")
    if bm25 not in BM25_PRESETS:
        raise ConfigError("bm25", bm25, sorted(BM25_PRESETS))
    return list(loaded), _retriever(retriever, corpus, world_corpus, index_dir, cache_dir, bm25)


def _tasks_from_environment() -> str | None:
    return renamed_env_var(TASKS_ENV_VAR, _OLD_TASKS_ENV_VAR)


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
        raise ConfigError("corpus", None, "a passage file or rows, or a retriever, to search for these tasks")
    k1, b = BM25_PRESETS[bm25]
    return BM25Retriever.open(corpus, index_dir=index_dir, cache_dir=cache_dir, k1=k1, b=b)


def _file_key(path: Path) -> tuple[str, int, int]:
    if not path.is_file():
        raise DataError(f"no such task file: {path}")
    st = path.stat()
    return str(path.resolve()), st.st_size, st.st_mtime_ns


@functools.lru_cache(maxsize=32)
def _cached_tasks(path: str, size: int, mtime_ns: int) -> tuple[QATask, ...]:
    # Keyed by size and mtime, so an edited file is read again; envs on one file share the rows.
    return tuple(load_tasks(path))
