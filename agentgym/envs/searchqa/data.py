"""Questions and passages: the FlashRAG / Search-R1 jsonl formats and Hugging Face parquet.

* Questions: one row per question with ``question`` and ``golden_answers`` (a list; a string is
  one answer) and optional ``id`` and ``metadata``. Search-R1's processed parquet rows are read
  too: the answers from ``reward_model.ground_truth.target``, the question from
  ``extra_info.question`` or else the ``Question:`` line of the prompt.
* Passages: ``id`` and ``contents`` = ``"title"\\ntext`` (the title's double quotes are
  stripped, as Search-R1 does), or ``id``, ``title`` and ``text``.

Files may be ``.jsonl``, ``.json`` (a list of rows) or ``.parquet`` (needs ``pyarrow``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym.errors import DataError, DependencyNotInstalled

__all__ = ["Passage", "Question", "read_rows", "load_questions", "load_passages", "split_contents"]


@dataclass(frozen=True)
class Passage:
    id: str
    title: str
    text: str

    @property
    def contents(self) -> str:
        """The FlashRAG / Search-R1 ``contents`` string: the quoted title, a newline, the text."""
        return f'"{self.title}"\n{self.text}'

    def to_row(self) -> dict[str, str]:
        return {"id": self.id, "title": self.title, "text": self.text, "contents": self.contents}

    @classmethod
    def from_row(cls, row: Mapping[str, Any], default_id: str = "") -> Passage:
        pid = str(row.get("id", row.get("docid", default_id)))
        if "title" in row or "text" in row:
            return cls(pid, str(row.get("title") or ""), str(row.get("text") or ""))
        if "contents" in row:
            title, text = split_contents(str(row["contents"]))
            return cls(pid, title, text)
        raise DataError(f"passage {pid!r} has neither 'contents' nor 'title'/'text' (keys: {sorted(row)})")


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    golden_answers: tuple[str, ...]
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def long_form(self) -> bool:
        return self.metadata.get("answer_type") == "long"

    def to_row(self) -> dict[str, Any]:
        return {"id": self.id, "question": self.question, "golden_answers": list(self.golden_answers),
                "metadata": self.metadata}

    @classmethod
    def from_row(cls, row: Mapping[str, Any], default_id: str = "") -> Question:
        if not isinstance(row, Mapping):
            raise DataError(f"question {default_id!r} is a {type(row).__name__}, not a mapping")
        text = _question_text(row)
        answers = _golden_answers(row)
        if not text or not answers:
            raise DataError(f"question row {default_id!r} needs a 'question' and 'golden_answers' "
                            f"(keys: {sorted(row)})")
        metadata = row.get("metadata") if isinstance(row.get("metadata"), Mapping) else {}
        return cls(str(row.get("id", default_id)), text, answers, dict(metadata))


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


def _golden_answers(row: Mapping[str, Any]) -> tuple[str, ...]:
    answers: Any = None
    for key in ("golden_answers", "answers", "answer"):
        if row.get(key) is not None:
            answers = row[key]
            break
    reward = row.get("reward_model")
    if answers is None and isinstance(reward, Mapping) and isinstance(reward.get("ground_truth"), Mapping):
        answers = reward["ground_truth"].get("target")
    if isinstance(answers, str):
        answers = [answers]
    if answers is None or isinstance(answers, Mapping):
        return ()
    return tuple(str(a) for a in answers if str(a).strip())


# -- files -----------------------------------------------------------------------------------
def read_rows(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Rows of a ``.jsonl``, ``.json`` or ``.parquet`` file, in file order."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"no such file: {p}")
    suffix = p.suffix.lower()
    if suffix == ".parquet":
        yield from _parquet_rows(p)
    elif suffix == ".json":
        rows = json.loads(p.read_text(encoding="utf-8"))
        if not isinstance(rows, list):
            raise DataError(f"{p}: a .json file must hold a list of rows")
        yield from rows
    else:
        with p.open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    yield _json_line(line, p, n)


def _json_line(line: str, path: Path, n: int) -> dict[str, Any]:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}:{n}: not valid JSON ({exc.msg})") from None
    if not isinstance(row, dict):
        raise DataError(f"{path}:{n}: each line must be a JSON object")
    return row


def _parquet_rows(path: Path) -> Iterator[dict[str, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DependencyNotInstalled("reading parquet needs pyarrow: pip install 'agentgym[parquet]'") from None
    for batch in pq.ParquetFile(path).iter_batches(batch_size=4096):
        yield from batch.to_pylist()


def load_questions(source: str | os.PathLike[str] | Iterable[Mapping[str, Any] | Question]) -> list[Question]:
    """Questions from a file or from rows; ids default to ``<file stem>-<row>``."""
    if isinstance(source, (str, os.PathLike)):
        stem = Path(source).name.split(".")[0]
        return [Question.from_row(r, f"{stem}-{i}") for i, r in enumerate(read_rows(source))]
    return [q if isinstance(q, Question) else Question.from_row(q, f"custom-{i}") for i, q in enumerate(source)]


def load_passages(source: str | os.PathLike[str] | Iterable[Mapping[str, Any] | Passage]) -> Iterator[Passage]:
    """Passages from a file or from rows, streamed; ids default to the 0-based row number."""
    rows = read_rows(source) if isinstance(source, (str, os.PathLike)) else source
    for i, row in enumerate(rows):
        yield row if isinstance(row, Passage) else Passage.from_row(row, str(i))
