"""SearchQA-v0 honours the Gymnasium contract, plays the embedded world, and never crashes on model text."""

from __future__ import annotations

import math

import gymnasium
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentgym
from agentgym import ActionTypeError, ConfigError, ResetNeeded, StepInfo
from agentgym.envs.searchqa import RetrieverError

SCRIPT = [
    "<think>Find the person first.</think><search>In which city was the founder born?</search>",
    "<search>capital country</search>",
    "",
    "<search>   </search>",
    "<search>nested <search>x</search></search>",
    "no tags at all",
    "<answer>not sure</answer>",
]


@pytest.fixture(scope="module")
def env():
    return gymnasium.make("SearchQA-v0")



def test_a_scripted_agent_solves_single_hop_questions_in_one_search():
    env = gymnasium.make("SearchQA-v0").unwrapped
    singles = [i for i, q in enumerate(env.tasks) if q.metadata["type"] == "single"][:40]
    for i in singles:
        env.reset(options={"task_index": i})
        gold = env.task.golden_answers[0]
        obs, _, _, _, info = env.step(f"<search>{env.task.text}</search>")
        assert env.task.metadata["supporting_doc_ids"][0] in info["extra"]["passage_ids"]
        assert gold.lower() in obs.lower()
        _, reward, terminated, _, info = env.step(f"<answer>{gold}</answer>")
        assert terminated and reward == 1.0 and info["report"]["retrieval_hit"]


def test_a_bridge_question_needs_the_second_passage():
    env = gymnasium.make("SearchQA-v0").unwrapped
    i = next(i for i, q in enumerate(env.tasks) if q.metadata["type"] == "bridge")
    env.reset(options={"task_index": i})
    first, second = env.task.metadata["supporting_doc_ids"]
    title = env.retriever.passage(int(second.split("-")[1])).title
    _, _, _, _, info = env.step(f"<search>{title}</search>")
    assert second in info["extra"]["passage_ids"]


BAD_ACTIONS = {
    "": "empty_action",
    "   ": "empty_action",
    "x" * 1_000_001: "action_too_long",
    "<search>" + "q" * 100_000 + "</search>": "invalid_argument",
    "<search> \t </search>": "invalid_argument",
    "<search>\x00\x01\x02</search>": "invalid_argument",
    "\x00\x01\x02 <search>": "unparseable_action",
    "<search>a<search>b</search></search>": "unparseable_action",
    "<answer>unclosed": "unparseable_action",
    "<answer>  </answer>": "invalid_argument",
    "plain text": "unparseable_action",
}


@pytest.mark.parametrize("action", list(BAD_ACTIONS), ids=lambda a: repr(a[:30]))
def test_bad_actions_become_observations_with_an_error_code(env, action):
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert info["error"]["code"] == BAD_ACTIONS[action]
    assert obs and len(obs.splitlines()) == 1 and len(obs) < 400 and reward == 0.0 and not terminated
    obs, _, _, _, info = env.step("<search>University</search>")  # state intact: the next search works
    assert info["error"] is None and "<information>Doc 1(Title:" in obs


def test_unicode_and_control_characters_in_a_query_are_cleaned(env):
    env.reset(seed=0)
    obs, _, _, _, info = env.step("<search>Universit\x00y 東京 🙂 \ud800</search>")
    assert info["error"] is None and info["extra"]["query"] == "Universit y 東京 🙂"
    obs.encode("utf-8")  # no lone surrogate reaches the observation


@pytest.mark.parametrize("action_format", ["tags", "json"])
def test_several_answers_in_a_turn_are_an_invalid_action_not_a_solved_task(action_format):
    """Issue 29, item 6: ``<answer>wrong</answer><answer>right</answer>`` was read as the last answer, so a hedge
    counted as solved for the outcome, the outcome term and the VSPO filter."""
    env = gymnasium.make("SearchQA-v0", action_format=action_format)
    env.reset(options={"task_index": 0})
    gold = env.unwrapped.task.golden_answers[0]
    obs, reward, terminated, truncated, info = env.step(f"<answer>wrong</answer> <answer>{gold}</answer> <answer>open")
    assert not terminated and not truncated and reward == 0.0
    assert info["action"] == "invalid" and info["error"]["code"] == "multiple_answers"
    assert "exactly one answer" in obs and info["report"] is None and info["answer"] is None
    _, reward, terminated, _, info = env.step(f"<answer>{gold}</answer>")  # one answer is read as before
    assert terminated and reward == 1.0 and info["extra"]["answer_blocks"] == 1


def test_search_r1_keeps_its_own_rule_for_several_answers():
    """Search-R1 acts on the turn's first answer and scores the transcript's last (its qa_em.py): unchanged."""
    env = gymnasium.make("SearchQA-v0", action_format="search-r1")
    env.reset(options={"task_index": 0})
    gold = env.unwrapped.task.golden_answers[0]
    *_, terminated, _, info = env.step(f"<answer>wrong</answer><answer>{gold}</answer><search>q</search>")
    assert terminated and info["action"] == "answer" and info["answer"] == "wrong"
    assert info["report"]["scored_answer"] == gold


def test_search_limit_then_answer():
    env = gymnasium.make("SearchQA-v0", max_searches=2, max_turns=10)
    env.reset(seed=0)
    for _ in range(2):
        assert env.step("<search>University</search>")[4]["error"] is None
    obs, _, terminated, _, info = env.step("<search>University</search>")
    assert info["error"]["code"] == "search_limit" and not terminated and "<answer>" in obs
    assert env.step("<answer>x</answer>")[2]


class FailingRetriever:
    def search(self, query, k):
        raise RetrieverError("the server at http://example.invalid is down")

    def batch_search(self, queries, k):
        return [self.search(q, k) for q in queries]


def test_a_retriever_failure_is_an_observation():
    env = gymnasium.make("SearchQA-v0", retriever=FailingRetriever())
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("<search>anything</search>")
    assert info["error"]["code"] == "retriever_failed" and "search failed" in obs and not terminated
    assert "RetrieverError" in info["extra"]["retriever_error"]
    assert info["failure"] == {"reason": "retriever_unreachable", "message": info["extra"]["retriever_error"]}
    answer = env.step("<answer>x</answer>")
    assert answer[2] and answer[4]["failure"] is None  # the failure belongs to the step it happened in


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=300)
       | st.builds(lambda tag, body: f"<{tag}>{body}</{tag}>", st.sampled_from(["search", "answer", "think"]),
                   st.text(max_size=80))
       | st.lists(st.sampled_from(["<search>", "</search>", "<answer>", "</answer>", "<think>", "</think>",
                                   "University", " ", "\x00", "\ud83d", "東"]), max_size=20).map("".join))
def test_any_text_action_is_safe(env, action):
    if getattr(env.unwrapped, "_done", True):
        env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert env.observation_space.contains(obs)
    assert math.isfinite(reward) and 0.0 <= reward <= 1.0
    StepInfo.from_info(info)
    if terminated or truncated:
        env.reset(seed=0)


@pytest.fixture(scope="module")
def json_env():
    return gymnasium.make("SearchQA-v0", action_format="json")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=200)
       | st.builds(lambda name, q: f'<tool_call>{{"name": "{name}", "arguments": {{"query": {q}}}}}</tool_call>',
                   st.sampled_from(["search", "Search", "finish", "give_up", "browse"]),
                   st.sampled_from(['"University"', '""', "3", "null", '["a"]', '"\\u0000"', "{"])))
def test_any_text_action_is_safe_in_json_format(json_env, action):
    if getattr(json_env.unwrapped, "_done", True):
        json_env.reset(seed=0)
    obs, reward, terminated, truncated, info = json_env.step(action)
    assert json_env.observation_space.contains(obs) and math.isfinite(reward)
    StepInfo.from_info(info)
    if terminated or truncated:
        json_env.reset(seed=0)


def test_a_huge_answer_is_scored_but_clipped_in_info(env):
    env.reset(options={"task_index": 0})
    gold = env.unwrapped.task.golden_answers[0]
    _, reward, terminated, _, info = env.step(f"<answer>{gold} " + "word " * 100_000 + "</answer>")
    assert terminated and reward == 0.0 and len(info["extra"]["answer"]) < 2100
    assert len(info["report"]["answer"]) < 2100 and info["report"]["subem"] == 1.0


def test_truncation_at_max_turns():
    env = gymnasium.make("SearchQA-v0", max_turns=3)
    env.reset(seed=0)
    results = [env.step("<search>University</search>") for _ in range(3)]
    assert [r[3] for r in results] == [False, False, True]
    assert results[-1][4]["terminated_reason"] == "max_turns" and results[-1][1] == 0.0
    with pytest.raises(ResetNeeded):
        env.unwrapped.step("<search>University</search>")


def test_programmer_errors_raise_from_the_error_tree(tmp_path):
    for kwargs, field in [({"action_format": "xml"}, "action_format"), ({"reward": "bleu"}, "reward"),
                          ({"top_k": 0}, "top_k"), ({"max_searches": "3"}, "max_searches"),
                          ({"synthetic_size": 5}, "synthetic_size"), ({"retriever": 42}, "retriever")]:
        with pytest.raises(ConfigError, match=field):
            gymnasium.make("SearchQA-v0", **kwargs)
    with pytest.raises(ConfigError, match="corpus"):  # questions of its own but nothing to search
        gymnasium.make("SearchQA-v0", tasks=[{"question": "q?", "golden_answers": ["a"]}])
    with pytest.raises(agentgym.DataError, match="no such"):
        gymnasium.make("SearchQA-v0", tasks=str(tmp_path / "missing.jsonl"), corpus=str(tmp_path / "c.jsonl"))
    env = gymnasium.make("SearchQA-v0").unwrapped
    with pytest.raises(ConfigError, match="task_index"):
        env.reset(options={"task_index": 10**6})
    with pytest.raises(ConfigError, match="options"):
        env.reset(options={"colour": 1})
    with pytest.raises(ConfigError, match="task=1 .*QATask"):
        env.reset(options={"task": 1})
    env.reset(seed=0)
    with pytest.raises(ActionTypeError):
        env.step(42)


def test_json_format_exposes_the_search_tool():
    env = gymnasium.make("SearchQA-v0", action_format="json")
    obs, _ = env.reset(seed=0)
    assert [s["function"]["name"] for s in env.unwrapped.tools.schemas()] == ["search"]
    assert "<tools>" in obs and '"search"' in obs
    obs, _, _, _, info = env.step('<tool_call>{"name": "search", "arguments": {"query": "University"}}</tool_call>')
    assert info["tool_call"] == {"name": "search", "arguments": {"query": "University"}}
    assert obs.startswith("Doc 1(Title:") and len(info["extra"]["passage_ids"]) == 3
    _, _, terminated, _, info = env.step('<tool_call>{"name": "give_up", "arguments": {}}</tool_call>')
    assert terminated and info["action"] == "give_up"


def test_reset_options_and_custom_rows():
    env = gymnasium.make("SearchQA-v0").unwrapped
    assert env.reset(options={"task_id": "train-5"})[1]["task_id"] == "train-5"
    obs, info = env.reset(options={"task": {"question": "Where is Skounvik", "golden_answers": ["Vehaethuin"]}})
    assert "Question: Where is Skounvik?" in obs and info["task_id"] == "custom"


def test_kwargs_shape_the_prompt_and_observation():
    env = gymnasium.make("SearchQA-v0", top_k=5, passage_chars=40, metric="f1",
                         prompt_template="Q: {question} (k={top_k}, n={max_searches})")
    obs, _ = env.reset(seed=0)
    assert obs.startswith("Q: ") and "(k=5, n=4)" in obs
    obs, *_ = env.step("<search>University</search>")
    lines = obs.strip().removeprefix("<information>").removesuffix("</information>").splitlines()
    assert len(lines) == 5 and all(len(line.split(") ", 1)[1]) <= 44 for line in lines)


def test_long_form_env_uses_the_judge_hook_or_the_lexical_fallback():
    env = gymnasium.make("SearchQA-LongForm-v0").unwrapped
    env.reset(seed=0)
    reference = env.task.golden_answers[0]
    _, reward, _, _, info = env.step(f"<answer>{reference}</answer>")
    assert reward == pytest.approx(1.0) and info["report"]["scorer"] == "lexical"

    calls = []
    judged = gymnasium.make("SearchQA-LongForm-v0", judge=lambda q, a, refs: calls.append((q, a, refs)) or 0.25)
    judged.reset(seed=0)
    _, reward, _, _, info = judged.step("<answer>Some words.</answer>")
    assert reward == 0.25 and info["report"]["scorer"] == "judge" and calls[0][2] == [reference]

    def broken(q, a, refs):
        raise TimeoutError("judge unreachable")

    fallback = gymnasium.make("SearchQA-LongForm-v0", judge=broken)
    fallback.reset(seed=0)
    _, reward, _, _, info = fallback.step(f"<answer>{reference}</answer>")
    assert reward == pytest.approx(1.0) and "TimeoutError" in info["report"]["judge_error"]
    with pytest.raises(ConfigError, match="judge"):
        gymnasium.make("SearchQA-LongForm-v0", judge="gpt")


def test_the_docs_first_example_runs_as_written():
    import re
    from pathlib import Path

    page = Path(__file__).resolve().parents[3] / "docs" / "searchqa.md"
    first = re.findall(r"```python\n(.*?)```", page.read_text(), re.DOTALL)[0]
    exec(compile(first, "docs/searchqa.md", "exec"), {"__name__": "__doc_example__"})


@pytest.mark.parametrize("action_format", ["tags", "search-r1"])
def test_the_reset_info_names_the_tasks_text_task_text_and_keeps_the_old_key(action_format):
    """Defect: the reset's ``info["extra"]`` named the task's text ``question`` (a retired word);
    it is ``task_text``, as the reward input, with 0.1's key beside it until 0.3."""
    env = gymnasium.make("SearchQA-v0", action_format=action_format)
    _, info = env.reset(options={"task_index": 2})
    text = env.unwrapped.task.text
    assert info["extra"]["task_text"] == text and info["extra"]["question"] == text
