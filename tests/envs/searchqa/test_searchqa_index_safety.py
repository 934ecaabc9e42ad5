"""The BM25 index never writes into the user's data folder, and replaces only what agentgym wrote.

Regression tests for issue 12 finding 1 ("any client can delete server directories"), issue 14
finding 1 (the index written next to the corpus) and the no-pickle, validate-on-open cache rule.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import gymnasium
import pytest

import agentgym  # noqa: F401
from agentgym import ConfigError
from agentgym.envs.searchqa import BM25Retriever

MARKER = "agentgym-index.json"

ROWS = [
    {"id": "0", "contents": '"Qirand"\nQirand is a country whose capital is Zhemcarport.'},
    {"id": "1", "contents": '"Velmora Works"\nVelmora Works was founded by Ada Krin in 1901.'},
]
QUESTIONS = [{"question": "What is the capital of Qirand", "golden_answers": ["Zhemcarport"]}]


def _write(folder: Path, name: str, rows: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_gymnasium_make_with_a_corpus_writes_nothing_next_to_it(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTGYM_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "data"
    corpus, questions = _write(data, "c.jsonl", ROWS), _write(data, "q.jsonl", QUESTIONS)
    before = _tree(data)
    env = gymnasium.make("SearchQA-v0", tasks=str(questions), corpus=str(corpus))
    env.reset(seed=0)
    assert env.step("<search>capital of Qirand</search>")[4]["extra"]["passage_ids"][0] == "0"
    assert _tree(data) == before and os.access(data, os.W_OK)  # writable, and still untouched
    assert any((tmp_path / "cache" / "searchqa" / "index").iterdir())


def test_serve_retriever_opens_its_index_in_the_cache(tmp_path, monkeypatch):
    from agentgym.envs.searchqa.retriever_app import open_corpus_retriever

    monkeypatch.setenv("AGENTGYM_CACHE_DIR", str(tmp_path / "cache"))
    corpus = _write(tmp_path / "data", "c.jsonl", ROWS)
    retriever = open_corpus_retriever(str(corpus))
    assert os.listdir(tmp_path / "data") == ["c.jsonl"]
    assert str(retriever.index_dir).startswith(str(tmp_path / "cache"))


def test_the_cache_key_is_the_corpus_content_not_its_path(tmp_path):
    a = _write(tmp_path / "a", "c.jsonl", ROWS)
    b = _write(tmp_path / "b", "other-name.jsonl", ROWS)
    ra = BM25Retriever.open(a, cache_dir=tmp_path / "cache")
    assert BM25Retriever.open(b, cache_dir=tmp_path / "cache").index_dir == ra.index_dir


@pytest.mark.parametrize("kind", ["folder with a file", "file", "foreign marker"])
def test_an_index_dir_agentgym_does_not_own_is_refused_and_left_intact(tmp_path, kind):
    target = tmp_path / "precious"
    if kind == "file":
        target.write_text("do not delete")
    else:
        target.mkdir()
        (target / ("notes.txt" if kind == "folder with a file" else MARKER)).write_text('{"owner": "me"}')
    before = target.read_bytes() if target.is_file() else _tree(target)
    with pytest.raises(ConfigError, match="index_dir"):
        BM25Retriever.open(ROWS, index_dir=target)
    with pytest.raises(ConfigError, match="index_dir"):
        BM25Retriever.build(ROWS, target)
    assert (target.read_bytes() if target.is_file() else _tree(target)) == before


def test_an_empty_or_own_index_dir_is_used_and_rebuilt_in_place(tmp_path):
    target = tmp_path / "idx"
    target.mkdir()
    first = BM25Retriever.open(ROWS, index_dir=target)
    assert first.index_dir == target and (target / MARKER).is_file()
    builds = [p.name for p in target.iterdir() if p.name.startswith("build-")]
    second = BM25Retriever.open(ROWS[:1], index_dir=target)  # another corpus: rebuilt in its own folder
    assert [h.id for h in second.search("Velmora", 3)] == []
    now = [p.name for p in target.iterdir() if p.name.startswith("build-")]
    assert len(now) == 1 and now != builds  # the old build is gone, nothing else was touched
    assert sorted(p.name for p in target.iterdir()) == sorted([MARKER, *now])


def test_the_index_holds_no_pickle_and_a_tampered_one_is_rebuilt(tmp_path):
    r = BM25Retriever.open(ROWS, cache_dir=tmp_path)
    files = [p for p in r.index_dir.rglob("*") if p.is_file()]
    assert files and all(p.suffix in (".npy", ".json", ".jsonl") for p in files), files
    for npy in (p for p in files if p.suffix == ".npy"):
        with npy.open("rb") as f:  # the .npy header says whether the array holds Python objects
            assert b"'descr': '|O'" not in f.read(200)
    vocab = next(p for p in files if p.name == "vocab.index.json")
    vocab.write_text(vocab.read_text().replace("qirand", "qiranx"))
    import agentgym.envs.searchqa.bm25 as bm25

    bm25._OPEN.clear()  # as a new process would
    again = BM25Retriever.open(ROWS, cache_dir=tmp_path)
    assert [h.id for h in again.search("Qirand", 1)] == ["0"]  # rebuilt, not trusted


def test_pyserini_parameters_are_a_choice(tmp_path):
    from agentgym.envs.searchqa.bm25 import BM25_PRESETS

    k1, b = BM25_PRESETS["pyserini"]
    lucene = BM25Retriever.open(ROWS, cache_dir=tmp_path, k1=k1, b=b)
    default = BM25Retriever.open(ROWS, cache_dir=tmp_path)
    assert lucene.params["k1"] == 0.9 and lucene.params["b"] == 0.4 and lucene.index_dir != default.index_dir
    assert lucene.search("Velmora", 1)[0].score != default.search("Velmora", 1)[0].score
    with pytest.raises(ConfigError, match="k1"):
        BM25Retriever.open(ROWS, cache_dir=tmp_path, k1=-1)


def test_an_index_of_agentgym_0_1_is_recognized_and_replaced(tmp_path):
    old = tmp_path / "old-index"
    (old / "bm25s").mkdir(parents=True)
    (old / "bm25s" / "params.index.json").write_text("{}")
    (old / "stopwords.json").write_text("[]")
    (old / MARKER).write_text(json.dumps({"format": "1", "stemmer": "english", "source": {}, "passages": 2,
                                          "bm25s": "0.3.16"}))
    r = BM25Retriever.open(ROWS, index_dir=old)
    assert [h.id for h in r.search("Qirand", 1)] == ["0"]
    assert not (old / "bm25s").exists() and not (old / "stopwords.json").exists()
