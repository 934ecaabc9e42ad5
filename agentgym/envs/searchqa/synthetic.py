"""The embedded world: a generated knowledge base of fictional entities, its passages and questions.

``draw_world(size, seed=0)`` builds, from one seeded generator and nothing else:

* a knowledge base of fictional countries, cities, universities, people, companies and works
  (novels, films, albums) linked by relations (born in, studied at, founded, headquartered in,
  lies in, created by), with names made of syllables, so no model has seen them in pretraining;
* one passage per entity (title = the entity's name), ``size`` passages in all;
* short-answer questions: 30% single-hop, 45% two-hop bridge, 25% comparison (HotpotQA's
  kinds), each with its gold answer and the ids of its supporting passages;
* long-form ``profile`` questions (one per ten short ones) whose reference answer states the
  entity's facts.

Sizes: ``"small"`` (1,000 passages, 500 questions), ``"default"`` (5,000 passages, 2,500
questions), ``"large"`` (50,000 passages, 10,000 questions), or any int >= 100 (passages; the
task count is half of it, between 100 and 10,000, unless ``n_tasks`` is given).
Questions are split 80/10/10 into ``train``, ``validation`` and ``test``; their ids are
``<split>-<n>``. The same size and seed give byte-identical files on every machine.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from agentgym._toolbox import is_int
from agentgym.envs.searchqa._kb import MIN_PASSAGES, build_kb
from agentgym.envs.searchqa._passages import render_passages
from agentgym.envs.searchqa._questions import Draft, draw_profile, draw_short
from agentgym.envs.searchqa.data import Passage, QATask
from agentgym._deprecated import renamed_attribute, renamed_kwargs
from agentgym.errors import ConfigError

__all__ = ["SIZES", "SPLITS", "SyntheticWorld", "draw_world", "write_world", "synthetic_world_folder",
           "cache_base", "CACHE_ENV_VAR"]

SIZES = {"small": 1_000, "default": 5_000, "large": 50_000}
SPLITS = ("train", "validation", "test")
GENERATOR_VERSION = "1"
CACHE_ENV_VAR = "AGENTGYM_CACHE_DIR"
_SPLIT_SHARES = (0.8, 0.1, 0.1)


@dataclass(frozen=True)
class SyntheticWorld:
    size: int
    seed: int
    passages: list[Passage]
    tasks: list[QATask]
    """Every task, short and long form; ``metadata["split"]`` names its split."""

    def split(self, name: str, long_form: bool = False) -> list[QATask]:
        return [t for t in self.tasks if t.metadata["split"] == name and t.long_form == long_form]

    questions = renamed_attribute("SyntheticWorld", "questions", "tasks")


def resolve_size(size: str | int) -> int:
    if isinstance(size, str) and size in SIZES:
        return SIZES[size]
    if is_int(size) and size >= MIN_PASSAGES:
        return size
    raise ConfigError("synthetic_size", size, f"one of {sorted(SIZES)} or an int >= {MIN_PASSAGES}")


@renamed_kwargs({"n_questions": "n_tasks"})
def draw_world(size: str | int = "default", *, seed: int = 0, n_tasks: int | None = None) -> SyntheticWorld:
    """Generate the knowledge base, its passages and its questions (see the module docstring)."""
    n_passages = resolve_size(size)
    n_short = n_tasks if n_tasks is not None else min(10_000, max(100, n_passages // 2))
    rng = random.Random(seed)
    kb = build_kb(n_passages, rng)
    passages, ids = render_passages(kb, rng)
    seen: set[str] = set()
    short = _draw(lambda: draw_short(kb, rng), n_short, seen)
    long = _draw(lambda: draw_profile(kb, rng), max(10, n_short // 10), seen)
    questions = _assign_splits(short, ids, "short") + _assign_splits(long, ids, "long")
    return SyntheticWorld(n_passages, seed, passages, questions)


def _draw(make, n: int, seen: set[str]) -> list[Draft]:
    out: list[Draft] = []
    for _ in range(n * 20):  # duplicates and ties are redrawn; bounded so a tiny world ends
        if len(out) == n:
            break
        draft = make()
        if draft is not None and draft.question not in seen:
            seen.add(draft.question)
            out.append(draft)
    return out


def _assign_splits(drafts: list[Draft], ids: dict[str, str], answer_type: str) -> list[QATask]:
    bounds = [round(len(drafts) * sum(_SPLIT_SHARES[:i + 1])) for i in range(len(SPLITS))]
    out, start = [], 0
    for split, end in zip(SPLITS, bounds, strict=True):
        for n, d in enumerate(drafts[start:end]):
            metadata = {"answer_type": answer_type, "type": d.kind, "split": split,
                        "supporting_doc_ids": [ids[name] for name in d.support]}
            prefix = split if answer_type == "short" else f"{split}-long"
            out.append(QATask(f"{prefix}-{n}", d.question, tuple(d.answers), metadata))
        start = end
    return out


# -- files -----------------------------------------------------------------------------------
def write_world(world: SyntheticWorld, folder: str | os.PathLike[str]) -> Path:
    """Write ``corpus.jsonl``, ``<split>.questions.jsonl`` (FlashRAG format) and ``world.json``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for p in world.passages:
            f.write(json.dumps(p.to_row(), ensure_ascii=False) + "\n")
    for split in SPLITS:
        for long_form, suffix in ((False, ""), (True, ".longform")):
            with (folder / f"{split}{suffix}.questions.jsonl").open("w", encoding="utf-8") as f:
                for q in world.split(split, long_form):
                    f.write(json.dumps(q.to_row(), ensure_ascii=False) + "\n")
    meta = {"generator": "agentgym.envs.searchqa.synthetic", "version": GENERATOR_VERSION, "size": world.size,
            "seed": world.seed, "passages": len(world.passages), "questions": len(world.tasks)}
    (folder / "world.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return folder


def cache_base(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """``cache_dir``, else ``$AGENTGYM_CACHE_DIR``, else ``~/.cache/agentgym``."""
    base = cache_dir or os.environ.get(CACHE_ENV_VAR) or Path.home() / ".cache" / "agentgym"
    return Path(base).expanduser()


def synthetic_world_folder(size: str | int = "default", seed: int = 0,
                           cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The folder of the generated world in the cache, written on first use."""
    n = resolve_size(size)
    folder = cache_base(cache_dir) / "searchqa" / f"synthetic-v{GENERATOR_VERSION}-{n}-seed{seed}"
    if (folder / "world.json").is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=folder.name + ".tmp-", dir=folder.parent))
    try:
        write_world(draw_world(n, seed=seed), tmp)
        os.replace(tmp, folder)
    except OSError:
        if not (folder / "world.json").is_file():  # another process did not win the race either
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder
