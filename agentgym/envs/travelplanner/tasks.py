"""TravelPlanner tasks (the benchmark's "queries"), read from the Hugging Face field format safely.

The HF rows carry ``date``, ``local_constraint``, ``reference_information`` and
``annotated_plan`` as Python-literal strings; they are read with ``ast.literal_eval``, never
``eval``, and only within per-field size limits (an inline task reaches them from
``reset(options={"task": ...})``). Files may be jsonl, json (a list of rows), csv or parquet;
``load_dataset`` is used for ``hf:SPLIT`` sources when the ``datasets`` package is installed.

A file that cannot be read raises ``DataError`` naming the file, the line (or row) and the field.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentgym._deprecated import alias, module_aliases, renamed_attribute, renamed_env_var
from agentgym.envs.travelplanner._literal import LiteralError, literal_eval
from agentgym.errors import DataError, DependencyNotInstalled

__all__ = ["LocalConstraint", "TravelTask", "load_tasks", "tasks_from_environment", "TASKS_ENV_VAR", "SPLITS"]

TASKS_ENV_VAR = "AGENTGYM_TRAVELPLANNER_TASKS"
_OLD_TASKS_ENV_VAR = "AGENTGYM_TRAVELPLANNER_QUERIES"
alias("environment variable", _OLD_TASKS_ENV_VAR, TASKS_ENV_VAR)
HF_DATASET_ENV_VAR = "AGENTGYM_TRAVELPLANNER_HF"
SPLITS = ("train", "validation", "test")
HF_DATASET = "osunlp/TravelPlanner"

HOUSE_RULES = ("smoking", "parties", "children under 10", "visitors", "pets")
CUISINES = ("Chinese", "American", "Italian", "Mexican", "Indian", "Mediterranean", "French")
ROOM_TYPES = ("shared room", "not shared room", "private room", "entire room")
TRANSPORTATION = ("no flight", "no self-driving")

# (characters, ',' and ':' separators) allowed per literal field: each is about 10x the largest
# in the official splits (date 98/6, local_constraint 154/10, annotated_plan 4,085/224,
# reference_information 48,054/835), so real rows pass and a degenerate one stays cheap to parse.
LITERAL_LIMITS = {
    "date": (1_000, 100),
    "local_constraint": (2_000, 100),
    "annotated_plan": (100_000, 5_000),
    "reference_information": (1_000_000, 20_000),
}


class LocalConstraint(BaseModel):
    """The task's local constraints; None means the task does not carry that constraint."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    house_rule: str | None = Field(default=None, alias="house rule")
    cuisine: tuple[str, ...] | None = None
    room_type: str | None = Field(default=None, alias="room type")
    transportation: str | None = None

    def as_official(self) -> dict[str, Any]:
        """The dict with the official keys, as the HF row spells it."""
        return {
            "house rule": self.house_rule,
            "cuisine": None if self.cuisine is None else list(self.cuisine),
            "room type": self.room_type,
            "transportation": self.transportation,
        }

    @property
    def n_active(self) -> int:
        return sum(v is not None for v in (self.house_rule, self.cuisine, self.room_type, self.transportation))


class TravelTask(BaseModel):
    """One TravelPlanner task (a row of the HF dataset, with its strings parsed)."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    id: str = ""
    """Stable id, e.g. ``train-3``; assigned by the loader when the row has none."""
    org: str
    dest: str
    days: int
    visiting_city_number: int
    date: tuple[str, ...]
    people_number: int
    local_constraint: LocalConstraint = LocalConstraint()
    budget: int
    text: str = Field(default="", alias="query")
    """The traveller's request in words (the dataset's ``query`` column)."""
    level: Literal["easy", "medium", "hard"] | None = None
    reference_information: tuple[dict[str, Any], ...] | None = None
    """The sole-planning input: ``{'Description', 'Content'}`` entries, when the row has it."""
    annotated_plan: tuple[dict[str, Any], ...] | None = None
    """The gold day list (train only), without the leading query dict and ``{}`` padding."""

    @field_validator("date", mode="before")
    @classmethod
    def _date(cls, v: Any) -> Any:
        return _literal(v, "date")

    @field_validator("local_constraint", mode="before")
    @classmethod
    def _local(cls, v: Any) -> Any:
        return LocalConstraint() if v in (None, "") else _literal(v, "local_constraint")

    @field_validator("reference_information", mode="before")
    @classmethod
    def _reference(cls, v: Any) -> Any:
        return None if v in (None, "") else _literal(v, "reference_information")

    @field_validator("annotated_plan", mode="before")
    @classmethod
    def _plan(cls, v: Any) -> Any:
        if v in (None, ""):
            return None
        v = _literal(v, "annotated_plan")
        if not isinstance(v, (list, tuple)):
            raise ValueError(f"annotated_plan must be a list of day dicts, got {type(v).__name__}")
        # HF form: [query_meta, [day, ...]]; a bare day list is accepted too.
        if len(v) == 2 and isinstance(v[1], (list, tuple)):
            v = v[1]
        return tuple(d for d in v if not isinstance(d, dict) or d)

    @classmethod
    def from_row(cls, row: Mapping[str, Any], *, id: str = "") -> TravelTask:
        """Parse one HF-format row; raises ``DataError`` naming the bad field."""
        if not isinstance(row, Mapping):
            raise DataError(f"task {id or '?'}: a row must be an object of fields, got {type(row).__name__}")
        data = dict(row)
        if not data.get("id"):
            data["id"] = id
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise DataError(f"task {id or '?'}: field {field!r}: {first['msg']}") from None

    def to_row(self) -> dict[str, Any]:
        """The HF-format row (strings where HF has strings)."""
        return {
            "org": self.org, "dest": self.dest, "days": self.days,
            "visiting_city_number": self.visiting_city_number, "date": repr(list(self.date)),
            "people_number": self.people_number, "local_constraint": repr(self.local_constraint.as_official()),
            "budget": self.budget, "query": self.text, "level": self.level,
        }

    query = renamed_attribute("TravelTask", "query", "text")


def _literal(value: Any, field: str) -> Any:
    if not isinstance(value, str):
        return value
    max_chars, max_items = LITERAL_LIMITS[field]
    try:
        return literal_eval(value, max_chars=max_chars, max_items=max_items)
    except LiteralError as exc:
        raise ValueError(f"{field} is {exc}: {value[:80]!r}") from None


def tasks_from_environment() -> str | None:
    """``$AGENTGYM_TRAVELPLANNER_TASKS`` (or its retired name ``$AGENTGYM_TRAVELPLANNER_QUERIES``), if set."""
    return renamed_env_var(TASKS_ENV_VAR, _OLD_TASKS_ENV_VAR)


def load_tasks(source: str | os.PathLike[str] | Iterable[Mapping[str, Any]], *, world_root: Path | None = None) -> list[TravelTask]:
    """Load tasks from a file, a split name, ``hf:SPLIT``, or an iterable of row dicts.

    A split name (``train``, ``validation``, ``test``) is looked up as
    ``<world_root>/queries/<split>.jsonl``. ``hf:SPLIT`` calls
    ``datasets.load_dataset("osunlp/TravelPlanner", SPLIT)`` as the official code does (or a
    local copy of that dataset repo named by ``$AGENTGYM_TRAVELPLANNER_HF``).
    """
    if not isinstance(source, (str, os.PathLike)):
        return [TravelTask.from_row(r, id=f"row-{i}") for i, r in enumerate(source)]
    text = str(source)
    if text.startswith("hf:"):
        return _from_hub(text[3:])
    path = Path(text).expanduser()
    prefix = path.stem
    if text in SPLITS and world_root is not None:
        path, prefix = world_root / "queries" / f"{text}.jsonl", text
    if not path.is_file():
        raise DataError(f"no task file at {path}; pass a .jsonl/.json/.csv/.parquet file, "
                        f"a split name {SPLITS} of the world, or 'hf:SPLIT'")
    stat = path.stat()
    return list(_load_file(path.resolve(), stat.st_size, stat.st_mtime_ns, prefix))


@functools.lru_cache(maxsize=32)
def _load_file(path: Path, size: int, mtime_ns: int, prefix: str) -> tuple[TravelTask, ...]:
    # Tasks are frozen, so every env on the same file shares one parsed copy (keyed by the
    # file's size and mtime, so an edited file is read again).
    tasks = []
    for i, (where, row) in enumerate(_read_rows(path)):
        try:
            tasks.append(TravelTask.from_row(row, id=f"{prefix}-{i}"))
        except DataError as exc:
            raise DataError(f"{path}, {where}: {exc}") from None
    return tuple(tasks)


_READERS = ("jsonl", "json", "csv", "parquet")


def _read_rows(path: Path) -> list[tuple[str, Any]]:
    """``(where, row)`` pairs, ``where`` naming the line (or row) for error messages."""
    kind = path.suffix.lower().lstrip(".")
    if kind not in _READERS:
        raise DataError(f"{path}: unsupported task file type {path.suffix!r}; use .jsonl, .json, .csv or .parquet")
    if kind == "parquet":
        return _read_parquet(path)
    text = _read_text(path)
    reader = {"jsonl": _jsonl_rows, "json": _json_rows, "csv": _csv_rows}[kind]
    return list(reader(path, text))


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(f"{path} could not be read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DataError(f"{path}, line {line}: not UTF-8 text (byte {exc.start})") from None


def _jsonl_rows(path: Path, text: str) -> Iterator[tuple[str, Any]]:
    for n, line in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), 1):
        if line.strip():
            yield f"line {n}", _json(path, line, n)


def _json_rows(path: Path, text: str) -> Iterator[tuple[str, Any]]:
    data = _json(path, text, 1)
    rows = data.get("data") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        raise DataError(f"{path}: expected a JSON list of rows or an object with a 'data' list, "
                        f"got {type(data).__name__}")
    for i, row in enumerate(rows):
        yield f"row {i}", row


def _json(path: Path, text: str, first_line: int) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}, line {first_line + exc.lineno - 1}: not valid JSON "
                        f"({exc.msg} at column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:  # ints over 4,300 digits; deep nesting
        where = f"line {first_line}" if first_line > 1 or "\n" not in text else "the file"
        raise DataError(f"{path}, {where}: not usable JSON ({type(exc).__name__}: {str(exc)[:80]})") from None


def _csv_rows(path: Path, text: str) -> Iterator[tuple[str, Any]]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        for row in reader:
            where = f"line {reader.line_num}"
            if None in row:
                raise DataError(f"{path}, {where}: more fields than the header names")
            yield where, _typed_csv_row(path, where, row)
    except csv.Error as exc:  # raised while reading the line after the last one counted
        raise DataError(f"{path}, line {reader.line_num + 1}: not valid CSV ({exc})") from None


def _typed_csv_row(path: Path, where: str, row: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = dict(row)
    for key in ("days", "visiting_city_number", "people_number", "budget"):
        if out.get(key):
            try:
                out[key] = int(float(out[key]))
            except (ValueError, OverflowError):
                raise DataError(f"{path}, {where}: field {key!r}: {out[key][:40]!r} is not a whole number") from None
    return out


def _read_parquet(path: Path) -> list[tuple[str, Any]]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise DependencyNotInstalled("reading parquet task files needs `pip install 'agentgym-rl[parquet]'`") from None
    try:
        rows = pq.read_table(path).to_pylist()
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise DataError(f"{path} is not a readable parquet file ({str(exc)[:200]})") from None
    return [(f"row {i}", row) for i, row in enumerate(rows)]


def _from_hub(split: str) -> list[TravelTask]:
    if split not in SPLITS:
        from agentgym.errors import ConfigError

        raise ConfigError("tasks", f"hf:{split}", [f"hf:{s}" for s in SPLITS])
    try:
        import datasets
    except ImportError:
        raise DependencyNotInstalled("loading tasks from the hub needs `pip install 'agentgym-rl[hf]'`") from None
    # The hub repo, or a local copy of it (same layout) named by the environment variable.
    repo = os.environ.get(HF_DATASET_ENV_VAR) or HF_DATASET
    rows = datasets.load_dataset(repo, split)[split]
    return [TravelTask.from_row(r, id=f"{split}-{i}") for i, r in enumerate(rows)]


__getattr__ = module_aliases(__name__, {"TravelQuery": "TravelTask", "load_queries": "load_tasks",
                                        "QUERIES_ENV_VAR": "TASKS_ENV_VAR"})
