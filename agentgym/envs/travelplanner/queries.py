"""TravelPlanner queries in the Hugging Face field format, parsed safely.

The HF rows carry ``date``, ``local_constraint``, ``reference_information`` and
``annotated_plan`` as Python-literal strings; they are read with ``ast.literal_eval``, never
``eval``. Files may be jsonl, json (a list of rows), csv or parquet; ``load_dataset`` is used
for ``hf:SPLIT`` sources when the ``datasets`` package is installed.
"""

from __future__ import annotations

import csv
import functools
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentgym._literal import literal_eval
from agentgym.errors import DataError, DependencyNotInstalled

__all__ = ["LocalConstraint", "TravelQuery", "load_queries", "QUERIES_ENV_VAR", "SPLITS"]

QUERIES_ENV_VAR = "AGENTGYM_TRAVELPLANNER_QUERIES"
HF_DATASET_ENV_VAR = "AGENTGYM_TRAVELPLANNER_HF"
SPLITS = ("train", "validation", "test")
HF_DATASET = "osunlp/TravelPlanner"

HOUSE_RULES = ("smoking", "parties", "children under 10", "visitors", "pets")
CUISINES = ("Chinese", "American", "Italian", "Mexican", "Indian", "Mediterranean", "French")
ROOM_TYPES = ("shared room", "not shared room", "private room", "entire room")
TRANSPORTATION = ("no flight", "no self-driving")


class LocalConstraint(BaseModel):
    """The query's local constraints; None means the query does not carry that constraint."""

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


class TravelQuery(BaseModel):
    """One TravelPlanner query (a row of the HF dataset, with its strings parsed)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

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
    query: str = ""
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
        # HF form: [query_meta, [day, ...]]; a bare day list is accepted too.
        if isinstance(v, (list, tuple)) and len(v) == 2 and isinstance(v[1], (list, tuple)):
            v = v[1]
        return tuple(d for d in v if d)

    @classmethod
    def from_row(cls, row: Mapping[str, Any], *, id: str = "") -> TravelQuery:
        """Parse one HF-format row; raises ``DataError`` naming the bad field."""
        data = dict(row)
        if not data.get("id"):
            data["id"] = id
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise DataError(f"query {id or '?'}: field {field!r}: {first['msg']}") from None

    def to_row(self) -> dict[str, Any]:
        """The HF-format row (strings where HF has strings)."""
        return {
            "org": self.org, "dest": self.dest, "days": self.days,
            "visiting_city_number": self.visiting_city_number, "date": repr(list(self.date)),
            "people_number": self.people_number, "local_constraint": repr(self.local_constraint.as_official()),
            "budget": self.budget, "query": self.query, "level": self.level,
        }


def _literal(value: Any, field: str) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return literal_eval(value)
    except (ValueError, SyntaxError, MemoryError, RecursionError, SystemError):
        raise ValueError(f"{field} is not a Python literal: {value[:80]!r}") from None


def load_queries(source: str | os.PathLike[str] | Iterable[Mapping[str, Any]], *, world_root: Path | None = None) -> list[TravelQuery]:
    """Load queries from a file, a split name, ``hf:SPLIT``, or an iterable of row dicts.

    A split name (``train``, ``validation``, ``test``) is looked up as
    ``<world_root>/queries/<split>.jsonl``. ``hf:SPLIT`` calls
    ``datasets.load_dataset("osunlp/TravelPlanner", SPLIT)`` as the official code does (or a
    local copy of that dataset repo named by ``$AGENTGYM_TRAVELPLANNER_HF``).
    """
    if not isinstance(source, (str, os.PathLike)):
        return [TravelQuery.from_row(r, id=f"row-{i}") for i, r in enumerate(source)]
    text = str(source)
    if text.startswith("hf:"):
        return _from_hub(text[3:])
    path = Path(text).expanduser()
    prefix = path.stem
    if text in SPLITS and world_root is not None:
        path, prefix = world_root / "queries" / f"{text}.jsonl", text
    if not path.is_file():
        raise DataError(f"no query file at {path}; pass a .jsonl/.json/.csv/.parquet file, "
                        f"a split name {SPLITS} of the world, or 'hf:SPLIT'")
    stat = path.stat()
    return list(_load_file(path.resolve(), stat.st_size, stat.st_mtime_ns, prefix))


@functools.lru_cache(maxsize=32)
def _load_file(path: Path, size: int, mtime_ns: int, prefix: str) -> tuple[TravelQuery, ...]:
    # Queries are frozen, so every env on the same file shares one parsed copy (keyed by the
    # file's size and mtime, so an edited file is read again).
    return tuple(TravelQuery.from_row(r, id=f"{prefix}-{i}") for i, r in enumerate(_read_rows(path)))


def _read_rows(path: Path) -> list[dict[str, Any]]:
    suffix = path.suffix.lower()
    try:
        if suffix == ".jsonl":
            with open(path, encoding="utf-8") as f:
                return [json.loads(line) for line in f if line.strip()]
        if suffix == ".json":
            data = json.loads(path.read_text(encoding="utf-8"))
            return data if isinstance(data, list) else list(data.get("data", []))
        if suffix == ".csv":
            with open(path, newline="", encoding="utf-8") as f:
                return [_typed_csv_row(r) for r in csv.DictReader(f)]
        if suffix == ".parquet":
            return _read_parquet(path)
    except (json.JSONDecodeError, UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"{path} could not be read: {exc}") from None
    raise DataError(f"{path}: unsupported query file type {suffix!r}; use .jsonl, .json, .csv or .parquet")


def _typed_csv_row(row: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = dict(row)
    for key in ("days", "visiting_city_number", "people_number", "budget"):
        if out.get(key):
            out[key] = int(float(out[key]))
    return out


def _read_parquet(path: Path) -> list[dict[str, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DependencyNotInstalled("reading parquet query files needs `pip install 'agentgym[parquet]'`") from None
    return pq.read_table(path).to_pylist()


def _from_hub(split: str) -> list[TravelQuery]:
    if split not in SPLITS:
        from agentgym.errors import ConfigError

        raise ConfigError("queries", f"hf:{split}", [f"hf:{s}" for s in SPLITS])
    try:
        import datasets
    except ImportError:
        raise DependencyNotInstalled("loading queries from the hub needs `pip install 'agentgym[hf]'`") from None
    # The hub repo, or a local copy of it (same layout) named by the environment variable.
    repo = os.environ.get(HF_DATASET_ENV_VAR) or HF_DATASET
    rows = datasets.load_dataset(repo, split)[split]
    return [TravelQuery.from_row(r, id=f"{split}-{i}") for i, r in enumerate(rows)]
