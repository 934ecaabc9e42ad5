"""``Rollouts.load``: rollouts from every source agentgym writes them to, one reader each.

    rollouts = Rollouts.load("runs/tp__perturbed__g8", "verl_rollouts/", "trl_log/rollouts.jsonl")

Each path is one of:

* an ``agentgym run`` folder (``run.json`` and ``results.jsonl``), or its ``results.jsonl``;
* a verl rollout dump (``trainer.rollout_data_dir``: one ``<step>.jsonl`` per training step, as
  verl's trainer writes it), a folder of them or one file, whose lines carry the agentgym loop's
  ``agentgym_record`` column;
* a JSONL log of rollout records (``"format": "agentgym.rollout/1"``), as the TRL rollout writes to
  its ``log_dir``, a folder of them or one file.

Anything else is a ``DataError`` that names these formats. A group is the rollouts of one path with
one ``group`` id (trainers' group ids are unique across training steps); rollouts of different
paths never share one.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

from pydantic import ValidationError

from agentgym._toolbox import short
from agentgym.errors import DataError
from agentgym.rewards.lab.rollouts import RECORD_FORMAT, Rollout

__all__ = ["Rollouts", "VERL_COLUMN", "MAX_LINE_BYTES", "FORMATS"]

VERL_COLUMN = "agentgym_record"
"""The verl dump column (a ``reward_extra_info`` key of agentgym's loop) holding the rollout record."""
MAX_LINE_BYTES = 64 << 20
"""The longest line read from a rollout file; a longer one is a ``DataError``."""
FORMATS = ("an agentgym run folder (run.json + results.jsonl) or its results.jsonl",
           f"a verl rollout dump (trainer.rollout_data_dir: <step>.jsonl lines with an {VERL_COLUMN!r} column)",
           f"a JSONL log of rollout records (\"format\": \"{RECORD_FORMAT}\", the TRL rollout's log_dir)")
_VERL_KEYS = frozenset(("input", "output", "score", "step"))
_RUN_KEYS = frozenset(("episode", "seed", "total_reward"))
GroupKey = tuple[int, str]


class Rollouts(Sequence[Rollout]):
    """Rollouts in the order read, with the group each belongs to (see :meth:`groups`)."""

    def __init__(self, rollouts: Iterable[Rollout] = (), *, origins: Iterable[int] | None = None,
                 paths: Sequence[str] = ()) -> None:
        self._rollouts = list(rollouts)
        self.paths = list(paths)
        """The paths read, in order (empty for rollouts built in memory)."""
        self._origins = list(origins) if origins is not None else [0] * len(self._rollouts)
        if len(self._origins) != len(self._rollouts):
            raise ValueError("one origin per rollout")
        self._several = len(set(self._origins)) > 1

    @classmethod
    def load(cls, *paths: str | os.PathLike[str]) -> Rollouts:
        """Every rollout of ``paths`` (see the module docstring for what a path may be)."""
        if not paths:
            raise DataError(f"no rollouts given: pass one or more of {'; '.join(FORMATS)}")
        rollouts, origins = [], []
        for origin, path in enumerate(paths):
            found = list(_read(Path(path)))
            if not found:
                raise DataError(f"{path} holds no rollouts")
            rollouts += found
            origins += [origin] * len(found)
        return cls(rollouts, origins=origins, paths=[str(p) for p in paths])

    def group_key(self, index: int) -> GroupKey:
        """``(path index, group id)``: what makes two rollouts one group."""
        return self._origins[index], self._rollouts[index].group

    def group_name(self, index: int) -> str:
        """The group's id, prefixed by its path's place (``2:step3-1``) when the rollouts come from several paths."""
        group = self._rollouts[index].group
        return f"{self._origins[index]}:{group}" if self._several else group

    def groups(self) -> dict[GroupKey, list[int]]:
        """The indices of each group's rollouts, groups in the order first seen."""
        found: dict[GroupKey, list[int]] = {}
        for i in range(len(self._rollouts)):
            found.setdefault(self.group_key(i), []).append(i)
        return found

    def __len__(self) -> int:
        return len(self._rollouts)

    @overload
    def __getitem__(self, index: int) -> Rollout: ...
    @overload
    def __getitem__(self, index: slice) -> Rollouts: ...

    def __getitem__(self, index: int | slice) -> Rollout | Rollouts:
        if isinstance(index, slice):
            return Rollouts(self._rollouts[index], origins=self._origins[index], paths=self.paths)
        return self._rollouts[index]

    def __iter__(self) -> Iterator[Rollout]:
        return iter(self._rollouts)

    def __repr__(self) -> str:
        return f"Rollouts({len(self)} rollouts in {len(self.groups())} groups)"


# -- the readers -----------------------------------------------------------------------------------
def _read(path: Path) -> Iterator[Rollout]:
    if path.is_dir():
        if (path / "run.json").is_file() or (path / "results.jsonl").is_file():
            yield from _run_folder(path / "results.jsonl")
            return
        files = sorted(path.glob("*.jsonl"), key=_step_order)
        if not files:
            raise DataError(f"{path} is a folder without rollouts; expected {_formats()}")
        for file in files:
            yield from _read_file(file)
        return
    if not path.is_file():
        raise DataError(f"{path} does not exist; expected {_formats()}")
    yield from _read_file(path)


def _read_file(path: Path) -> Iterator[Rollout]:
    first = next(_lines(path), None)
    if first is None:
        return
    number, row = first
    if row.get("format") == RECORD_FORMAT:
        yield from _records(path)
    elif _VERL_KEYS <= row.keys():
        yield from _verl_dump(path)
    elif _RUN_KEYS <= row.keys():
        yield from _run_folder(path)
    else:
        raise DataError(f"{path}:{number} is not a rollout: its keys are {short(sorted(row), 200)}; "
                        f"expected {_formats()}")


def _records(path: Path) -> Iterator[Rollout]:
    for number, row in _lines(path):
        yield _rollout(row, f"{path}:{number}")


def _verl_dump(path: Path) -> Iterator[Rollout]:
    for number, row in _lines(path):
        where = f"{path}:{number}"
        record = row.get(VERL_COLUMN)
        if record is None:
            raise DataError(f"{where} is a verl rollout dump line without the {VERL_COLUMN!r} column: agentgym's "
                            "agent loop puts it in reward_extra_info, which verl's legacy trainer dumps to "
                            "trainer.rollout_data_dir (its V1 trainer dumps only validation_data_dir with it)")
        if isinstance(record, str):
            record = _json(record, where)
        if not isinstance(record, Mapping):
            raise DataError(f"{where}: {VERL_COLUMN} is not a rollout record ({short(record)})")
        record = dict(record)
        if record.get("training_step") is None and isinstance(row.get("step"), int):
            record["training_step"] = row["step"]
        if record.get("total") is None and isinstance(row.get("score"), (int, float)):
            record["total"] = row["score"]
        yield _rollout(record, where)


def _run_folder(results: Path) -> Iterator[Rollout]:
    from agentgym.runner.store import load_results

    identity = _manifest(results.parent / "run.json")
    env_id, env_kwargs = identity.get("env_id"), identity.get("env_kwargs") or {}
    for episode, row in sorted(load_results(results).items()):
        where = f"{results}: episode {episode}"
        if row.get("prompt") is None:
            raise DataError(f"{where} has no prompt and step infos (written before agentgym 0.3): rerun the run "
                            "into a new folder to keep what reshaping needs")
        yield _rollout({"task_id": row.get("task_id"), "group": row.get("group") or str(episode),
                        "sample": row.get("sample", 0), "prompt": row["prompt"], "actions": row.get("actions") or [],
                        "infos": row.get("infos") or [], "clipped": row.get("clipped", False), "env_id": env_id,
                        "env_kwargs": env_kwargs, "seed": row.get("seed"), "training_step": row.get("training_step"),
                        "total_steps": row.get("total_steps"), "total": row.get("total_reward")}, where)


def _manifest(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        identity = json.loads(path.read_text(encoding="utf-8")).get("identity")
    except (OSError, ValueError, AttributeError) as exc:
        raise DataError(f"{path} is not a run manifest ({exc})") from None
    return identity if isinstance(identity, dict) else {}


def _rollout(row: Mapping[str, Any], where: str) -> Rollout:
    try:
        return Rollout.from_record(row, source=where)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        field = ".".join(str(p) for p in first["loc"]) or "the record"
        raise DataError(f"{where} is not a rollout record: {field}: {first['msg']}") from None


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, JSON object)`` of each non-empty line; a torn last line (a crash mid-write) is skipped."""
    try:
        with path.open("rb") as f:
            number = 0
            while True:
                line = f.readline(MAX_LINE_BYTES + 1)
                if not line:
                    return
                number += 1
                if len(line) > MAX_LINE_BYTES:
                    raise DataError(f"{path}:{number} is longer than {MAX_LINE_BYTES} bytes")
                if not line.strip():
                    continue
                torn = not line.endswith(b"\n")
                try:
                    row = json.loads(line)
                except ValueError as exc:
                    if torn:
                        return
                    raise DataError(f"{path}:{number} is not JSON ({exc}); expected {_formats()}") from None
                if not isinstance(row, dict):
                    raise DataError(f"{path}:{number} is not a JSON object; expected {_formats()}")
                yield number, row
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror or exc}") from None


def _json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise DataError(f"{where}: {VERL_COLUMN} is not JSON ({exc})") from None


def _step_order(path: Path) -> tuple[int, int | str]:
    # verl names its dumps by training step: 10.jsonl after 9.jsonl
    return (0, int(path.stem)) if re.fullmatch(r"\d+", path.stem) else (1, path.name)


def _formats() -> str:
    return "; or ".join(FORMATS)
