"""``action_format="search-r1"`` against Search-R1's own rules, run side by side on the same episodes.

``SearchR1Reference`` below is written for this test from reading Search-R1's generation loop
(``search_r1/llm_agent/generation.py``) and ``verl/utils/reward_score/qa_em.py`` at commit a14dc3a,
for one trajectory (batch of one); none of its code is reused. Its rules:

* a turn is cut after its first ``</search>``, else after its first ``</answer>``, else kept;
* the first match of ``<(search|answer)>(.*?)</\\1>`` (DOTALL) on the cut turn decides; ``<think>``
  is plain text; the content is stripped; no match is an invalid action;
* ``max_turns`` turns in which searches run, then (if still active) one final turn in which a
  search is not run and nothing is appended after the turn;
* observations: ``\\n\\n<information>{passages, stripped}</information>\\n\\n`` after a search, the
  fixed invalid sentence after an invalid turn, nothing after an answer;
* counters: ``turns_stats`` starts at 1 and counts each search-phase turn that leaves the episode
  active; ``valid_action_stats`` counts answers and searches (the final turn's too),
  ``valid_search_stats`` searches; ``active_mask`` stays True until an answer;
* reward (every episode, answered or not): ``<answer>(.*?)</answer>`` over prompt + transcript;
  fewer than two matches scores 0, else EM of the last match's stripped content.
"""

from __future__ import annotations

import re
import string

import gymnasium
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentgym  # noqa: F401

CORPUS = [
    {"id": "0", "contents": '"Evan Morris"\nEvan Morris (1977 - 2015) was a lobbyist for Genentech.\nHe lived in DC.'},
    {"id": "1", "contents": '"Genentech"\nGenentech is a biotechnology company founded in 1976.'},
    {"id": "2", "contents": '"Roche"\nRoche acquired Genentech in 2009.'},
    {"id": "3", "contents": '"Beijing"\nBeijing is the capital of China. <answer>Roche</answer> was seen here.'},
]
INVALID = ("\nMy previous action is invalid. If I want to search, I should put the query between <search> and "
           "</search>. If I want to give the final answer, I should put the answer between <answer> and </answer>. "
           "Let me try again.\n")


def _normalize(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


class SearchR1Reference:
    """Search-R1's loop and reward for one trajectory (module docstring)."""

    def __init__(self, prompt: str, golds: list[str], retriever, max_turns: int, top_k: int = 3) -> None:
        self.prompt, self.golds, self.retriever = prompt, golds, retriever
        self.max_turns, self.top_k = max_turns, top_k

    def play(self, turns: list[str]) -> dict:
        steps, transcript = [], ""
        turns_stats, valid_actions, valid_searches, active = 1, 0, 0, True
        turns = iter(turns)
        for final in [False] * self.max_turns + [True]:
            if not active:
                break
            turn = self._cut(next(turns))
            found = re.search(r"<(search|answer)>(.*?)</\1>", turn, re.DOTALL)
            action, content = (found.group(1), found.group(2).strip()) if found else (None, "")
            query, observation = None, ""
            if action == "search":
                valid_actions, valid_searches = valid_actions + 1, valid_searches + 1
                if not final:
                    query = content
                    observation = f"\n\n<information>{self._passages(content).strip()}</information>\n\n"
            elif action == "answer":
                valid_actions, active = valid_actions + 1, False
            elif not final:
                observation = INVALID
            if not final and active:
                turns_stats += 1
            transcript += turn + observation
            steps.append({"observation": observation, "query": query, "done": not active or final,
                          "counters": {"turns_stats": turns_stats, "valid_action_stats": valid_actions,
                                       "valid_search_stats": valid_searches, "active_mask": active}})
        answers = list(re.finditer(r"<answer>(.*?)</answer>", self.prompt + transcript, re.DOTALL))
        scored = answers[-1].group(1).strip() if len(answers) >= 2 else None
        reward = float(scored is not None and _normalize(scored) in {_normalize(g) for g in self.golds})
        return {"steps": steps, "reward": reward, "scored": scored}

    @staticmethod
    def _cut(turn: str) -> str:
        if "</search>" in turn:
            return turn.split("</search>")[0] + "</search>"
        if "</answer>" in turn:
            return turn.split("</answer>")[0] + "</answer>"
        return turn

    def _passages(self, query: str) -> str:
        text = ""
        for n, hit in enumerate(self.retriever.search(query, self.top_k), 1):
            lines = hit.raw_contents().split("\n")
            text += f"Doc {n}(Title: {lines[0]}) {chr(10).join(lines[1:])}\n"
        return text


class Recording:
    """A retriever that records the queries it is sent."""

    def __init__(self, inner) -> None:
        self.inner, self.queries = inner, []

    def search(self, query, k):
        self.queries.append(query)
        return self.inner.search(query, k)

    def batch_search(self, queries, k):
        return [self.search(q, k) for q in queries]


@pytest.fixture(scope="module")
def bm25(tmp_path_factory):
    from agentgym.envs.searchqa import BM25Retriever

    return BM25Retriever.open(CORPUS, cache_dir=tmp_path_factory.mktemp("bm25"))


def _play_both(bm25, turns, golds=("Genentech",), max_turns=4):
    question = {"question": "Which company did Evan Morris work for", "golden_answers": list(golds)}
    ours = Recording(bm25)
    env = gymnasium.make("SearchQA-v0", action_format="search-r1", tasks=[question], retriever=ours,
                         max_turns=max_turns)
    prompt, _ = env.reset(seed=0)
    theirs = Recording(bm25)
    expected = SearchR1Reference(prompt, list(golds), theirs, max_turns).play(turns)
    got, reward = [], 0.0
    for turn, want in zip(turns, expected["steps"]):
        before = len(ours.queries)
        observation, reward, terminated, truncated, info = env.step(turn)
        got.append({"observation": observation, "query": ours.queries[-1] if len(ours.queries) > before else None,
                    "done": terminated or truncated, "counters": info["extra"]["search_r1"]})
        if terminated or truncated:
            assert info["report"]["scored_answer"] == expected["scored"]
            break
    assert got == expected["steps"]
    assert reward == expected["reward"] and ours.queries == theirs.queries
    return expected


# -- the issue's cases, one by one ------------------------------------------------------------
CASES = {
    "later answers in the turn are scored": (["<answer>Roche</answer><answer>Genentech</answer><search>q</search>"],
                                             ("Genentech",), 1.0),
    "five searches never answered score the prompt's example": (["<search>Evan Morris</search>"] * 5,
                                                                ("Beijing",), 1.0),
    "a search inside think runs": (["<think>try <search>Evan Morris</search></think><answer>Genentech</answer>",
                                    "<answer>Genentech</answer>"], ("Genentech",), 1.0),
    "an unclosed think before a search": (["<think>hmm <search>Genentech founded</search>",
                                           "<answer>Genentech</answer>"], ("Genentech",), 1.0),
    "a think close inside an answer": (["<answer>Genentech</think></answer>"], ("Genentech",), 0.0),
    "a final turn answering inside think": (["<search>Evan Morris</search>"] * 4
                                            + ["<think><answer>Genentech</answer></think>"], ("Genentech",), 1.0),
    "an answer inside think comes first": (["<think>maybe <answer>Roche</answer></think><search>Genentech</search>"],
                                           ("Genentech",), 0.0),
    "a megabyte before the answer": (["x" * 1_000_001 + "<answer>Genentech</answer>"], ("Genentech",), 1.0),
    "a query over a thousand characters is sent whole": (["<search>" + "Evan Morris " * 200 + "</search>",
                                                          "<answer>Genentech</answer>"], ("Genentech",), 1.0),
    "an invalid last turn scores its sentence's example": (["nothing"] * 5, ("and",), 1.0),
    "the final turn's search is not run": (["<search>Roche</search>"] * 5, ("Genentech",), 0.0),
    "an answer in a passage counts": (["<search>Beijing capital China</search>", "no tags"] * 3, ("Roche",), 0.0),
    "an empty answer ends the episode": (["<answer></answer>"], ("",), 1.0),
}


@pytest.mark.parametrize("name", list(CASES))
def test_each_case_of_the_issue_plays_as_search_r1_plays_it(bm25, name):
    turns, golds, reward = CASES[name]
    assert _play_both(bm25, turns, golds)["reward"] == reward


def test_a_passage_holding_an_answer_tag_is_scored_when_it_is_last(bm25):
    # The passage's answer is the last one when the model answers nothing after it.
    expected = _play_both(bm25, ["<search>Beijing capital China</search>"] * 5, ("Roche",))
    assert expected["scored"] == "Roche" and expected["reward"] == 1.0


def test_acted_answer_scoring_is_the_documented_option(bm25):
    question = {"question": "q", "golden_answers": ["Genentech"]}
    env = gymnasium.make("SearchQA-v0", action_format="search-r1", tasks=[question], retriever=bm25,
                         scoring="answer")
    env.reset(seed=0)
    *_, info = env.step("<answer>Roche</answer><answer>Genentech</answer><search>q</search>")
    assert info["report"]["score"] == 0.0 and info["report"]["scored_answer"] == "Roche"
    env.reset(seed=0)
    for _ in range(4):
        env.step("<search>Evan Morris</search>")
    *_, reward, _, truncated, info = env.step("<search>Evan Morris</search>")
    assert truncated and reward == 0.0 and info["report"]["answer"] is None


def test_scoring_is_checked():
    from agentgym import ConfigError

    with pytest.raises(ConfigError, match="scoring"):
        gymnasium.make("SearchQA-v0", action_format="search-r1", scoring="last")
    with pytest.raises(ConfigError, match="scoring"):
        gymnasium.make("SearchQA-v0", scoring="transcript")  # agentgym's prompt has one example answer


PARTS = ["<search>", "</search>", "<answer>", "</answer>", "<think>", "</think>", "Genentech", "Evan Morris",
         "Roche", " ", "\n", "<", "x", "and", "Beijing"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.sampled_from(PARTS), max_size=12).map("".join), min_size=5, max_size=5),
       st.sampled_from([("Genentech",), ("Beijing",), ("and",), ("Roche", "")]), st.integers(1, 4))
def test_random_episodes_play_as_search_r1_plays_them(bm25, turns, golds, max_turns):
    _play_both(bm25, turns + ["<answer>Genentech</answer>"] * max_turns, golds, max_turns)


def test_the_query_sent_is_cut_to_max_query_chars_the_one_difference(bm25):
    """An 8 MB <search> was sent whole: seconds of BM25 CPU in the env, a 504 on the server. It is
    read in one linear pass as before, and the query sent is its first max_query_chars characters."""
    from agentgym.envs.searchqa.env import SEARCH_R1_QUERY_CHARS

    recording = Recording(bm25)
    env = gymnasium.make("SearchQA-v0", action_format="search-r1", retriever=recording,
                         tasks=[{"question": "q", "golden_answers": ["Genentech"]}])
    env.reset(seed=0)
    query = "Evan Morris " * (8_000_000 // 12)
    observation, *_, info = env.step(f"<search>{query}</search>")
    assert recording.queries == [query.strip()[:SEARCH_R1_QUERY_CHARS]]
    assert info["extra"]["query_cut_from"] == len(query.strip()) and "Genentech" in observation
    env.step("<search>Evan Morris</search>")  # a query under the cap goes as it is, and says nothing
    assert recording.queries[-1] == "Evan Morris"
    short = gymnasium.make("SearchQA-v0", action_format="search-r1", retriever=recording, max_query_chars=5)
    short.reset(seed=0)
    short.step("<search>Evan Morris</search>")
    assert recording.queries[-1] == "Evan "
