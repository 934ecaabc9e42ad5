"""The shaper's fast paths give exactly what the plain paths give, and a batch keeps little alive.

Shaping reads a TravelPlanner report in place when it is what the env writes (pydantic reads any
other), decodes a plan's JSON with msgspec (json reads what msgspec refuses), and shares each
term's repeated values between episodes. Each property holds a fast path to its plain
counterpart bit for bit (-0.0 and 0.0 told apart, 1 and 1.0 and True told apart).
"""

from __future__ import annotations

import copy
import gc
import json
import math
import typing

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from agentgym import ErrorCode, StepInfo, ToolCall, ToolResult
from agentgym.envs.travelplanner.evaluation import COMMONSENSE, HARD, EvaluationReport
from agentgym.envs.travelplanner.plan import MAX_PLAN_TEXT, PLAN_KEYS, parse_plan
from agentgym.rewards import Episode, build_shaper
from agentgym.rewards import _travelplanner_read as read
from agentgym.rewards import terms_travelplanner as tp
from agentgym.rewards.terms_travelplanner import plan_schema_error
from reward_helpers import scripted_episode, scripted_term

# -- what both paths are compared by -----------------------------------------------------------


def same(a, b) -> bool:
    """Equal values of the same types all the way down (0.0 is not -0.0, 1 is not 1.0 or True)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


# -- reports: read in place vs read by pydantic ------------------------------------------------

verdicts = st.fixed_dictionaries({"passed": st.sampled_from([True, False, None]), "reason": st.text(max_size=5)})
reports = st.fixed_dictionaries({
    "evaluator": st.sampled_from(["strict", "official"]),
    "delivered": st.booleans(),
    "commonsense": st.fixed_dictionaries({name: verdicts for name in COMMONSENSE}),
    "hard": st.none() | st.fixed_dictionaries({name: verdicts for name in HARD}),
    "commonsense_pass": st.booleans(), "hard_pass": st.booleans(), "final_pass": st.booleans(),
    "commonsense_passed": st.integers(0, 8), "hard_passed": st.integers(0, 5), "hard_applicable": st.integers(0, 5),
    "commonsense_micro": st.sampled_from([0.0, 0.125, 0.875, 1.0, -0.0]), "hard_micro": st.floats(0, 1),
}, optional={"error": st.none() | st.text(max_size=5)})
ODD = [1, 0, 1.0, 0.0, "true", "strict", None, [], {}, True, False, 2**70, float("nan"), "x"]


class Subclassed(dict):
    pass


@st.composite
def odd_reports(draw):
    """A report as the env writes it, then perhaps a few changes that pydantic may or may not take."""
    report = copy.deepcopy(draw(reports))
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["drop", "set", "rename", "extra", "verdict", "subclass"]))
        key = draw(st.sampled_from(sorted(EvaluationReport.model_fields)))
        if op == "drop":
            report.pop(key, None)
        elif op == "set":
            report[key] = draw(st.sampled_from(ODD))
        elif op == "rename" and "evaluator" in report:
            report[draw(st.sampled_from(["evaluation", "mode"]))] = report.pop("evaluator")
        elif op == "extra":
            report[draw(st.sampled_from(["evaluation", "extra", "notes"]))] = draw(st.sampled_from(ODD))
        elif op == "verdict" and isinstance(report.get("commonsense"), dict):
            name = draw(st.sampled_from([*COMMONSENSE, "new_check"]))
            verdict = dict(report["commonsense"].get(name) or {"passed": True, "reason": ""})
            field = draw(st.sampled_from(["passed", "reason", "more"]))
            if draw(st.booleans()):
                verdict.pop(field, None)
            else:
                verdict[field] = draw(st.sampled_from(ODD))
            report["commonsense"][name] = verdict if draw(st.booleans()) else Subclassed(verdict)
        elif op == "subclass":
            report = Subclassed(report)
    return report


def by_pydantic(report):
    """What the TravelPlanner terms read, the plain way: the model's own validation, dumped."""
    try:
        return EvaluationReport.model_validate(report).model_dump()
    except ValidationError:
        return None


def fields(report) -> dict:
    """Every field of the model as a term reads it (verdicts by their two fields)."""
    out = {}
    for name in EvaluationReport.model_fields:
        value = report.get(name)
        if name in ("commonsense", "hard") and value is not None:
            value = {k: [v["passed"], v["reason"]] for k, v in value.items()}
        out[name] = value
    return out


@settings(max_examples=400, deadline=None)
@given(report=odd_reports())
def test_a_report_read_in_place_holds_what_pydantic_reads(report):
    fast, plain = read.checked_report(report), by_pydantic(report)
    if plain is None:
        assert fast is read.FOREIGN
    else:
        assert fast is not read.FOREIGN and same(fields(fast), fields(plain))


def one_change(field, value):
    """A valid report with one field set to ``value`` (``DROP``: removed)."""
    report = {"evaluator": "strict", "delivered": True, "commonsense_pass": False, "hard_pass": True,
              "final_pass": False, "commonsense_passed": 7, "hard_passed": 1, "hard_applicable": 1,
              "commonsense_micro": 0.875, "hard_micro": 1.0, "error": None,
              "commonsense": {c: {"passed": c != COMMONSENSE[0], "reason": "r"} for c in COMMONSENSE},
              "hard": {h: {"passed": True if h == HARD[0] else None, "reason": "r"} for h in HARD}}
    target = report
    if field.startswith("verdict."):
        target, field = report["commonsense"][COMMONSENSE[1]], field.removeprefix("verdict.")
    if value is DROP:
        target.pop(field, None)
    else:
        target[field] = value
    return report


DROP = object()


@pytest.mark.parametrize("field", [*EvaluationReport.model_fields, "evaluation", "verdict.passed", "verdict.reason"])
@pytest.mark.parametrize("value", [DROP, *ODD, Subclassed(), (), 0.5, -0.0, "official"], ids=repr)
def test_every_field_changed_alone_reads_as_pydantic_reads_it(field, value):
    report = one_change(field, value)
    fast, plain = read.checked_report(report), by_pydantic(report)
    assert fast is read.FOREIGN if plain is None else same(fields(fast), fields(plain))


@pytest.fixture
def validations(monkeypatch):
    """Counts EvaluationReport.model_validate calls."""
    calls = []
    original = EvaluationReport.model_validate.__func__
    monkeypatch.setattr(EvaluationReport, "model_validate",
                        classmethod(lambda cls, *a, **k: calls.append(1) or original(cls, *a, **k)))
    return calls


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(report=reports)
def test_a_report_as_the_env_writes_it_is_read_in_place_without_pydantic(report, validations):
    assert read.checked_report(report) is report and validations == []


def test_the_in_place_check_covers_every_field_of_the_model():
    """The check mirrors EvaluationReport: a field added to the model must be added to it."""
    kinds = {name: field.annotation for name, field in EvaluationReport.model_fields.items()}
    checked = {**dict.fromkeys(read.BOOLS, bool), **dict.fromkeys(read.INTS, int), **dict.fromkeys(read.FLOATS, float)}
    assert {k: kinds[k] for k in checked} == checked
    assert set(kinds) - set(checked) == {"evaluator", "commonsense", "hard", "error"}
    assert set(typing.get_args(kinds["evaluator"])) == set(read.EVALUATORS)
    verdict = typing.get_args(typing.get_args(kinds["hard"])[0])[1]
    assert {k: f.annotation for k, f in verdict.model_fields.items()} == {"passed": bool | None, "reason": str}


# -- plan JSON: msgspec vs json ----------------------------------------------------------------


def listed_by_json(text):
    """The plain reading of a bare JSON answer: json alone."""
    if text is None or not text.lstrip().startswith("[") or len(text) > MAX_PLAN_TEXT:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, list) else None


scalars = (st.none() | st.booleans() | st.integers() | st.integers(-2**80, 2**80)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=6))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=8)
days = st.dictionaries(st.sampled_from(PLAN_KEYS) | st.text(max_size=3), scalars, max_size=9)


@st.composite
def schema_plans(draw):
    """Day lists near the schema: right or wrong day numbers, keys and values, padding, HF's [query, days] form."""
    plan = []
    for i in range(1, draw(st.integers(0, 4)) + 1):
        day = {k: (draw(st.sampled_from([i, i + 1, str(i), True, 1.0])) if k == "days" else
                   draw(st.sampled_from(["Dallas", "-", " ", "", "\u3000", 3, None]))) for k in PLAN_KEYS}
        if draw(st.integers(0, 3)) == 0:
            del day[draw(st.sampled_from(PLAN_KEYS))]
        if draw(st.integers(0, 3)) == 0:
            day[draw(st.sampled_from(["day", "notes", "Days"]))] = 1
        plan.append(day)
    plan += draw(st.lists(st.sampled_from([{}, {"current_city": ""}, {"days": None}]), max_size=2))
    return [{"org": "Dallas"}, plan] if draw(st.integers(0, 4)) == 0 else plan


plans = schema_plans() | st.lists(days, max_size=4) | st.lists(json_values, max_size=3)


@st.composite
def plan_texts(draw):
    text = json.dumps(draw(plans), ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 1])))
    for _ in range(draw(st.integers(0, 2))):  # a few edits: broken, padded, or doubled texts
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(["", "[", "]", "{", ",", '"', "\\ud800", "1e400", " ", "x", "-0"])) \
            + text[at + draw(st.integers(0, 2)):]
    return text


answers = plan_texts() | st.text(max_size=20).map(lambda t: "[" + t) | st.sampled_from([None, "", "junk"])


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=answers)
def test_a_plan_decoded_by_msgspec_is_what_json_reads(text):
    assert same(read.listed(text), listed_by_json(text))


FULL_DAY = json.dumps({k: (1 if k == "days" else "Dallas") for k in PLAN_KEYS})


@pytest.mark.parametrize("text", ['[{"days": 1}, {}]', '[{}]', '[]', '[{ }, {"current_city": ""}]', "[{\n}]",
                                  '[{"days": 1, "days": 2}]', '[{"org": 1}, []]', '[{}, {\x0c}]',
                                  f"[{FULL_DAY}, {{ }}, {{}}]", f'[{FULL_DAY}, {{"current_city": ""}}]',
                                  f"[{FULL_DAY}, {{\x0c}}]", f"[{FULL_DAY}, {{}}, {FULL_DAY}]", f"[{FULL_DAY}]"])
def test_the_schema_of_odd_day_lists_is_the_schema_of_parse_plan(text):
    listed = listed_by_json(text)
    for day_count in (None, 1, 2):
        plain = 0.0 if plan_schema_error(parse_plan(text if listed is None else listed), day_count) else 1.0
        assert tp.schema_valid(text, {"days": day_count}) == plain


def test_deep_nesting_and_json_only_values_fall_back_to_json():
    for text in ["[" * 5000 + "]" * 5000, "[NaN]", '[{"a": Infinity}]', '[{"a": 1e400}]', '["\\ud800"]',
                 "[" + "9" * 5000 + "]", '[{"days": 1, "a": [1, [2]]}]']:
        assert same(read.listed(text), listed_by_json(text))


@pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")  # parse_plan's literal reading
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=answers, day_count=st.none() | st.integers(0, 5))
def test_the_schema_checked_without_a_parsed_plan_is_the_schema_of_parse_plan(text, day_count):
    listed = listed_by_json(text)
    plain = 0.0 if plan_schema_error(parse_plan(text if listed is None else listed), day_count) else 1.0
    assert same(tp.schema_valid(text, {"days": day_count}), plain)


# -- shaping: values shared between episodes vs made afresh ------------------------------------

SPECS = [
    "planner_r1/dense", "planner_r1/sparse",
    {"preset": "planner_r1/curriculum", "total_steps": 10},
    {"normalize": "weights", "clip": [-1.0, 3.0], "terms": [
        {"kind": "schema", "weight": 0.5},
        {"kind": "final_pass", "weight": 1.0, "gate": {"term": "outcome"}},
        {"kind": "commonsense_micro", "weight": 2.0, "cap": 0.7, "gate": {"term": "schema", "at_least": 0.5}},
        {"kind": "hard_micro", "weight": 1.0, "penalty": True, "evaluator": "strict"},
        {"kind": "format", "weight": 0.1, "cap": 0.05},
        {"kind": "tool_call_validity", "weight": 0.3, "gate": {"term": "format"}},
        {"kind": "tool_error_rate", "weight": 0.2, "penalty": True},
        {"kind": "num_turns", "weight": 0.01, "penalty": True},
        *({"kind": "constraint", "constraint": c, "weight": 0.25, "penalty": i % 2 == 1}
          for i, c in enumerate(COMMONSENSE + HARD)),
    ]},
]


def tool(turn: int, error: bool) -> StepInfo:
    return StepInfo(turn=turn, action="tool", tool_call=ToolCall(name="RestaurantSearch", arguments={"city": "X"}),
                    tool_result=ToolResult(content="rows", error=ErrorCode.INVALID_ARGUMENT if error else None))


@st.composite
def episodes(draw):
    """Inputs of one TravelPlanner episode: tool steps, then an answer (a plan text or junk), a give-up or nothing."""
    steps = [tool(t, draw(st.booleans())) if draw(st.integers(0, 4)) else
             StepInfo(turn=t, action="invalid") for t in range(1, draw(st.integers(0, 4)) + 1)]
    day_count = draw(st.integers(1, 4))
    plan = [{k: (i if k == "days" else draw(st.sampled_from(["-", "Dallas", " ", "x"]))) for k in PLAN_KEYS}
            for i in range(1, day_count + 1)]
    answer = draw(st.sampled_from([json.dumps(plan), json.dumps(plan[:-1]), json.dumps(plan + [{}]), "junk", "",
                                   "[1, 2]", None]))
    end = draw(st.sampled_from(["answer", "give_up", None]))
    report = draw(odd_reports() | reports | st.none())
    if end is not None:
        steps.append(StepInfo(turn=len(steps) + 1, action=end, terminated_reason=end, report=report,
                              answer=answer if end == "answer" else None))
    prompt = draw(st.sampled_from(["Plan a trip of a few days.", f"Copy this: {answer}"]))
    outcome = draw(st.sampled_from([None, 0.0, 1.0, -0.0]))
    return {"steps": steps, "actions": ["a"] * len(steps), "prompt": prompt, "task": {"days": day_count},
            "outcome": outcome}


RAWS = [0.0, -0.0, 1.0, 0.5, -2.0, None, 3.0]


@st.composite
def scripted_specs(draw):
    """Specs of scripted terms (raw values read from the episode's task dict), gated, capped and penalized at random."""
    terms = []
    for i in range(draw(st.integers(1, 4))):
        term = scripted_term(f"t{i}", draw(st.sampled_from([0.0, 0.5, 1.0, 2.0])), penalty=draw(st.booleans()),
                             content=draw(st.booleans()))
        if draw(st.booleans()):
            term["cap"] = draw(st.sampled_from([0.25, 1.0]))
        if draw(st.booleans()):
            term["gate"] = {"term": draw(st.sampled_from(["outcome", *(f"t{j}" for j in range(i))])),
                            "at_least": draw(st.sampled_from([-0.0, 0.0, 0.5, 1.0]))}
        terms.append(term)
    return {"terms": terms, "normalize": draw(st.sampled_from(["none", "weights"])),
            **({"clip": [-1.0, 1.0]} if draw(st.booleans()) else {})}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=scripted_specs(), rows=st.lists(st.tuples(st.lists(st.sampled_from(RAWS), min_size=4, max_size=4),
                                                      st.sampled_from([0.0, -0.0, 1.0, 0.5, None]),
                                                      st.sampled_from(["x", "", None])), min_size=2, max_size=10))
def test_scripted_values_shared_between_episodes_are_the_values_made_afresh(spec, rows):
    """Raw values, gate values and outcomes that compare equal but differ (0.0 and -0.0) stay apart."""
    def batch(rows_):
        return [scripted_episode({f"t{i}": v for i, v in enumerate(raws)}, outcome=outcome, answer=answer)
                for raws, outcome, answer in rows_]

    shaper = build_shaper(spec)
    together = [repr(b) for b in shaper.shape_batch(batch(rows) + batch(rows[::-1]))]
    alone = [repr(build_shaper(spec).shape(e)) for e in batch(rows) + batch(rows[::-1])]
    assert together == alone


def test_minus_zero_and_zero_keep_their_signs_in_one_batch():
    spec = {"terms": [scripted_term("a", 1.0), scripted_term("b", 1.0, gate={"term": "a", "at_least": 1.0})]}
    result = build_shaper(spec).shape_batch([scripted_episode({"a": 0.0, "b": 1.0}), scripted_episode({"a": -0.0, "b": 1.0})])
    assert [repr(b.terms["a"].raw) for b in result] == ["0.0", "-0.0"]
    assert [b.terms["b"].reason for b in result] == ["gated off: a = 0 < 1", "gated off: a = -0 < 1"]


def shaped(shaper, inputs, step):
    return [repr(b) for b in shaper.shape_batch([Episode(**i) for i in inputs], training_step=step)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=st.sampled_from(SPECS), inputs=st.lists(episodes(), min_size=1, max_size=12), step=st.integers(0, 12))
def test_values_shared_between_episodes_are_the_values_made_afresh(spec, inputs, step):
    batch = shaped(build_shaper(spec), inputs * 2, step)  # the second half reuses what the first made
    alone = [shaped(build_shaper(spec), [i], step)[0] for i in inputs]
    assert batch == alone * 2


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=st.sampled_from(SPECS), inputs=episodes(), report=reports)
def test_a_report_read_in_place_shapes_as_one_pydantic_reads(spec, inputs, report):
    """The same report, once as the env writes it and once under 0.1's key, which only pydantic reads."""
    old = {("evaluation" if k == "evaluator" else k): v for k, v in report.items()}
    plan = [{k: (i if k == "days" else "Dallas") for k in PLAN_KEYS} for i in range(1, inputs["task"]["days"] + 1)]
    last = StepInfo(turn=len(inputs["steps"]) + 1, action="answer", terminated_reason="answer", answer=json.dumps(plan))
    fast, plain = ({**inputs, "steps": [*inputs["steps"], last.model_copy(update={"report": r})]} for r in (report, old))
    assert shaped(build_shaper(spec), [fast], 3) == shaped(build_shaper(spec), [plain], 3)


# -- what a batch keeps alive ------------------------------------------------------------------


def travelplanner_batch(n: int) -> list[Episode]:
    plan = json.dumps([{k: (i if k == "days" else "Dallas") for k in PLAN_KEYS} for i in (1, 2, 3)])
    report = {"evaluator": "strict", "delivered": True,
              "commonsense": {c: {"passed": True, "reason": "ok"} for c in COMMONSENSE},
              "hard": {h: {"passed": i % 2 == 0, "reason": "ok"} for i, h in enumerate(HARD)},
              "commonsense_pass": True, "hard_pass": False, "final_pass": False, "commonsense_passed": 8,
              "hard_passed": 3, "hard_applicable": 5, "commonsense_micro": 1.0, "hard_micro": 0.6, "error": None}
    return [Episode([tool(1, False), StepInfo(turn=2, action="answer", terminated_reason="answer",
                                              answer="".join([plan[:1], plan[1:]]), report=copy.deepcopy(report))],
                    actions=["RestaurantSearch[Dallas]", f"Finish[{plan}]"], prompt="Plan a trip.",
                    task={"days": 3}) for _ in range(n)]


@pytest.mark.parametrize("spec", ["planner_r1/dense", SPECS[-1]])
def test_a_shaped_batch_keeps_few_objects_for_the_garbage_collector(spec):
    """Per-trajectory cost grew with the batch (38 us at 1k, 74 us at 100k) because each shaped
    episode kept some 20-70 tracked objects alive (a typed report, a parsed plan, one TermValue
    per term), which CPython's full collections scanned again and again as the batch grew. Now an
    episode's breakdown and its terms dict are all a batch adds."""
    shaper, episodes_ = build_shaper(spec), travelplanner_batch(300)
    shaper.shape_batch(travelplanner_batch(5))  # the plan and its shared values, made once
    gc.collect()
    before = len(gc.get_objects())
    breakdowns = shaper.shape_batch(episodes_)
    gc.collect()
    kept = (len(gc.get_objects()) - before) / len(episodes_)
    assert len(breakdowns) == 300 and kept <= 2.5, kept
