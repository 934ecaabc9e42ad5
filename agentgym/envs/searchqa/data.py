"""Tasks (questions) and passages: the FlashRAG / Search-R1 jsonl formats and Hugging Face parquet.

* Tasks: one row per question with ``question`` and ``golden_answers`` (a list; a string is
  one answer) and optional ``id`` and ``metadata``. Search-R1's processed parquet rows are read
  too: the answers from ``reward_model.ground_truth.target``, the question from
  ``extra_info.question`` or else the ``Question:`` line of the prompt.
* Passages: ``id`` and ``contents`` = ``"title"\\ntext`` (the title's double quotes are
  stripped, as Search-R1 does), or ``id``, ``title`` and ``text``. The raw ``contents`` is kept
  unchanged for Search-R1's rendering and for ``/retrieve``.

A corrupt file raises ``DataError`` naming the file, the line (or row) and the field.

Files may be ``.jsonl``, ``.json`` (a list of rows) or ``.parquet`` (needs ``pyarrow``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym._deprecated import module_aliases, renamed_attribute
from agentgym._toolbox import clip
from agentgym.errors import DataError, DependencyNotInstalled

__all__ = ["Passage", "QATask", "read_rows", "numbered_rows", "load_tasks", "load_passages", "split_contents"]


@dataclass(frozen=True)
class Passage:
    id: str
    title: str
    text: str
    raw_contents: str | None = field(default=None, compare=False)
    """The corpus row's own ``contents``, when it had one."""

    @property
    def contents(self) -> str:
        """The corpus's ``contents``, or the FlashRAG layout: the quoted title, a newline, the text."""
        return self.raw_contents if self.raw_contents is not None else f'"{self.title}"\n{self.text}'

    def to_row(self) -> dict[str, str]:
        return {"id": self.id, "title": self.title, "text": self.text, "contents": self.contents}

    @classmethod
    def from_row(cls, row: Mapping[str, Any], default_id: str = "") -> Passage:
        if not isinstance(row, Mapping):
            raise DataError(f"passage {default_id!r} is a {type(row).__name__}, not an object")
        pid = str(row.get("id", row.get("docid", default_id)))
        contents = row.get("contents")
        if contents is not None and not isinstance(contents, str):
            raise DataError(f"passage {pid!r}: field 'contents' is a {type(contents).__name__}, not a string")
        if "title" in row or "text" in row:
            return cls(pid, str(row.get("title") or ""), str(row.get("text") or ""), contents)
        if contents is not None:
            title, text = split_contents(contents)
            return cls(pid, title, text, contents)
        raise DataError(f"passage {pid!r} has neither field 'contents' nor 'title'/'text' (keys: {sorted(row)[:20]})")


@dataclass(frozen=True)
class QATask:
    """One question with its gold answers (a row's ``question`` column is the task's ``text``)."""

    id: str
    text: str
    golden_answers: tuple[str, ...]
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    question = renamed_attribute("QATask", "question", "text")

    @property
    def long_form(self) -> bool:
        return self.metadata.get("answer_type") == "long"

    def to_row(self) -> dict[str, Any]:
        return {"id": self.id, "question": self.text, "golden_answers": list(self.golden_answers),
                "metadata": self.metadata}

    @classmethod
    def from_row(cls, row: Mapping[str, Any], default_id: str = "") -> QATask:
        if not isinstance(row, Mapping):
            raise DataError(f"question {default_id!r} is a {type(row).__name__}, not a mapping")
        text = _question_text(row)
        if not text:
            raise DataError(f"question row {default_id!r}: field 'question' is missing or empty "
                            f"(keys: {sorted(row)[:20]})")
        answers = _golden_answers(row)
        if not answers:
            raise DataError(f"question row {default_id!r}: field 'golden_answers' is missing or an empty list "
                            f"(keys: {sorted(row)[:20]})")
        metadata = dict(row["metadata"]) if isinstance(row.get("metadata"), Mapping) else {}
        source = row.get("data_source")
        if isinstance(source, str) and source and "data_source" not in metadata:
            metadata["data_source"] = source  # Search-R1 rows name their dataset (nq, hotpotqa...)
        return cls(str(row.get("id", default_id)), text, answers, metadata)

    @property
    def data_source(self) -> str | None:
        """The dataset the question comes from (``nq``, ``hotpotqa``...), when its row said so."""
        source = self.metadata.get("data_source")
        return source if isinstance(source, str) and source else None


def split_contents(contents: str) -> tuple[str, str]:
    """Split ``"title"\\ntext`` at the first newline and strip the title's double quotes."""
    title, _, text = contents.partition("\n")
    return title.strip().strip('"'), text.strip()


def _question_text(row: Mapping[str, Any]) -> str:
    if isinstance(row.get("question"), str):
        return row["question"].strip()
    extra = row.get("extra_info")
    if isinstance(extra, Mapping) and isinstance(extra.get("question"), str):
        return extra["question"].strip()
    prompt = row.get("prompt")
    if isinstance(prompt, Sequence) and prompt and isinstance(prompt[-1], Mapping):
        content = str(prompt[-1].get("content", ""))
        marker = content.rfind("Question:")
        if marker >= 0:
            return content[marker + len("Question:"):].strip()
    return ""


def _golden_answers(row: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The gold answers as given (None: the row has none). A blank gold loads, as Search-R1 loads and
    scores ``[""]`` (it matches an answer that normalizes to nothing); ``[]``, which can never
    score, is refused by the caller."""
    answers: Any = None
    for key in ("golden_answers", "answers", "answer"):
        if row.get(key) is not None:
            answers = row[key]
            break
    reward = row.get("reward_model")
    if answers is None and isinstance(reward, Mapping) and isinstance(reward.get("ground_truth"), Mapping):
        answers = reward["ground_truth"].get("target")
    if isinstance(answers, (str, int, float)) and not isinstance(answers, bool):
        answers = [answers]
    if answers is None:
        return None
    if isinstance(answers, (Mapping, str, bytes)) or not isinstance(answers, Iterable):
        raise DataError(f"field 'golden_answers' is a {type(answers).__name__}, not a list of strings")
    answers = list(answers)
    if not all(isinstance(a, (str, int, float)) and not isinstance(a, bool) for a in answers):
        raise DataError("field 'golden_answers' must hold strings")
    # Blank answers stay: Search-R1's qa_em/qa_subem score against every gold answer as given.
    return tuple(str(a) for a in answers)


# -- files -----------------------------------------------------------------------------------
def read_rows(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Rows of a ``.jsonl``, ``.json`` or ``.parquet`` file, in file order."""
    for _, row in numbered_rows(path):
        yield row


def numbered_rows(path: str | os.PathLike[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, row)`` for each row: ``where`` is ``file:line`` (jsonl) or ``file:row N``."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"no such file: {p}")
    suffix = p.suffix.lower()
    try:
        if suffix == ".parquet":
            for n, row in enumerate(_parquet_rows(p), 1):
                yield f"{p}: row {n}", row
        elif suffix == ".json":
            try:
                rows = json.loads(p.read_text(encoding="utf-8"))
            except ValueError as exc:  # JSONDecodeError, or a number too long to convert
                raise DataError(f"{p}: not valid JSON ({clip_error(exc)})") from None
            if not isinstance(rows, list):
                raise DataError(f"{p}: a .json file must hold a list of rows")
            for n, row in enumerate(rows, 1):
                yield f"{p}: row {n}", row
        else:
            with p.open(encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    if line.strip():
                        yield f"{p}:{n}", _json_line(line, p, n)
    except UnicodeDecodeError as exc:
        raise DataError(f"{p}: not UTF-8 text (byte {exc.start})") from None
    except RecursionError:
        raise DataError(f"{p}: nested too deeply") from None


def _json_line(line: str, path: Path, n: int) -> dict[str, Any]:
    try:
        row = json.loads(line)
    except ValueError as exc:  # JSONDecodeError, or an integer over Python's digit limit
        raise DataError(f"{path}:{n}: not valid JSON ({clip_error(exc)})") from None
    if not isinstance(row, dict):
        raise DataError(f"{path}:{n}: each line must be a JSON object")
    return row


def _parquet_rows(path: Path) -> Iterator[dict[str, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DependencyNotInstalled("reading parquet needs pyarrow: pip install 'agentgym-rl[parquet]'") from None
    try:
        batches = pq.ParquetFile(path).iter_batches(batch_size=4096)
        for batch in batches:
            yield from batch.to_pylist()
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise DataError(f"{path}: not a readable parquet file ({clip_error(exc)})") from None


def clip_error(exc: BaseException, limit: int = 200) -> str:
    """An exception's message, cut to ``limit`` characters (corrupt data must not make huge errors)."""
    return clip(str(exc) or type(exc).__name__, limit)


def load_tasks(source: str | os.PathLike[str] | Iterable[Mapping[str, Any] | QATask]) -> list[QATask]:
    """Tasks from a file or from rows; ids default to ``<file stem>-<row>``."""
    if isinstance(source, (str, os.PathLike)):
        stem = Path(source).name.split(".")[0]
        return [_located(where, QATask.from_row, r, f"{stem}-{i}")
                for i, (where, r) in enumerate(numbered_rows(source))]
    return [q if isinstance(q, QATask) else QATask.from_row(q, f"custom-{i}") for i, q in enumerate(source)]


def _located(where: str, read: Any, row: Any, default_id: str) -> Any:
    try:
        return read(row, default_id)
    except DataError as exc:
        raise DataError(f"{where}: {exc}") from None


def load_passages(source: str | os.PathLike[str] | Iterable[Mapping[str, Any] | Passage]) -> Iterator[Passage]:
    """Passages from a file or from rows, streamed; ids default to the 0-based row number."""
    if isinstance(source, (str, os.PathLike)):
        for i, (where, row) in enumerate(numbered_rows(source)):
            yield _located(where, Passage.from_row, row, str(i))
        return
    for i, row in enumerate(source):
        yield row if isinstance(row, Passage) else Passage.from_row(row, str(i))


__getattr__ = module_aliases(__name__, {"Question": "QATask", "load_questions": "load_tasks"})
