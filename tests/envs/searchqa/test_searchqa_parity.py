"""Parity with Search-R1, written from its documented rules (nothing of its code is reused).

One test (or more) per finding of the issue "SearchQA that reproduces Search-R1"; each failed on
the branch point. The rules, from Search-R1's generation loop, data preparation and qa_em:

* the turn is cut after its first ``</search>``, else its first ``</answer>``; the first complete
  ``<search>``/``<answer>`` pair decides (case-sensitive, no attributes); its content is stripped;
* no pair: the fixed invalid-action sentence; an answer (even empty) ends the episode;
* ``max_turns=N``: N turns that act, then one final turn in which a search is not run;
* passages: ``Doc n(Title: <first line of contents>) <rest>``, in ``\\n\\n<information>...</information>\\n\\n``,
  stripped, so no hits give ``<information></information>``; observations cut to 500 tokens;
* EM/SubEM: SQuAD normalization only (control characters kept), every gold answer counted;
* the prompt: its fixed instruction, then ``Question: <q>?`` (``?`` appended unless present).
"""

from __future__ import annotations

import json

import gymnasium
import httpx
import pytest

import agentgym  # noqa: F401
from agentgym.envs.searchqa.scoring import exact_match, substring_match

CORPUS = [
    {"id": "0", "contents": '"Evan Morris"\nEvan Morris (1977 - 2015) was a lobbyist for Genentech.\nHe lived in DC.'},
    {"id": "1", "contents": '"Genentech"\nGenentech is a biotechnology company founded in 1976.'},
    {"id": "2", "contents": '"Roche"\nRoche acquired Genentech in 2009.'},
]
QUESTION = {"question": "Which company did Evan Morris work for", "golden_answers": ["Genentech"]}
INVALID = ("\nMy previous action is invalid. If I want to search, I should put the query between <search> and "
           "</search>. If I want to give the final answer, I should put the answer between <answer> and </answer>. "
           "Let me try again.\n")
PROMPT = ("Answer the given question. You must conduct reasoning inside <think> and </think> first every time you "
          "get new information. After reasoning, if you find you lack some knowledge, you can call a search engine "
          "by <search> query </search> and it will return the top searched results between <information> and "
          "</information>. You can search as many times as your want. If you find no further external knowledge "
          "needed, you can directly provide the answer inside <answer> and </answer>, without detailed "
          "illustrations. For example, <answer> Beijing </answer>. Question: {q}\n")


@pytest.fixture()
def make(tmp_path):
    def build(question=QUESTION, **kwargs):
        kwargs.setdefault("action_format", "search-r1")
        kwargs.setdefault("corpus", CORPUS)
        return gymnasium.make("SearchQA-v0", tasks=[question], cache_dir=str(tmp_path), **kwargs)
    return build


# -- finding 3: turn parsing ---------------------------------------------------------------------
@pytest.mark.parametrize("turn, action", [
    ("<search>a</search> <answer>b</answer>", ("search", "a")),
    ("<answer>b</answer> <search>a</search>", ("answer", "b")),  # cut at </search> keeps both; first wins
    ("<answer>first</answer><answer>second</answer>", ("answer", "first")),  # the first answer, not the last
    ("<answer>  Genentech \n</answer>", ("answer", "Genentech")),
    ("<search>unclosed <answer>x</answer>", ("answer", "x")),  # the first tag that closes
    ("<answer>x <search>q</search></answer>", ("search", "q")),  # cut after </search>: the answer never closes
])
def test_the_first_complete_tag_of_the_cut_turn_decides(turn, action):
    from agentgym.envs.searchqa.actions import read_search_r1

    parsed = read_search_r1(turn).action
    assert (type(parsed).__name__.lower(), getattr(parsed, "query", getattr(parsed, "text", None))) == action


@pytest.mark.parametrize("turn", ["<Answer>Genentech</Answer>", "<answer >Genentech</answer>",
                                  '<answer id="1">Genentech</answer>', "<ANSWER>x</ANSWER>", "Genentech",
                                  "<answer>unclosed"])
def test_case_and_attributes_make_a_tag_invalid(make, turn):
    env = make()
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(turn)
    assert obs == INVALID and not terminated and info["action"] == "invalid"


def test_an_empty_answer_ends_the_episode(make):
    env = make()
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step("<answer></answer>")
    assert terminated and reward == 0.0 and obs == "" and info["report"]["answer"] == ""


def test_the_cut_is_at_the_first_search_close_else_the_first_answer_close():
    from agentgym.envs.searchqa.actions import cut_turn

    assert cut_turn("a</answer>b</search>c</search>") == "a</answer>b</search>"
    assert cut_turn("a</answer>b</answer>") == "a</answer>"
    assert cut_turn("no tags") == "no tags"


# -- finding 4: turn limits ------------------------------------------------------------------
def test_max_turns_means_n_search_turns_then_a_final_turn_without_search(make):
    env = make(max_turns=4)
    env.reset(seed=0)
    for _ in range(4):
        obs, reward, terminated, truncated, _ = env.step("<search>Evan Morris</search>")
        assert obs.startswith("\n\n<information>") and not (terminated or truncated)
    obs, reward, terminated, truncated, info = env.step("<search>Genentech</search>")  # the final turn
    assert obs == "" and reward == 0.0 and truncated and info.get("tool_result") is None
    env.reset(seed=0)
    for _ in range(4):
        env.step("<search>Evan Morris</search>")
    _, reward, terminated, _, _ = env.step("<answer>Genentech</answer>")  # an answer is still taken then
    assert terminated and reward == 1.0


def test_five_searches_then_an_answer_scores_zero_with_max_turns_4(make):
    env = make(max_turns=4)
    env.reset(seed=0)
    done, reward = False, 0.0
    for turn in ["<search>q</search>"] * 5 + ["<answer>Genentech</answer>"]:
        if done:
            break
        _, reward, terminated, truncated, _ = env.step(turn)
        done = terminated or truncated
    assert done and reward == 0.0


# -- finding 5: observation text ------------------------------------------------------------
def test_passages_are_rendered_from_the_raw_contents(make):
    env = make(top_k=2)
    env.reset(seed=0)
    obs, *_, info = env.step("<search>Evan Morris Genentech</search>")
    first, second = (CORPUS[int(i)]["contents"] for i in info["extra"]["passage_ids"])
    assert first.startswith('"Evan Morris"')
    assert obs == ('\n\n<information>Doc 1(Title: "Evan Morris") Evan Morris (1977 - 2015) was a lobbyist for '
                   f'Genentech.\nHe lived in DC.\nDoc 2(Title: {second.replace(chr(10), ") ", 1)}</information>\n\n')


def test_no_hits_give_an_empty_information_block(make):
    env = make()
    env.reset(seed=0)
    obs, *_ = env.step("<search>xylophone</search>")
    assert obs == "\n\n<information></information>\n\n"


def _word_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = sorted({w for row in CORPUS for w in json.dumps(row["contents"]).replace("\\n", " ").split()})
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(["[UNK]", *words])}, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=core, unk_token="[UNK]")


def test_observations_are_cut_by_tokens_when_a_tokenizer_is_given(make):
    pytest.importorskip("transformers")
    tokenizer = _word_tokenizer()
    env = make(top_k=3, tokenizer=tokenizer, max_observation_tokens=6)
    env.reset(seed=0)
    obs, *_ = env.step("<search>Evan Morris Genentech</search>")
    full = make(top_k=3)
    full.reset(seed=0)
    whole, *_ = full.step("<search>Evan Morris Genentech</search>")
    ids = tokenizer.encode(whole, add_special_tokens=False)
    assert len(ids) > 6 and obs == tokenizer.decode(ids[:6])
    chars = make(top_k=3, max_observation_tokens=6)
    chars.reset(seed=0)
    from agentgym.envs.searchqa.observation import cut_to_estimate

    cut = chars.step("<search>Evan Morris Genentech</search>")[0]
    assert cut == cut_to_estimate(whole, 6) == "\n\n<information>Doc "


def test_the_server_passes_contents_through_unchanged(loopback_server, tmp_path):
    from agentgym.envs.searchqa import BM25Retriever
    from agentgym.envs.searchqa.retriever_app import create_app

    rows = [{"id": "0", "contents": '"Quoted"\n  text with  spacing\n\nand lines  '}]
    with loopback_server(create_app(BM25Retriever.open(rows, cache_dir=tmp_path))) as server:
        reply = httpx.post(server.url + "/retrieve", json={"queries": ["quoted text"], "topk": 3,
                                                          "return_scores": True}).json()
    assert reply["result"][0][0]["document"]["contents"] == rows[0]["contents"]


# -- finding 1: /retrieve at Search-R1's batch size -----------------------------------------
def test_a_batch_of_2560_queries_in_one_request_is_answered_in_full(loopback_server, tmp_path):
    from agentgym.envs.searchqa import BM25Retriever
    from agentgym.envs.searchqa.retriever_app import create_app

    retriever = BM25Retriever.open(CORPUS, cache_dir=tmp_path)
    queries = [["Evan Morris", "Genentech founded", "Roche 2009", "xylophone"][i % 4] for i in range(2560)]
    with loopback_server(create_app(retriever)) as server:
        reply = httpx.post(server.url + "/retrieve", json={"queries": queries, "topk": 3, "return_scores": True},
                           timeout=120)
    assert reply.status_code == 200
    result = reply.json()["result"]
    expected = [[{"document": h.to_document(), "score": h.score} for h in retriever.search(q, 3)] for q in queries[:4]]
    assert len(result) == 2560 and result[:4] == expected and result[2556:] == expected and result[3] == []


# -- finding 7: scoring and the prompt ------------------------------------------------------
def test_control_characters_are_kept_before_scoring(make):
    env = make(question={"question": "Capital of France", "golden_answers": ["Paris"]})
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("<answer>Paris\x00</answer>")
    assert terminated and reward == 0.0 and info["report"]["em"] == 0.0
    assert exact_match("Paris\x00", ["Paris"]) == 0.0  # qa_em normalizes, it does not clean


def test_subem_counts_a_gold_answer_that_normalizes_to_nothing(make):
    env = make(question={"question": "q", "golden_answers": ["Genentech", "The"]}, metric="subem")
    env.reset(seed=0)
    _, reward, *_ = env.step("<answer>Roche</answer>")
    assert reward == 1.0  # "the" normalizes to "", which is in every prediction
    assert substring_match("Roche", ["the"]) == 0.0  # the tags format's choice, kept
    assert substring_match("Roche", ["the"], skip_empty_golds=False) == 1.0


@pytest.mark.parametrize("question, shown", [("Who won.", "Who won.?"), ("Stop!", "Stop!?"),
                                             ("  Where is it?  ", "Where is it?"), ("Which one", "Which one?")])
def test_the_prompt_is_search_r1s_with_a_question_mark_appended(make, question, shown):
    env = make(question={"question": question, "golden_answers": ["x"]})
    obs, _ = env.reset(seed=0)
    assert obs == PROMPT.format(q=shown)


# -- the parsers stay linear on degenerate text ---------------------------------------------
@pytest.mark.parametrize("unit", ["<answer>", "<search>", "<think>", "<information>", "</search><search>",
                                  "<answer>x</search>"])
def test_a_megabyte_of_one_repeated_tag_reads_in_linear_time(unit):
    """One megabyte reads at once (a backtracking reader takes minutes here); no clock is read."""
    from agentgym.envs.searchqa.actions import read_action, read_search_r1

    text = unit * (1_000_000 // len(unit))
    assert read_search_r1(text).action is not None and read_action(text, "tags").action is not None


# -- finding 2: data rows both ways -----------------------------------------------------------
def _question_file(tmp_path):
    rows = [{"id": "nq-0", "question": "who founded genentech", "golden_answers": ["Robert Swanson"],
             "data_source": "nq"},
            {"id": "hp-0", "question": "Which company bought Genentech", "golden_answers": ["Roche"],
             "data_source": "hotpotqa"}]
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in CORPUS))
    return path


def test_prepared_rows_carry_the_dataset_and_search_r1s_ground_truth(tmp_path):
    from agentgym.integrations.verl.prepare import prepare_rows

    kwargs = {"corpus": str(tmp_path / "c.jsonl"), "action_format": "search-r1", "cache_dir": str(tmp_path / "cache")}
    rows = prepare_rows("SearchQA-v0", tasks=_question_file(tmp_path), env_kwargs=kwargs)
    assert [r["data_source"] for r in rows] == ["nq", "hotpotqa"]
    assert rows[0]["reward_model"] == {"style": "rule", "ground_truth": {"target": ["Robert Swanson"]}}
    assert rows[1]["prompt"][-1]["content"] == PROMPT.format(q="Which company bought Genentech?")
    forced = prepare_rows("SearchQA-v0", tasks=_question_file(tmp_path), env_kwargs=kwargs, data_source="popqa")
    assert {r["data_source"] for r in forced} == {"popqa"}


def _search_r1_row(numpy_lists: bool):
    import numpy as np

    target = np.array(["Roche"], dtype=object) if numpy_lists else ["Roche"]
    return {"data_source": "hotpotqa", "ability": "fact-reasoning",
            "prompt": [{"role": "user", "content": PROMPT.format(q="Which company bought Genentech?")}],
            "reward_model": {"style": "rule", "ground_truth": {"target": target}},
            "extra_info": {"split": "train", "index": 7}}


@pytest.mark.parametrize("numpy_lists", [False, True], ids=["lists", "numpy"])
def test_a_search_r1_row_plays_as_it_is(tmp_path, numpy_lists):
    from agentgym.integrations.verl.envs import row_extra_info
    from agentgym.integrations.verl.config import AgentGymConfig, EnvTask

    settings = AgentGymConfig(env_kwargs={"corpus": CORPUS, "cache_dir": str(tmp_path)})
    task = EnvTask.from_extra_info(row_extra_info(_search_r1_row(numpy_lists)), settings)
    assert task.env_id == "SearchQA-v0" and task.env_kwargs["action_format"] == "search-r1"
    env = task.make()
    obs, info = env.reset(options=task.reset_options)
    assert obs == PROMPT.format(q="Which company bought Genentech?") and info["task_id"] == "hotpotqa-train-7"
    assert env.step("<search>Genentech acquired</search>")[0].startswith('\n\n<information>Doc 1(Title: "Roche")')
    _, reward, terminated, _, info = env.step("<answer>Roche</answer>")
    assert terminated and reward == 1.0 and info["report"]["data_source"] == "hotpotqa"


def test_run_reports_em_and_f1_per_data_source(tmp_path):
    from agentgym.runner.records import EpisodeRecord
    from agentgym.runner.summary import summarize

    def record(i, source, em, f1):
        return EpisodeRecord(episode=i, seed=i, total_reward=em, turns=1, terminated=True, truncated=False,
                             report={"em": em, "f1": f1, "golden_answers": ["x"], "data_source": source})

    summary = summarize([record(0, "nq", 1.0, 1.0), record(1, "nq", 0.0, 0.5), record(2, "hotpotqa", 1.0, 1.0)], 3)
    assert summary.qa["nq"] == {"n": 2, "em": 0.5, "f1": 0.75} and summary.qa["hotpotqa"]["em"] == 1.0
    assert summary.qa["all"]["n"] == 3 and summary.qa["all"]["em"] == pytest.approx(2 / 3)


def test_the_reader_finds_what_search_r1s_documented_pattern_finds():
    """Search-R1 documents its rule as the first match of ``<(search|answer)>(.*?)</\\1>`` (DOTALL) on the
    cut turn. On short texts that backtracking pattern is cheap, so it is the oracle here."""
    import re

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from agentgym.envs.searchqa.actions import _first_tag_block, cut_turn

    pattern = re.compile(r"<(search|answer)>(.*?)</\1>", re.DOTALL)
    parts = st.sampled_from(["<search>", "</search>", "<answer>", "</answer>", "<Search>", "<answer >", "q", " ",
                             "\n", "<", ">", "/", "search", "</", "é"])

    @settings(max_examples=400, deadline=None)
    @given(st.lists(parts, max_size=25).map("".join))
    def check(text):
        match = pattern.search(cut_turn(text))
        assert _first_tag_block(cut_turn(text)) == (None if match is None else (match.group(1), match.group(2)))

    check()


def test_corrupt_question_and_corpus_files_raise_data_errors_naming_file_and_line(tmp_path):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from agentgym import DataError
    from agentgym.envs.searchqa import load_passages, load_tasks

    values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                              st.sampled_from(["question", "golden_answers", "id", "contents", "title", "text",
                                               "metadata", "data_source"]), inner, max_size=4), max_leaves=8)

    @settings(max_examples=150, deadline=None)
    @given(st.lists(values, min_size=1, max_size=3), st.binary(max_size=20), st.sampled_from([".jsonl", ".json"]))
    def check(rows, junk, suffix):
        path = tmp_path / f"f{suffix}"
        if suffix == ".json":
            path.write_bytes(json.dumps(rows).encode() + junk)
        else:
            path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in rows) + junk)
        for load in (load_tasks, lambda p: list(load_passages(p))):
            try:
                load(path)
            except DataError as exc:
                assert str(path) in str(exc) and len(str(exc)) < 1000

    check()
    bad = tmp_path / "q.jsonl"
    bad.write_text(json.dumps({"question": "q", "golden_answers": ["a"]}) + "\n" +
                   json.dumps({"question": "q", "golden_answers": {"x": 1}}) + "\n")
    with pytest.raises(DataError, match=r"q\.jsonl:2: .*'golden_answers'"):
        load_tasks(bad)
    (tmp_path / "x.parquet").write_bytes(b"PAR1 not really")
    pytest.importorskip("pyarrow")
    with pytest.raises(DataError, match=r"x\.parquet: not a readable parquet file"):
        load_tasks(tmp_path / "x.parquet")


def test_a_body_over_the_limit_is_refused_with_413(loopback_server, tmp_path):
    from agentgym.envs.searchqa import BM25Retriever
    from agentgym.envs.searchqa import retriever_app as serve

    config = serve.RetrieverConfig(max_body_bytes=10_000)
    with loopback_server(serve.create_app(BM25Retriever.open(CORPUS, cache_dir=tmp_path), config=config)) as server:
        big = httpx.post(server.url + "/retrieve", json={"queries": ["Roche"] * 2000, "topk": 3})
        small = httpx.post(server.url + "/retrieve", json={"queries": ["Roche"] * 100, "topk": 3})
    assert big.status_code == 413 and small.status_code == 200 and len(small.json()["result"]) == 100


def test_a_tokenizer_given_by_local_path_is_loaded_once_and_used(make, tmp_path):
    pytest.importorskip("transformers")
    tokenizer = _word_tokenizer()
    tokenizer.save_pretrained(tmp_path / "tok")
    env = make(top_k=3, tokenizer=str(tmp_path / "tok"), max_observation_tokens=6)
    env.reset(seed=0)
    obs, *_ = env.step("<search>Evan Morris Genentech</search>")
    same = make(top_k=3, tokenizer=tokenizer, max_observation_tokens=6)
    same.reset(seed=0)
    assert obs == same.step("<search>Evan Morris Genentech</search>")[0] and len(obs) < 60
    from agentgym import ConfigError

    with pytest.raises(ConfigError, match="tokenizer"):
        make(tokenizer=12)
