"""The embedded world is deterministic, sized as documented, and its questions are answerable."""

from __future__ import annotations

import collections

import pytest

from agentgym import ConfigError
from agentgym.envs.searchqa.scoring import answer_in_text, normalize_answer
from agentgym.envs.searchqa.synthetic import SIZES, draw_world, synthetic_world_folder, write_world


@pytest.fixture(scope="module")
def small():
    return draw_world("small")


def test_same_size_and_seed_give_identical_files(tmp_path):
    a = write_world(draw_world("small", seed=3), tmp_path / "a")
    b = write_world(draw_world("small", seed=3), tmp_path / "b")
    for name in ("corpus.jsonl", "train.questions.jsonl", "test.longform.questions.jsonl"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    assert (a / "corpus.jsonl").read_bytes() != write_world(draw_world("small", seed=4), tmp_path / "c").joinpath(
        "corpus.jsonl").read_bytes()


def test_sizes_splits_and_kinds(small):
    assert len(small.passages) == SIZES["small"] == 1000
    assert len({p.id for p in small.passages}) == 1000 and len({p.title for p in small.passages}) == 1000
    short = [q for q in small.tasks if not q.long_form]
    assert len(short) == 500 and len({q.text for q in small.tasks}) == len(small.tasks)
    splits = collections.Counter(q.metadata["split"] for q in short)
    assert splits == {"train": 400, "validation": 50, "test": 50}
    kinds = collections.Counter(q.metadata["type"] for q in short)
    assert set(kinds) == {"single", "bridge", "comparison"} and kinds["bridge"] > kinds["single"]
    assert len(draw_world(250, n_tasks=40).split("train")) == 32


def test_draw_world_takes_n_questions_until_0_3_with_a_warning():
    from agentgym._deprecated import AgentGymDeprecationWarning

    with pytest.warns(AgentGymDeprecationWarning, match="'n_questions' is deprecated, use 'n_tasks'"):
        assert len(draw_world(250, n_questions=40).split("train")) == 32
    with pytest.raises(ConfigError, match="synthetic_size"):
        draw_world(99)


def test_every_answer_is_stated_in_its_supporting_passages(small):
    by_id = {p.id: p for p in small.passages}
    for q in small.tasks:
        support = " ".join(f"{by_id[i].title} {by_id[i].text}" for i in q.metadata["supporting_doc_ids"])
        if q.long_form or q.golden_answers[0] in ("yes", "no"):
            continue
        assert answer_in_text(q.golden_answers, support), q


def test_a_bridge_answer_is_not_in_the_first_passage(small):
    by_id = {p.id: p for p in small.passages}
    bridges = [q for q in small.tasks if q.metadata["type"] == "bridge"]
    leaked = [q for q in bridges if answer_in_text(q.golden_answers, by_id[q.metadata["supporting_doc_ids"][0]].text)]
    assert len(leaked) < 0.1 * len(bridges)  # the second hop is needed, bar rare coincidences


def test_names_are_fictional_and_yes_no_answers_are_balanced(small):
    titles = {normalize_answer(p.title) for p in small.passages}
    assert not titles & {"paris", "london", "france", "germany", "google", "harvard university"}
    yes_no = collections.Counter(q.golden_answers[0] for q in small.tasks if q.golden_answers[0] in ("yes", "no"))
    assert yes_no["yes"] > 0 and yes_no["no"] > 0


def test_the_world_folder_is_written_once(tmp_path):
    folder = synthetic_world_folder("small", seed=0, cache_dir=tmp_path)
    stamp = (folder / "corpus.jsonl").stat().st_mtime_ns
    assert synthetic_world_folder("small", seed=0, cache_dir=tmp_path) == folder
    assert (folder / "corpus.jsonl").stat().st_mtime_ns == stamp
    assert sorted(p.name for p in folder.iterdir()) == sorted([
        "corpus.jsonl", "world.json", *(f"{s}{x}.questions.jsonl" for s in ("train", "validation", "test")
                                        for x in ("", ".longform"))])
