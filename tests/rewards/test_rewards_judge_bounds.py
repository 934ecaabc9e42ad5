"""The LLM judge against a hostile server on 127.0.0.1: every call ends by its deadline, reads at most
its cap, and a judge that cannot grade abstains with a reason, which ``info["reward"]`` reports.

The time bounds are deliberately loose (the deadline plus several seconds: the suite shares two
cores): the server drips or hangs for 20 s, so a client without a total deadline fails them by far.
"""

from __future__ import annotations

import time
import tracemalloc

import gymnasium
import pytest
from hostile_http import GIVE_UP_S, HUGE, HostileServer

import agentgym  # noqa: F401  (registers the env ids)
from agentgym import StepInfo
from agentgym.rewards import Episode, build_shaper
from agentgym.rewards.judge import parse_score

DEADLINE = 1.0
SLACK = 4.0
CAP = 1 << 20


@pytest.fixture(scope="module")
def hostile():
    with HostileServer() as server:
        yield server


def judge_term(url: str, **fields) -> dict:
    return {"kind": "llm_judge", "weight": 1.0, "model": "m", "base_url": url, "timeout": DEADLINE,
            "max_retries": 0, "backoff": 0.0, "max_reply_bytes": CAP, **fields}


def episode() -> Episode:
    return Episode([StepInfo(turn=1, action="answer", terminated_reason="answer", answer="Shakespeare")],
                   actions=["<answer>Shakespeare</answer>"], task_text="Who wrote Hamlet?",
                   gold_answers=["William Shakespeare"])


def judged(url: str, **fields):
    start = time.monotonic()
    breakdown = build_shaper({"terms": [judge_term(url, **fields)]}).shape(episode())
    return breakdown, time.monotonic() - start


def test_the_hostile_server_grades_normally_on_its_ok_route(hostile):
    breakdown, _ = judged(f"{hostile.url}/ok/v1")
    assert breakdown.terms["llm_judge"].raw == pytest.approx(0.7)
    assert breakdown.to_dict()["abstained"] is False and breakdown.to_dict()["abstain_reasons"] == {}


@pytest.mark.parametrize("route", ["drip-body", "drip-headers", "hang"])
def test_a_slow_server_cannot_hold_a_judge_call_past_its_deadline(hostile, route):
    """Finding 10: httpx's timeout is per read, so a drip-feeding server held a call for 40 s with timeout=2."""
    breakdown, elapsed = judged(f"{hostile.url}/{route}/v1", max_retries=1)
    term = breakdown.terms["llm_judge"]
    assert elapsed < 2 * DEADLINE + SLACK < GIVE_UP_S  # two attempts of one deadline each
    assert term.abstained and term.reason == (f"judge failed after 2 attempt(s): no answer within {DEADLINE:g} s "
                                              "(a deadline for the whole reply)")
    assert breakdown.to_dict()["abstained"] is True


@pytest.mark.parametrize("route", ["huge", "huge-declared"])
def test_a_huge_reply_is_not_read_past_the_cap_and_not_retried(hostile, route):
    """Finding 10: a 200 MB reply was read whole (1.4 GB added); the cap stops reading it."""
    before = hostile.sent[route]
    tracemalloc.start()
    try:
        breakdown, _ = judged(f"{hostile.url}/{route}/v1", max_retries=2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    term = breakdown.terms["llm_judge"]
    assert term.abstained and term.reason.startswith("judge failed (not retried): the reply ")
    assert f"than the {CAP} bytes allowed" in term.reason
    assert peak < 16 * CAP  # the reply is never held whole; a few socket buffers at most
    assert hostile.sent[route] - before < HUGE // 4  # the client stopped reading long before the end


def test_a_deeply_nested_reply_abstains_instead_of_raising_out_of_step(hostile):
    """Finding 8: a judge reply of "[" * 200000 raised RecursionError out of env.step()."""
    reward = {"terms": [judge_term(f"{hostile.url}/nested/v1")]}
    env = gymnasium.make("SearchQA-v0", tasks="train", synthetic_size="small", reward=reward)
    env.reset(seed=0)
    *_, info = env.step("<answer>Paris</answer>")
    term = info["reward"]["terms"]["llm_judge"]
    assert term["abstained"] and "garbled reply: not an OpenAI chat completion" in term["reason"]
    assert info["reward"]["abstained"] is True
    assert info["reward"]["abstain_reasons"] == {"llm_judge": term["reason"]}
    assert info["reward"]["total"] == 0.0


def test_whole_reward_abstention_is_flagged_only_when_no_term_has_a_value(hostile):
    """Finding 10: with the judge as the only term, an abstention paid 0.0 like a real 0."""
    fmt = {"kind": "format", "weight": 0.2}
    judge = {**judge_term(f"{hostile.url}/hang/v1", timeout=0.3), "weight": 0.8}
    mixed = build_shaper({"terms": [fmt, judge]}).shape(episode()).to_dict()
    assert mixed["abstained"] is False and list(mixed["abstain_reasons"]) == ["llm_judge"]
    gated = build_shaper({"terms": [{**fmt, "require_answer": True},
                                    {**judge, "gate": {"term": "format"}}]}).shape(Episode([])).to_dict()
    # format abstains (no steps) and gates the judge off: nothing gave a value
    assert gated["abstained"] is True and list(gated["abstain_reasons"]) == ["format"]
    real_zero = build_shaper({"terms": [fmt]}).shape(Episode(
        [StepInfo(turn=1, action="invalid")], actions=["oops"])).to_dict()
    assert real_zero["total"] == 0.0 and real_zero["abstained"] is False


@pytest.mark.parametrize("text", ["\n" * 2000 + "x", " " * 2000 + "score", "Score: " + "9" * 5000])
def test_score_parsing_is_linear_and_never_raises_on_degenerate_replies(text):
    """Finding 6/8 for the judge: the old multiline regex backtracked on whitespace; a 5,000-digit score
    raised ValueError (int's digit limit) past the JudgeReplyError handler."""
    from agentgym.rewards.judge import JudgeReplyError

    with pytest.raises(JudgeReplyError):
        parse_score(text)
