"""SearchQA on the real samples (HotpotQA, MuSiQue, ALCE): retrieval recall, scripted EM, remote retriever."""

from __future__ import annotations

import gymnasium
import pytest

from agentgym.envs.searchqa import BM25Retriever, HttpRetriever, load_tasks
from agentgym.envs.searchqa.retriever_app import create_app

pytestmark = pytest.mark.realdata


@pytest.fixture(scope="module")
def hotpot(searchqa_data):
    questions = load_tasks(searchqa_data / "hotpotqa_dev500.questions.jsonl")
    retriever = BM25Retriever.open(searchqa_data / "hotpotqa_dev500.corpus.jsonl")
    return questions, retriever


def test_the_shared_data_folder_is_left_untouched(hotpot, searchqa_data):
    _, retriever = hotpot
    assert searchqa_data not in retriever.index_dir.parents  # a read-only data set gets its index in the cache


def test_hotpotqa_top5_retrieval_finds_a_gold_paragraph_for_90_percent(hotpot):
    questions, retriever = hotpot
    assert len(questions) == 500 and len(retriever) == 4858
    hits = 0
    for q in questions:
        found = {h.id for h in retriever.search(q.text, 5)}
        hits += bool(found & set(q.metadata["supporting_doc_ids"]))
    recall = hits / len(questions)
    print(f"HotpotQA dev500 any-gold@5 = {recall:.3f}")
    assert recall >= 0.90


def _scripted_em(env, n):
    total = 0.0
    for i in range(n):
        env.reset(options={"task_index": i})
        question = env.unwrapped.task
        obs, _, _, _, info = env.step(f"<think>Search the question.</think><search>{question.text}</search>")
        assert info["error"] is None and obs.count("Doc ") >= 1
        _, reward, terminated, _, info = env.step(f"<answer>{question.golden_answers[0]}</answer>")
        assert terminated and info["report"]["em"] == reward
        total += reward
    return total / n


def test_a_scripted_agent_with_the_gold_answer_gets_em_1_on_hotpotqa(searchqa_data):
    env = gymnasium.make("SearchQA-v0", tasks=str(searchqa_data / "hotpotqa_dev500.questions.jsonl"),
                         corpus=str(searchqa_data / "hotpotqa_dev500.corpus.jsonl"))
    assert _scripted_em(env, 500) == 1.0


def test_musique_runs_with_its_corpus(searchqa_data):
    env = gymnasium.make("SearchQA-v0", tasks=str(searchqa_data / "musique_train100.questions.jsonl"),
                         corpus=str(searchqa_data / "musique_train100.corpus.jsonl"), metric="f1")
    assert _scripted_em(env, 100) == 1.0
    env.reset(options={"task_id": "2hop__150763_14904"})
    _, reward, _, _, info = env.step("<answer>Stanley Hall</answer>")  # an alias among golden_answers
    assert reward == 1.0 and info["report"]["em"] == 1.0


def test_hotpotqa_through_a_remote_retriever(hotpot, searchqa_data, loopback_server):
    questions, retriever = hotpot
    with loopback_server(create_app(retriever)) as server:
        remote = HttpRetriever(server.url + "/retrieve", batch_size=50)
        queries = [q.text for q in questions[:100]]
        assert remote.batch_search(queries, 5) == [retriever.search(q, 5) for q in queries]
        env = gymnasium.make("SearchQA-v0", tasks=str(searchqa_data / "hotpotqa_dev500.questions.jsonl"),
                             retriever=server.url + "/retrieve")
        assert _scripted_em(env, 20) == 1.0


def test_long_form_alce_with_the_lexical_fallback(searchqa_data):
    env = gymnasium.make("SearchQA-LongForm-v0", tasks=str(searchqa_data / "longform_alce8.questions.jsonl"),
                         corpus=str(searchqa_data / "longform_alce8.corpus.jsonl"))
    env.reset(options={"task_index": 0})
    reference = env.unwrapped.task.golden_answers[0]
    _, _, _, _, info = env.step(f"<search>{env.unwrapped.task.text}</search>")
    assert info["extra"]["passage_ids"][0].startswith("alce-")
    _, full, _, _, info = env.step(f"<answer>{reference}</answer>")
    env.reset(options={"task_index": 0})
    _, partial, _, _, _ = env.step("<answer>Mawsynram, India holds the official record.</answer>")
    assert full == pytest.approx(1.0) and 0 < partial < full and info["report"]["scorer"] == "lexical"
