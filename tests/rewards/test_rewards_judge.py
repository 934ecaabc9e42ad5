"""The LLM judge against a real OpenAI-compatible stub on 127.0.0.1: grades, retries, abstention, cache."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import gymnasium
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgym import ConfigError, StepInfo
from agentgym.rewards import Episode, LLMJudge, RewardBreakdown, build_shaper, judge_for, parse_score
from agentgym.rewards.judge import JudgeReplyError


class StubJudge:
    """Serves ``POST /v1/chat/completions``; each request takes the next scripted behaviour.

    Behaviours: ``ok:N`` (a reply ending in ``Score: N``), ``text:...`` (that reply text),
    ``sleep:S`` (wait S seconds, then ``ok:5``), ``500``/``404`` (that status), ``garbage``
    (a 200 whose body is not JSON). ``default`` is used when the script is empty.
    """

    def __init__(self) -> None:
        self.script: deque[str] = deque()
        self.default = "ok:8"
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def next_behaviour(self, body: dict, headers: dict) -> str:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return self.script.popleft() if self.script else self.default

    def done(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _handler(self):
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                behaviour = stub.next_behaviour(body, dict(self.headers))
                try:
                    self._respond(behaviour, body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left
                finally:
                    stub.done()

            def _respond(self, behaviour, body):
                if self.path != "/v1/chat/completions":
                    return self._send(404, b"no such route")
                if behaviour.startswith("sleep:"):
                    time.sleep(float(behaviour.split(":")[1]))
                    behaviour = "ok:5"
                if behaviour in ("500", "404"):
                    return self._send(int(behaviour), b"upstream trouble")
                if behaviour == "garbage":
                    return self._send(200, b"<html>oops</html>")
                text = behaviour[5:] if behaviour.startswith("text:") else f"Agrees.\nScore: {behaviour[3:]}"
                reply = {"id": "x", "model": body["model"],
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}
                self._send(200, json.dumps(reply).encode())

            def _send(self, status, payload):
                self.send_response(status)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub():
    server = StubJudge()
    yield server
    server.close()


def judge_term(stub, **fields):
    return {"kind": "llm_judge", "weight": 1.0, "model": "stub-judge", "base_url": stub.url, "backoff": 0.0,
            "timeout": 2.0, **fields}


def qa(answer, question="Who wrote Hamlet?", reference="William Shakespeare", final=None):
    final = final or f"<think>Surely the Bard.</think><answer>{answer}</answer>"
    return Episode([StepInfo(turn=1, action="answer", terminated_reason="answer", answer=answer)], actions=[final],
                   task_text=question, gold_answers=[reference])


def judged(stub, episode, **fields):
    return build_shaper({"terms": [judge_term(stub, **fields)]}).shape(episode).terms["llm_judge"]


def test_the_judge_grades_the_answer_against_the_reference(stub):
    stub.script.append("ok:7")
    term = judged(stub, qa("Shakespeare"))
    assert term.raw == pytest.approx(0.7) and not term.abstained
    request = stub.requests[0]
    assert request["model"] == "stub-judge" and request["temperature"] == 0.0
    prompt = request["messages"][0]["content"]
    assert "Who wrote Hamlet?" in prompt and "William Shakespeare" in prompt and "Shakespeare\nCANDIDATE>>>" in prompt
    assert "Surely the Bard" not in prompt  # the judge never sees the policy's reasoning
    assert "agree with the reference" in prompt and "not style" in prompt


def test_identical_gradings_come_from_the_cache(stub):
    shaper = build_shaper({"terms": [judge_term(stub)]})
    first = shaper.shape(qa("Shakespeare")).terms["llm_judge"]
    again = shaper.shape(qa("Shakespeare")).terms["llm_judge"]
    assert first.raw == again.raw == 0.8 and len(stub.requests) == 1
    shaper.shape(qa("Marlowe"))
    build_shaper({"terms": [judge_term(stub)]}).shape(qa("Shakespeare"))  # another shaper, same judge settings
    assert len(stub.requests) == 2


def test_server_errors_and_timeouts_are_retried(stub):
    stub.script.extend(["500", "sleep:1.5", "ok:9"])
    term = judged(stub, qa("Shakespeare"), timeout=0.3, max_retries=2)
    assert term.raw == pytest.approx(0.9)
    assert len(stub.requests) == 3


def test_a_judge_that_keeps_failing_abstains_and_says_why(stub):
    stub.default = "500"
    shaper = build_shaper({"terms": [judge_term(stub, max_retries=2), {"kind": "outcome", "weight": 1.0}]})
    result = shaper.shape(qa("Shakespeare"))
    term = result.terms["llm_judge"]
    assert term.abstained and term.raw is None and term.contribution == 0.0
    assert term.reason.startswith("judge failed after 3 attempt(s): HTTP 500")
    assert result.abstained == ["llm_judge"] and len(stub.requests) == 3
    stub.default = "ok:10"
    assert shaper.shape(qa("Shakespeare")).terms["llm_judge"].raw == 1.0  # failures are not cached


def test_a_dead_judge_is_a_typed_failure_of_the_episode_not_a_partial_score(stub):
    stub.default = "500"
    shaper = build_shaper({"terms": [judge_term(stub, max_retries=0), {"kind": "format", "weight": 0.2}]})
    result = shaper.shape(qa("Shakespeare"))
    assert result.terms["format"].raw == 1.0 and not result.all_abstained  # format alone still scores...
    assert result.failures == {"llm_judge": "judge_unreachable"}  # ...but the episode says the judge failed
    as_info = result.to_dict()
    assert as_info["failures"] == {"llm_judge": "judge_unreachable"}
    assert RewardBreakdown.from_dict(as_info).failures == result.failures
    stub.default = "ok:10"
    assert shaper.shape(qa("Shakespeare")).failures == {}


@pytest.mark.parametrize(("behaviour", "reason"), [
    ("garbage", "garbled reply: not an OpenAI chat completion"),
    ("text:It is correct.", "garbled reply: expected one final 'Score: N' line"),
    ("text:Score: 7\nActually, Score: 3", "garbled reply: expected one final 'Score: N' line"),
    ("ok:11", "garbled reply: score 11 is outside 0..10"),
])
def test_garbled_replies_are_retried_then_abstain(stub, behaviour, reason):
    stub.default = behaviour
    term = judged(stub, qa("Shakespeare"), max_retries=1)
    assert term.abstained and term.reason.startswith(f"judge failed after 2 attempt(s): {reason}")
    assert len(stub.requests) == 2


def test_client_errors_are_not_retried(stub):
    stub.default = "404"
    term = judged(stub, qa("Shakespeare"), max_retries=3)
    assert term.abstained and term.reason.startswith("judge failed (not retried): HTTP 404")
    assert len(stub.requests) == 1


def test_concurrent_requests_stay_within_the_limit(stub):
    stub.default = "sleep:0.2"
    shaper = build_shaper({"terms": [judge_term(stub, max_concurrency=2)]})
    episodes = [qa(f"answer {i}") for i in range(6)]
    results = shaper.shape_batch(episodes, max_workers=6)
    assert [r.terms["llm_judge"].raw for r in results] == [0.5] * 6
    assert len(stub.requests) == 6 and 1 <= stub.max_in_flight <= 2


def test_prs_long_calls_the_judge_only_for_well_formed_episodes(stub, monkeypatch):
    monkeypatch.setenv("AGENTGYM_JUDGE_URL", stub.url)
    monkeypatch.setenv("AGENTGYM_JUDGE_MODEL", "stub-judge")
    shaper = build_shaper("prs/long")
    good = shaper.shape(qa("Shakespeare"))
    assert good.total == pytest.approx(0.2 + 0.8 * 0.8)
    unbalanced = qa("Shakespeare", final="<think>no end<answer>Shakespeare</answer>")
    bad = shaper.shape(unbalanced)
    assert bad.total == 0.0 and bad.terms["llm_judge"].reason == "gated off: format = 0 < 1"
    assert len(stub.requests) == 1


def test_the_judge_needs_a_model(monkeypatch, stub):
    monkeypatch.delenv("AGENTGYM_JUDGE_MODEL", raising=False)
    with pytest.raises(ConfigError, match=r"^terms\[0\]\.model=None is not allowed; expected a model name"):
        build_shaper({"terms": [{"kind": "llm_judge", "weight": 1.0, "base_url": stub.url}]})


def test_the_api_key_comes_from_the_named_environment_variable(monkeypatch, stub):
    with pytest.raises(ConfigError, match=r"^terms\[0\]\.api_key_env='MY_UNSET_KEY' is not allowed"):
        build_shaper({"terms": [judge_term(stub, api_key_env="MY_UNSET_KEY")]})
    monkeypatch.setenv("MY_JUDGE_KEY", "sk-test")
    judged(stub, qa("Shakespeare"), api_key_env="MY_JUDGE_KEY")
    assert stub.headers[-1]["Authorization"] == "Bearer sk-test"


def test_a_judge_plugs_into_the_long_form_env_hook(stub):
    judge = judge_for(LLMJudge.model_validate(judge_term(stub, max_retries=0)))
    stub.script.extend(["ok:6", "500"])
    assert judge("Who wrote Hamlet?", "Shakespeare", ["William Shakespeare"]) == pytest.approx(0.6)
    assert judge("Who wrote Hamlet?", "Marlowe", ["William Shakespeare"]) is None  # failed: no grade
    assert judge.stats["failures"] == 1 and judge.stats["requests"] == 2


def test_the_long_form_env_marks_a_failed_judge_on_its_terminal_step(stub):
    import gymnasium

    judge = judge_for(LLMJudge.model_validate(judge_term(stub, max_retries=0)))
    env = gymnasium.make("SearchQA-LongForm-v0", judge=judge)
    stub.default = "ok:6"
    env.reset(seed=0)
    info = env.step("<answer>Someone</answer>")[4]
    assert info["failure"] is None and info["report"]["scorer"] == "judge"
    stub.default = "500"
    env.reset(seed=0)
    info = env.step("<answer>Someone else</answer>")[4]  # not in the judge's cache
    assert info["report"]["scorer"] == "lexical"  # the documented fallback still scores the report...
    assert info["failure"]["reason"] == "judge_unreachable"  # ...and the episode says it is not the judge's grade


@pytest.mark.parametrize(("text", "score"), [("Score: 0", 0.0), ("Fine.\nscore : 10\n", 1.0), ("ok\nScore:7", 0.7)])
def test_scores_parse_strictly(text, score):
    assert parse_score(text) == score


@pytest.mark.parametrize("text", ["Score: 7.5", "Score: 7\nbecause", "7/10", "", "Score: -1", "Score: 3\nScore: 4"])
def test_anything_else_is_not_a_score(text):
    with pytest.raises(JudgeReplyError):
        parse_score(text)


# -- model text of any kind (issue 30, item 7) -----------------------------------------------
_MODEL_TEXT = st.lists(st.one_of(
    st.text(st.characters(exclude_categories=())),  # every code point, lone surrogates included
    st.sampled_from(["\ud800", "\udfff", "\ud83d\ude00", "\x00", "</answer>", "<answer>", "{answer}", "{question}",
                     "\\u0000", "\"", "\\"]),
)).map("".join)


def _valid_unicode(text: str) -> str:
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _searchqa_judged(stub):
    reward = {"terms": [judge_term(stub)]}
    env = gymnasium.make("SearchQA-v0", tasks="train", synthetic_size="small", reward=reward,
                         action_format="search-r1")
    env.reset(seed=0)
    return env


def test_a_lone_surrogate_in_an_answer_is_graded_with_a_replacement_character(stub):
    """It raised UnicodeEncodeError out of env.step (the judge request's body could not be encoded)."""
    *_, terminated, _, info = _searchqa_judged(stub).step("<answer>Shake\ud800speare</answer>")
    assert terminated and info["reward"]["terms"]["llm_judge"]["raw"] == pytest.approx(0.8)
    assert "<<<CANDIDATE\nShake\ufffdspeare\nCANDIDATE>>>" in stub.requests[-1]["messages"][0]["content"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(answer=_MODEL_TEXT)
def test_the_judge_term_never_makes_step_raise_on_model_text(stub, answer):
    env, before = _searchqa_judged(stub), len(stub.requests)
    *_, terminated, _, info = env.step(f"<answer>{answer}</answer>")
    term = info["reward"]["terms"]["llm_judge"]
    assert terminated and not term["abstained"] and term["raw"] in (0.0, pytest.approx(0.8))
    for request in stub.requests[before:]:  # none when the cache had the grade
        candidate = request["messages"][0]["content"].partition("<<<CANDIDATE\n")[2]
        assert candidate == _valid_unicode(candidate)  # no lone surrogate reached the judge


@settings(max_examples=200, deadline=None)
@given(text=_MODEL_TEXT)
def test_request_bodies_encode_any_text_as_valid_json(text):
    from agentgym._http import json_bytes

    body = json_bytes({"content": text})
    assert json.loads(body.decode("utf-8")) == {"content": _valid_unicode(text)}


def test_no_text_is_read_as_a_placeholder(stub):
    """The rubric was filled by sequential replaces through NUL markers: a question holding "\\0a" got the
    answer spliced into it."""
    episode = qa("{question} and \x00q", question="What is \x00a, {answer}?", reference="\x00r")
    judged(stub, episode)
    prompt = stub.requests[-1]["messages"][0]["content"]
    assert "Question:\nWhat is \x00a, {answer}?\n" in prompt and "Reference answer:\n\x00r\n" in prompt
    assert "<<<CANDIDATE\n{question} and \x00q\nCANDIDATE>>>" in prompt


def test_the_judge_hook_takes_the_reward_inputs_names_and_still_the_old_ones(stub):
    """Defect: the hook's contract was ``judge(question, answer, references)``; it is the reward
    inputs' ``(task_text, answer, gold_answers)``, positional calls unchanged, old keywords warned."""
    from agentgym._deprecated import AgentGymDeprecationWarning

    judge = judge_for(LLMJudge.model_validate(judge_term(stub, max_retries=0)))
    stub.default = "ok:7"
    assert judge("Who wrote Hamlet?", "Shakespeare", ["William Shakespeare"]) == pytest.approx(0.7)
    assert judge(task_text="Who wrote Hamlet?", answer="Marlowe", gold_answers=["William Shakespeare"]) \
        == pytest.approx(0.7)
    with pytest.warns(AgentGymDeprecationWarning) as caught:
        assert judge(question="Who wrote Hamlet?", answer="Kyd", references=["William Shakespeare"]) \
            == pytest.approx(0.7)
    assert sorted(str(w.message).split(" kwarg ")[1].split(" is ")[0] for w in caught) == ["'question'", "'references'"]
