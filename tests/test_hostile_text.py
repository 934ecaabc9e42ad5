"""Degenerate model text: every parser is linear, and step() never raises on it.

RL policies emit the worst text there is (a megabyte of one repeated tag, unclosed tags, huge
numbers, deep brackets). Two kinds of checks:

* **Linearity.** Each parser is timed on 16 KB .. 1 MB of a repeated degenerate pattern,
  doubling the size each time. No wall-clock bound is asserted; the test asserts that doubling the
  input multiplies the time by about 2 (at most ~2.6x, a fitted exponent <= 1.4) where a
  quadratic parser gives 4x. Times are the thread's CPU time (``time.thread_time``, so other
  processes on a shared machine do not count), min-of-repeats, and floored at 0.5 ms so that timer
  noise on tiny times cannot fail a linear parser; a doubling over 3.5x is measured again before it
  fails, and the sweep stops at the first such doubling, so a quadratic parser fails in seconds
  (before the sizes where it would take minutes).
* **Fuzzing.** Hypothesis writes actions from tag, JSON and bracket fragments for every env,
  action format and mode: step() returns an observation and an error code, never an exception.
"""

from __future__ import annotations

import ast
import json
import math
import time
from collections.abc import Callable

import gymnasium
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentgym  # noqa: F401 - registers the envs
from agentgym.core.env import TextEnv
from agentgym.core.parsing import parse_action
from agentgym.core.thoughts import strip_thoughts
from agentgym.core.types import ErrorCode, StepInfo
from agentgym.envs.travelplanner import _plan_text as pt
from agentgym.envs.travelplanner.plan import parse_plan
from agentgym.envs.travelplanner.tools import strip_state
from agentgym.errors import DataError

_CODES = {c.value for c in ErrorCode}


# -- linearity --------------------------------------------------------------------------------
SIZES = [16_000 * 2 ** k for k in range(7)]  # 16 KB .. 1 MB
FLOOR = 5e-4
MAX_EXPONENT = 1.4  # 2^1.4 = 2.6x per doubling; quadratic is 2.0
MAX_DOUBLING = 3.5


def _measure(fn: Callable[[str], object], text: str, budget: float = 0.05, repeats: int = 3) -> float:
    best, spent = math.inf, 0.0
    for _ in range(repeats):
        t = time.thread_time()
        fn(text)
        dt = time.thread_time() - t
        best, spent = min(best, dt), spent + dt
        if spent > budget:
            break
    return max(best, FLOOR)


def _text(kind: tuple[str, str, str], n: int) -> str:
    head, unit, tail = kind
    return head + unit * max(1, (n - len(head) - len(tail)) // len(unit)) + tail


def _nonlinearity(fn: Callable[[str], object], kind: tuple[str, str, str]) -> str | None:
    """Why ``fn`` does not look linear on ``kind`` texts of SIZES, or None."""
    fn(_text(kind, SIZES[0]))  # warm caches and lazy imports
    times: list[float] = []
    for n in SIZES:
        t = _measure(fn, _text(kind, n))
        if times and t / times[-1] > MAX_DOUBLING:  # measure both again, harder, before failing
            times[-1] = _measure(fn, _text(kind, n // 2), budget=0.5, repeats=7)
            t = min(t, _measure(fn, _text(kind, n), budget=0.5, repeats=7))
            if t / times[-1] > MAX_DOUBLING:
                return (f"doubling {n // 2:,} -> {n:,} chars took {times[-1] * 1e3:.1f} -> {t * 1e3:.1f} ms "
                        f"({t / times[-1]:.1f}x): not linear")
        times.append(t)
    xs, ys = [math.log(n) for n in SIZES], [math.log(t) for t in times]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    if slope > MAX_EXPONENT:
        return f"time grows as n^{slope:.2f}: {[f'{t * 1e3:.2f} ms' for t in times]}"
    return None


def assert_linear(fn: Callable[[str], object], kind: tuple[str, str, str], attempts: int = 3) -> None:
    # A quadratic parser fails every attempt; a linear one measured on a busy machine passes one.
    problems = []
    for _ in range(attempts):
        problem = _nonlinearity(fn, kind)
        if problem is None:
            return
        problems.append(problem)
    raise AssertionError("; ".join(problems))


TAG_KINDS = {
    "answer": ("", "<answer>", ""),
    "answer-closed-last": ("", "<answer>", "</answer>"),
    "close-answer": ("", "</answer>x", ""),
    "tool_call": ("", "<tool_call>", ""),
    "tool_call-closed": ("", "<tool_call>", "</tool_call>"),
    "think": ("", "<think>", ""),
    "close-think": ("", "</think>", ""),
    "information": ("", "<information>", ""),
    "search": ("", "<search>", ""),
    "Finish[": ("", "Finish[", ""),
    "Finish[-closed": ("", "Finish[", "]"),
    "brackets": ("", "[", ""),
    "braces-json": ("<tool_call>", "{", "</tool_call>"),
    "action-marker-spaces": ("Action", " ", ""),
    "action-markers": ("", "Action 1 ", ""),
    "newlines": ("x", "\n", "y"),
    "fence": ("```", "a", ""),
    "fence-spaces": ("```", " ", ""),
    "big-int": ('<tool_call>{"name": "x", "arguments": {"a": ', "9", "}}</tool_call>"),
}
PLAN_TEXT_KINDS = {
    "from-a": ("", "from a ", ""),
    "from-spaces": ("from", " ", "x"),
    "to-spaces": ("from a to b", " ", "c"),
    "parens": ("", "(a)", ""),
    "open-parens": ("x)", "(", ""),
    "spaces-paren": ("x", " ", "y"),
    "commas": ("", "a, (", ""),
}


def _travel_tools():
    return gymnasium.make("TravelPlanner-v0").unwrapped.tools


_TOOLS = None


def _tools():
    global _TOOLS
    if _TOOLS is None:
        _TOOLS = _travel_tools()
    return _TOOLS


def _searchqa(fmt: str) -> Callable[[str], object]:
    from agentgym.envs.searchqa.actions import read_action

    return lambda text: read_action(text, fmt)


ACTION_PARSERS = {
    "parse_action/react": lambda text: parse_action(text, _tools(), "react"),
    "parse_action/json": lambda text: parse_action(text, _tools(), "json"),
    "strip_thoughts": strip_thoughts,
    "parse_plan": parse_plan,
}
PLAN_TEXT_PARSERS = {
    "strict_route": pt.strict_route.__wrapped__,
    "strict_route_in": pt.strict_route_in.__wrapped__,
    "strip_suffix": pt.strip_suffix,
    "from_to": pt.from_to.__wrapped__,
    "before_paren": pt.before_paren.__wrapped__,
    "name_city": pt.name_city.__wrapped__,
    "strip_state": strip_state,
}


def _cases():
    for parser in ACTION_PARSERS:
        for kind in TAG_KINDS:
            yield pytest.param(parser, kind, id=f"{parser}:{kind}")
    for fmt in ("tags", "json"):
        for kind in ("answer", "think", "information", "search", "tool_call", "close-think"):
            yield pytest.param(f"searchqa/{fmt}", kind, id=f"searchqa.read_action/{fmt}:{kind}")
    for parser in PLAN_TEXT_PARSERS:
        for kind in PLAN_TEXT_KINDS:
            yield pytest.param(parser, kind, id=f"{parser}:{kind}")


@pytest.mark.parametrize("parser,kind", list(_cases()))
def test_every_parser_is_linear_on_repeated_patterns(parser, kind):
    if parser.startswith("searchqa/"):
        fn = _searchqa(parser.split("/")[1])
    else:
        fn = ACTION_PARSERS.get(parser) or PLAN_TEXT_PARSERS[parser]
    assert_linear(fn, TAG_KINDS.get(kind) or PLAN_TEXT_KINDS[kind])


# -- regressions ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def json_env():
    return gymnasium.make("TravelPlanner-v0", action_format="json")


@pytest.mark.parametrize("digits", [4_301, 100_000])
def test_a_json_integer_over_4300_digits_is_an_error_code_not_a_crash(json_env, digits):
    json_env.reset(seed=0)
    action = '<tool_call>{"name": "search_cities", "arguments": {"state": ' + "7" * digits + "}}</tool_call>"
    obs, reward, terminated, truncated, info = json_env.step(action)
    assert info["error"]["code"] == "unparseable_action" and not terminated
    assert "tool call" in obs and len(obs) < 1_000


@pytest.mark.parametrize("action", [
    "<tool_call>" + "[" * 200_000 + "</tool_call>",
    "{" * 200_000,
    '<tool_call>{"name": "finish", "arguments": "' + "[" * 100 + "1" + "]" * 100 + '"}</tool_call>',
    '<tool_call>{"name": "finish", "arguments": {"plan": ' + "[" * 100 + "]" * 100 + "}}</tool_call>",
])
def test_deep_json_nesting_is_an_error_code_not_a_crash(json_env, action):
    json_env.reset(seed=0)
    obs, reward, terminated, truncated, info = json_env.step(action)
    assert info["error"]["code"] in ("unparseable_action", "invalid_plan")


def test_a_huge_literal_query_field_is_refused_before_literal_eval(monkeypatch):
    """options.query.date = "[0,0,...]" took 4.5 GB and 25 s in ast.literal_eval; now it is refused
    by its size before any AST is built (counted: literal_eval is never called)."""
    calls = []
    real = ast.literal_eval
    monkeypatch.setattr(ast, "literal_eval", lambda text: calls.append(len(text)) or real(text))
    env = gymnasium.make("TravelPlanner-v0")
    row = env.unwrapped.tasks[0].to_row()
    for field, text in [("date", "[" + "0," * 50_000 + "0]"), ("local_constraint", "{" + "1:1," * 5_000 + "}")]:
        with pytest.raises(DataError, match=field):
            env.reset(options={"task": {**row, field: text}})
    assert calls and max(calls) < 1_000  # only the row's other (real) fields were parsed
    env.reset(options={"task": row})  # a real row still parses


class _Recorder(TextEnv):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seen: list[int] = []

    def on_reset(self, options):
        return "go", StepInfo(turn=0)

    def on_step(self, action):
        self.seen.append(len(action))
        return "ok", 0.0, False, StepInfo(turn=self.turn, action="tool")


def test_max_action_chars_holds_for_every_env_before_any_parsing():
    env = _Recorder(max_action_chars=100)
    env.reset()
    obs, _, terminated, _, info = env.step("<answer>" * 100)
    assert info["error"]["code"] == "action_too_long" and "800 characters" in obs and not terminated
    assert env.seen == []
    env.step("x" * 100)
    assert env.seen == [100]


# -- fuzzing ----------------------------------------------------------------------------------
_FRAGMENTS = [
    "<answer>", "</answer>", "<ANSWER>", "<tool_call>", "</tool_call>", "<think>", "</think>", "<information>",
    "</information>", "<search>", "</search>", "Finish[", "GiveUp[", "]", "[", "{", "}", "Action 1:", "\n", " ",
    '{"name": ', '"search_flights"', '"search"', '"finish"', '"give_up"', '"search_cities"', '"arguments": ',
    '{"query": ', '{"state": ', '"plan": ', '"Texas"', "null", "true", "1e999", "-0", "NaN", "Infinity", '"',
    ",", ":", "7" * 4_301, "9" * 20, "[" * 3_000, "]" * 50, "```json\n", "```", "(", ")", "from A to B",
    '[{"days": 1, "current_city": "from A to B", "transportation": "-"}]', "{'days': 1}", "\\u0000", "\x00",
    "\ud800", "İ", "CitySearch[Texas]", "FlightSearch[A, B, 2022-03-01]", "search_flights", "'",
]
_VALUES = st.sampled_from(['"Texas"', "7" * 4_301, "-" + "1" * 5_000, "1e999", "[" * 5_000, "null", '{"a": []}',
                           '"' + "[" * 50 + '"', "[" * 70 + "]" * 70, "NaN", '"\\ud800"', "0." + "1" * 5_000])
_JSON_CALLS = st.builds(lambda name, key, value, wrap: wrap.format(f'{{"name": {name}, "arguments": {{{key}: {value}}}}}'),
                        st.sampled_from(['"search_cities"', '"search_flights"', '"search"', '"finish"', '"give_up"', "1"]),
                        st.sampled_from(['"state"', '"query"', '"plan"', '"answer"', '"origin"']), _VALUES,
                        st.sampled_from(["<tool_call>{}</tool_call>", "{}", "<answer>{}</answer>", "Finish[{}]"]))
_ACTIONS = st.lists(st.sampled_from(_FRAGMENTS) | st.text(max_size=12) | _JSON_CALLS, max_size=25).map("".join)


def _assert_safe_step(env, action: str) -> None:
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert isinstance(obs, str) and math.isfinite(reward)
    if info.get("error"):
        assert info["error"]["code"] in _CODES


_TRAVEL_ENVS = [("react", "tool-use", "strict"), ("json", "tool-use", "official"),
                ("react", "sole-planning", "official"), ("json", "sole-planning", "strict")]


@pytest.mark.parametrize("fmt,mode,evaluation", _TRAVEL_ENVS)
def test_travelplanner_step_never_raises_on_fuzzed_actions(fmt, mode, evaluation):
    env = gymnasium.make("TravelPlanner-v0", action_format=fmt, mode=mode, evaluator=evaluation).unwrapped

    @settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_ACTIONS)
    def run(action):
        _assert_safe_step(env, action)

    run()


@pytest.mark.parametrize("fmt", ["tags", "json"])
def test_searchqa_step_never_raises_on_fuzzed_actions(fmt):
    env = gymnasium.make("SearchQA-v0", action_format=fmt).unwrapped

    @settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_ACTIONS)
    def run(action):
        _assert_safe_step(env, action)

    run()


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=5), kids, max_size=4),
                    max_leaves=20),
       st.sampled_from(["search_flights", "search_cities", "finish", "give_up", "notebook_write", "nope"]))
def test_any_json_value_as_a_tool_call_parses_without_raising(value, name):
    for payload in ({"name": name, "arguments": value}, {"name": name, "arguments": json.dumps(value)}, value):
        text = json.dumps(payload)
        parse_action(f"<tool_call>{text}</tool_call>", _tools(), "json")
        parse_action(text, _tools(), "json")


def test_model_text_with_invalid_escapes_parses_without_a_warning():
    """Python warns on an invalid escape in a literal (``'\\d'``); in a plan the model wrote it is data."""
    import warnings

    from agentgym.envs.travelplanner._literal import literal_eval

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert literal_eval(r"['\d', {'a': '\q'}]") == ["\\d", {"a": "\\q"}]
