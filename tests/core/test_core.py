"""The core pieces: text space, step records, action parsing, error tree."""

from __future__ import annotations

import json
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentgym
from agentgym._deprecated import AgentGymDeprecationWarning
from agentgym.core import ErrorCode, Param, StepInfo, TextSpace, Tool, ToolBox, ToolCall, ToolResult
from agentgym.core.parsing import Answer, Call, GiveUp, parse_action
from agentgym.core.types import ActionError, Failure
from agentgym.errors import RemoteTimeout, RetrieverError, WorkerLost

TOOLS = ToolBox([
    Tool("search_flights", "FlightSearch", "Flights.",
         (Param("origin", "Departure City", "from"), Param("destination", "Destination City", "to"),
          Param("date", "Date", "YYYY-MM-DD")), lambda *a: ToolResult(content="ok")),
    Tool("search_cities", "CitySearch", "Cities.", (Param("state", "State", "state"),),
         lambda *a: ToolResult(content="ok")),
])


def test_text_space_accepts_any_str_within_length():
    space = TextSpace(10)
    assert space.contains("héllo, 世界!")
    assert not space.contains("x" * 11)
    assert not space.contains(b"bytes")
    space.seed(0)
    assert all(space.contains(space.sample()) for _ in range(50))


@given(st.text(max_size=200))
def test_text_space_contains_every_short_str(text):
    assert TextSpace(200).contains(text)


step_infos = st.builds(
    StepInfo,
    turn=st.integers(0, 100),
    action=st.sampled_from(["reset", "tool", "answer", "give_up", "invalid"]),
    tool_call=st.none() | st.builds(ToolCall, name=st.text(max_size=20),
                                    arguments=st.dictionaries(st.text(max_size=10), st.text(max_size=20), max_size=3)),
    tool_result=st.none() | st.builds(ToolResult, content=st.text(max_size=50), n_rows=st.integers(0, 9),
                                      error=st.none() | st.sampled_from(list(ErrorCode))),
    error=st.none() | st.builds(ActionError, code=st.sampled_from(list(ErrorCode)), message=st.text(max_size=50)),
    terminated_reason=st.none() | st.sampled_from(["answer", "give_up", "max_turns"]),
    task_id=st.none() | st.text(max_size=10),
    report=st.none() | st.dictionaries(st.text(max_size=10), st.integers() | st.booleans(), max_size=3),
)


@given(step_infos)
def test_step_info_survives_the_gymnasium_boundary(info):
    as_dict = info.to_info()
    assert isinstance(as_dict, dict)
    json.dumps(as_dict)  # plain JSON types only
    assert StepInfo.from_info(as_dict) == info


def test_an_info_dict_of_0_1_with_evaluation_still_reads_as_the_report_with_a_warning():
    with pytest.warns(AgentGymDeprecationWarning, match="'evaluation' is deprecated, use 'report'"):
        info = StepInfo.from_info({"turn": 1, "action": "answer", "evaluation": {"final_pass": True}})
    assert info.report == {"final_pass": True} and "evaluation" not in info.to_info()
    with pytest.warns(AgentGymDeprecationWarning, match="StepInfo.evaluation is deprecated"):
        assert info.evaluation == {"final_pass": True}


def test_a_results_line_of_0_1_with_evaluation_still_reads_as_the_report_with_a_warning():
    from agentgym.runner.records import EpisodeRecord

    line = {"episode": 0, "seed": 0, "total_reward": 1.0, "turns": 1, "terminated": True, "truncated": False,
            "evaluation": {"em": 1.0}}
    with pytest.warns(AgentGymDeprecationWarning, match="'evaluation' is deprecated, use 'report'"):
        assert EpisodeRecord.model_validate(line).report == {"em": 1.0}


def test_react_actions_parse_with_official_separator():
    parsed = parse_action("Thought: go\nAction 1: FlightSearch[New York, Boston, 2022-03-01]", TOOLS, "react")
    assert isinstance(parsed, Call)
    assert parsed.arguments == {"origin": "New York", "destination": "Boston", "date": "2022-03-01"}
    arity = parse_action("FlightSearch[New York,Boston,2022-03-01]", TOOLS, "react")
    assert isinstance(arity, ActionError) and arity.code is ErrorCode.WRONG_ARITY
    assert "FlightSearch[Departure City, Destination City, Date]" in arity.message


@pytest.mark.parametrize("text, kind", [
    ("Finish[[{\"days\": 1}]]", Answer),
    ("<answer>[1, 2]</answer>", Answer),
    ("GiveUp[too hard]", GiveUp),
    ("CitySearch[Texas]", Call),
])
def test_react_control_actions(text, kind):
    assert isinstance(parse_action(text, TOOLS, "react"), kind)


def test_the_last_complete_answer_counts():
    parsed = parse_action("<answer>one</answer> then <answer>two</answer>", TOOLS, "json")
    assert parsed == Answer("two")
    unclosed = parse_action("<answer>one", TOOLS, "json")
    assert isinstance(unclosed, ActionError) and "not closed" in unclosed.message


def test_json_tool_calls():
    call = parse_action('<tool_call>{"name": "search_cities", "arguments": {"state": "Texas"}}</tool_call>', TOOLS, "json")
    assert isinstance(call, Call) and call.arguments == {"state": "Texas"}
    as_string = parse_action('<tool_call>{"name": "search_cities", "arguments": "{\\"state\\": \\"Ohio\\"}"}</tool_call>',
                             TOOLS, "json")
    assert isinstance(as_string, Call) and as_string.arguments == {"state": "Ohio"}


@pytest.mark.parametrize("text, code", [
    ("", ErrorCode.EMPTY_ACTION),
    ("   \n\t ", ErrorCode.EMPTY_ACTION),
    ("<tool_call>{not json}</tool_call>", ErrorCode.UNPARSEABLE_ACTION),
    ('<tool_call>{"name": "fly", "arguments": {}}</tool_call>', ErrorCode.UNKNOWN_TOOL),
    ('<tool_call>{"name": "search_cities", "arguments": {}}</tool_call>', ErrorCode.WRONG_ARITY),
    ('<tool_call>{"name": "search_cities", "arguments": {"state": "x", "y": 1}}</tool_call>', ErrorCode.WRONG_ARITY),
    ('<tool_call>{"name": "search_cities", "arguments": {"state": [1]}}</tool_call>', ErrorCode.INVALID_ARGUMENT),
    ("<tool_call>[1, 2]</tool_call>", ErrorCode.UNPARSEABLE_ACTION),
    ('<tool_call>{"name": "search_cities"', ErrorCode.UNPARSEABLE_ACTION),
    ("just chatting", ErrorCode.UNPARSEABLE_ACTION),
])
def test_json_errors_name_the_problem(text, code):
    parsed = parse_action(text, TOOLS, "json")
    assert isinstance(parsed, ActionError) and parsed.code is code
    assert "\n" not in parsed.message and parsed.message


def test_unknown_react_action_suggests_the_closest():
    parsed = parse_action("FlightSerch[A, B, 2022-03-01]", TOOLS, "react")
    assert parsed.code is ErrorCode.UNKNOWN_TOOL and "Did you mean FlightSearch?" in parsed.message


@settings(max_examples=300)
@given(st.text(), st.sampled_from(["react", "json"]))
def test_parsing_never_raises(text, fmt):
    assert isinstance(parse_action(text, TOOLS, fmt), (Call, Answer, GiveUp, ActionError))


def test_public_names_are_exactly_all():
    # Submodules become attributes once imported; the public surface is everything else. The core
    # classes load on first use (a fast `agentgym --help`), so each name is touched first.
    for name in agentgym.__all__:
        getattr(agentgym, name)
    exposed = {n for n, v in vars(agentgym).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)}
    assert exposed == set(agentgym.__all__) - {"__version__"}


def test_config_error_names_field_and_allowed_values():
    err = agentgym.ConfigError("mode", "fast", ["tool-use", "sole-planning"])
    assert isinstance(err, ValueError) and isinstance(err, agentgym.AgentGymError)
    assert "mode='fast'" in str(err) and "'tool-use'" in str(err)


def test_a_misspelt_env_kwarg_names_the_allowed_ones():
    import gymnasium

    with pytest.raises(agentgym.ConfigError, match=r"^modee='x' is not allowed; expected 'mode' or another"):
        gymnasium.make("TravelPlanner-v0", modee="x")
    with pytest.raises(agentgym.ConfigError, match="'top_k'"):
        gymnasium.make("SearchQA-v0", topk=3)


def test_literal_parsing_is_safe_from_many_threads():
    from concurrent.futures import ThreadPoolExecutor

    from agentgym.envs.travelplanner.plan import parse_plan

    text = repr([{"days": d, "current_city": f"City {d}", "transportation": "-", "breakfast": "-",
                  "attraction": "-", "lunch": "-", "dinner": "-", "accommodation": "-"} for d in range(1, 8)])
    with ThreadPoolExecutor(8) as pool:
        parsed = list(pool.map(lambda _: parse_plan(text), range(400)))
    assert all(p.delivered and len(p.days) == 7 for p in parsed)


@pytest.mark.parametrize(("exc", "during", "reason"), [
    (RetrieverError("down"), "step", "retriever_unreachable"),
    (RemoteTimeout("slow", status=504), "step", "timeout"),
    (TimeoutError("slow"), "reset", "timeout"),
    (WorkerLost("gone", status=404), "step", "worker_lost"),
    (RuntimeError("boom"), "step", "env_error"),
    (RuntimeError("boom"), "reset", "reset_failed"),
])
def test_an_env_call_exception_maps_to_its_typed_failure(exc, during, reason):
    failure = Failure.of_exception(exc, during=during)
    assert failure.reason == reason and failure.message.startswith(type(exc).__name__)
    assert StepInfo.from_info(StepInfo(turn=1, failure=failure).to_info()).failure == failure


def test_a_misspelt_reset_option_lists_every_allowed_one_and_the_close_match():
    """Before, ``training_stp`` got only the task options listed (the schedule's were left out)."""
    import gymnasium

    import agentgym  # noqa: F401
    from agentgym.errors import ConfigError

    env = gymnasium.make("TravelPlanner-v0", reward="planner_r1/dense")
    with pytest.raises(ConfigError, match=r"options=\['training_stp'\] is not allowed; expected 'training_step' "
                                          r"or another reset option among \['task_index', 'task_id', 'task', "
                                          r"'training_step', 'total_steps'\]"):
        env.reset(seed=0, options={"training_stp": 3})


# -- StepInfo.view: the one reader of info dicts for the runner's records and the rollout results ----
@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["action", "task_id", "answer", "terminated_reason", "error", "report",
                                        "failure"]),
                       st.one_of(st.none(), st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=2),
                                 st.fixed_dictionaries({"code": st.sampled_from(["bad_args", 3])}))))
def test_step_view_reads_what_a_step_info_holds_and_absent_for_anything_else(info):
    from agentgym.core.types import StepInfo

    view = StepInfo.view(info)
    for field in ("action", "task_id", "answer", "terminated_reason"):
        value = getattr(view, field)
        assert value == (info[field] if isinstance(info.get(field), str) else None)
    error = info.get("error")
    assert view.error_code == (error["code"] if isinstance(error, dict) and isinstance(error.get("code"), str) else None)
    assert view.report == (info["report"] if isinstance(info.get("report"), dict) else None)


def test_step_view_agrees_with_step_info_on_a_real_step():
    import gymnasium

    from agentgym.core.types import StepInfo

    env = gymnasium.make("SearchQA-v0", synthetic_size="small")
    env.reset(seed=0)
    _, _, _, _, info = env.step("<search>nonsense tags <answer>")
    typed, view = StepInfo.from_info(info), StepInfo.view(info)
    assert (view.action, view.task_id, view.error_code) == (typed.action, typed.task_id,
                                                            typed.error_code and typed.error_code.value)
    _, _, done, _, info = env.step("<answer>x</answer>")
    typed, view = StepInfo.from_info(info), StepInfo.view(info)
    assert done and view.report == typed.report and view.answer == typed.answer == "x"
    env.close()
