"""verl training rows for agentgym envs: one row per task of a split or task file.

Each row has the columns verl's ``RLHFDataset`` reads::

    prompt          [{"role": "user", "content": <the env's first observation>}] (+ a system prompt)
    data_source     verl groups validation metrics by it, and its reward dispatcher picks the scorer by it.
                    Search QA: ``data_source=`` (``--data-source``), else the task's own field, else
                    the dataset named in the task file's name (``hotpotqa_dev.jsonl``: ``hotpotqa``,
                    with a note on stderr); a task file naming none is refused. The names Search-R1's
                    trainer scores (``nq``, ``hotpotqa``...) and verl's (``searchR1_nq``...) both work.
                    The embedded world and TravelPlanner: the env id (the agent loop scores them itself)
    reward_model    {"style": "env", "ground_truth": <task id>} (TravelPlanner), or Search-R1's
                    {"style": "rule", "ground_truth": {"target": [gold answers]}} (search QA), which
                    Search-R1's and verl's ``qa_em`` read as they are
    extra_info      Search-R1's {"split", "index"} (split: ``train``/``dev``/``test`` when the file name
                    says so), then {"env_id", "env_kwargs" (JSON), "task_index", "reward" (JSON),
                    "task_id"} (+ "question" for search QA)
    agent_name      "agentgym"
    ability         "fact-reasoning" for search QA (Search-R1's), else "agentgym"
    id, question, golden_answers   search QA: the question row's own fields, as Search-R1's rows keep them

The agent loop rebuilds the env from ``extra_info`` on the Ray workers, so paths in
``env_kwargs`` (task files, databases, corpora) are made absolute and must exist there too.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentgym._deprecated import renamed_kwargs
from agentgym.registration import ENV_IDS
from agentgym.errors import ConfigError, DependencyNotInstalled

__all__ = ["prepare_rows", "write_parquet", "read_parquet"]

SEARCH_R1_DATA_SOURCES = ("nq", "triviaqa", "popqa", "hotpotqa", "2wikimultihopqa", "musique", "bamboogle")
"""The datasets Search-R1's trainer scores with ``qa_em``; verl's dispatcher knows them as ``searchR1_<name>``."""
_SPLITS = {"train": "train", "dev": "dev", "val": "dev", "validation": "dev", "test": "test"}



@renamed_kwargs({"queries": "tasks"})
def prepare_rows(env_id: str, *, split: str | None = None, tasks: str | os.PathLike[str] | None = None,
                 env_kwargs: Mapping[str, Any] | None = None, reward: Any = None, limit: int | None = None,
                 start: int = 0, system_prompt: str | None = None, agent_name: str = "agentgym",
                 data_source: str | None = None) -> list[dict[str, Any]]:
    """One verl row per task (``start`` .. ``start + limit``) of ``split`` or of the ``tasks`` file,
    for any registered env with a ``tasks`` list (the split or file is its ``tasks=`` kwarg). Your
    own env's id is ``"your_module:YourEnv-v0"``: the rows keep it, so each Ray worker imports the
    module that registers the env before it builds one.

    ``data_source`` names the dataset of rows whose task file does not (a FlashRAG ``nq`` file)."""
    if split is not None and tasks is not None:
        raise ConfigError("split", split, "either a split or a task file, not both")
    kwargs = _absolute_paths(dict(env_kwargs or {}))
    source = tasks if tasks is not None else split
    if source is not None:
        kwargs["tasks"] = _absolute_path(str(source))
    if reward is not None:
        from agentgym.rewards import build_shaper

        build_shaper(reward)  # fail here, not on the cluster
    env = _make(env_id, kwargs)
    try:
        loaded = _tasks(env)
        stop = len(loaded) if limit is None else min(len(loaded), start + limit)
        split_name = split if split is not None else _split_of(Path(str(tasks)).name) if tasks else None
        fallback = None
        if env_id == "SearchQA-v0" and tasks is not None and data_source is None:
            fallback = _source_of_file(loaded[start:stop], tasks)
        return [_row(env, env_id, i, kwargs, reward, system_prompt, agent_name, data_source or fallback, split_name,
                     override=data_source is not None) for i in range(start, stop)]
    finally:
        env.close()


def write_parquet(rows: Sequence[Mapping[str, Any]], path: str | os.PathLike[str]) -> Path:
    """Write rows as a parquet file verl reads (``data.train_files`` / ``data.val_files``)."""
    pa, pq = _pyarrow()
    if not rows:
        raise ConfigError("rows", [], "at least one row")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist([dict(r) for r in rows]), out)
    return out


def read_parquet(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows of a parquet file, as plain dicts."""
    _, pq = _pyarrow()
    return pq.read_table(path).to_pylist()


def _row(env: Any, env_id: str, index: int, kwargs: dict[str, Any], reward: Any, system_prompt: str | None,
         agent_name: str, data_source: str | None, split: str | None, *, override: bool) -> dict[str, Any]:
    observation, info = env.reset(options={"task_index": index})
    prompt = ([{"role": "system", "content": system_prompt}] if system_prompt else []) + [
        {"role": "user", "content": observation}]
    extra_info = {"index": index, "split": split, "env_id": env_id, "env_kwargs": json.dumps(kwargs, sort_keys=True),
                  "task_index": index, "reward": json.dumps(reward), "task_id": str(info.get("task_id"))}
    from agentgym.envs.searchqa.data import QATask

    task = getattr(env.unwrapped, "task", None)
    if not isinstance(task, QATask):  # TravelPlanner: no gold plan; the env evaluates against the task
        source, reward_model = env_id, {"style": "env", "ground_truth": str(info.get("task_id"))}
        return {"prompt": prompt, "data_source": source, "reward_model": reward_model, "extra_info": extra_info,
                "agent_name": agent_name, "ability": "agentgym"}
    # search QA: Search-R1's row layout, so its trainer and qa_em (and verl's) read agentgym rows too
    source = (data_source if override else task.data_source or data_source) or env_id
    golds = [str(a) for a in task.golden_answers]
    extra_info["question"] = task.text
    return {"prompt": prompt, "data_source": source, "ability": "fact-reasoning",
            "reward_model": {"style": "rule", "ground_truth": {"target": golds}}, "extra_info": extra_info,
            "agent_name": agent_name, "id": task.id, "question": task.text, "golden_answers": golds}


def _split_of(file_name: str) -> str:
    """Search-R1's split name when the file name has one (``nq_train.jsonl``: ``train``), else its stem."""
    stem = file_name.split(".")[0]
    for word in re.split(r"[^a-z]+", stem.lower()):
        if word in _SPLITS:
            return _SPLITS[word]
    return stem


def _source_of_file(tasks: Sequence[Any], path: Any) -> str | None:
    """None when every task names its dataset; else the one the file name names (with a note), or a
    ``ConfigError``: a row without a data_source verl's reward dispatcher knows is not exported."""
    if all(getattr(t, "data_source", None) for t in tasks):
        return None
    name = Path(str(path)).name
    words = [re.sub(r"\d+$", "", w) for w in re.split(r"[^a-z0-9]+", name.lower())]
    named = list(dict.fromkeys(w for w in words if w in SEARCH_R1_DATA_SOURCES))
    if len(named) != 1:
        raise ConfigError("data_source", None, "a dataset name for rows whose task file names none (--data-source "
                          f"{'/'.join(SEARCH_R1_DATA_SOURCES)}, or verl's searchR1_<name>); the file name {name!r} "
                          + (f"names several: {named}" if named else "names none"))
    found = named[0]
    print(f"agentgym: data_source {found!r} taken from the file name {name!r} (--data-source sets it)",
          file=sys.stderr)
    return found


def _tasks(env: Any) -> Sequence[Any]:
    inner = env.unwrapped
    tasks = getattr(inner, "tasks", None)
    if tasks is not None:
        return tasks
    raise ConfigError("env_id", inner.spec.id if inner.spec else type(inner).__name__, "an env with a task list")


def _make(env_id: str, kwargs: dict[str, Any]) -> Any:
    import gymnasium

    import agentgym  # noqa: F401  (registers the env ids)

    try:  # "module:Env-v0" imports the module that registers it first (here and on every Ray worker)
        return gymnasium.make(env_id, **kwargs)
    except gymnasium.error.UnregisteredEnv as exc:
        raise ConfigError("env_id", env_id, f"a registered env id with a task list, e.g. {list(ENV_IDS)}, or "
                          f"'your_module:YourEnv-v0' ({exc})") from None


def _absolute_paths(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: _absolute_path(v) if isinstance(v, str) else v for k, v in kwargs.items()}


def _absolute_path(value: str) -> str:
    # Relative paths would resolve against each Ray worker's own working directory.
    # Only path-like values (a separator or a suffix) are touched, never split names like "train".
    path = Path(value).expanduser()
    looks_like_path = os.sep in value or bool(path.suffix)
    return str(path.resolve()) if looks_like_path and path.exists() and not path.is_absolute() else value


def _pyarrow() -> tuple[Any, Any]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise DependencyNotInstalled("writing verl parquet rows needs pyarrow: pip install 'agentgym-rl[parquet]'") from exc
    return pa, pq

