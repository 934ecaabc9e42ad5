"""parse_plan: every accepted shape, and every other shape as "not delivered" (never an exception)."""

from __future__ import annotations

import json

import pytest

from agentgym.envs.travelplanner.plan import MAX_PLAN_TEXT, ParsedPlan, Plan, PlanDay, parse_plan

DAY = {"days": 1, "current_city": "from A to B", "transportation": "Taxi, from A to B", "breakfast": "-",
       "attraction": "-", "lunch": "-", "dinner": "X, B", "accommodation": "H, B"}
DAYS = [DAY, {**DAY, "days": 2, "current_city": "B"}]


@pytest.mark.parametrize("source", [
    DAYS,
    tuple(DAYS),
    json.dumps(DAYS),
    "  " + json.dumps(DAYS) + "\n",
    f"<answer>{json.dumps(DAYS)}</answer>",
    f"Thought: done.\n<answer>\n```json\n{json.dumps(DAYS)}\n```\n</answer>",
    f"<answer>draft</answer> <ANSWER>{json.dumps(DAYS)}</ANSWER>",  # the last complete answer counts
    f"```json\n{json.dumps(DAYS)}\n```",
    f"Here is the plan: {json.dumps(DAYS)} Enjoy!",
    repr(DAYS),  # a Python literal, as the official gold plans are written
    {"idx": 1, "query": "q", "plan": DAYS},
    json.dumps({"idx": 1, "query": "q", "plan": DAYS}),
    json.dumps({"idx": 1, "query": "q", "plan": DAYS}).encode(),
    [{"org": "A", "dest": "B"}, DAYS],  # the HF annotated_plan form
    repr([{"org": "A", "dest": "B"}, DAYS + [{}, {}]]),
])
def test_delivered_shapes(source):
    parsed = parse_plan(source)
    assert parsed.delivered and parsed.reason is None
    assert [d for d in parsed.days if d] == DAYS


@pytest.mark.parametrize("source, why", [
    (None, "null"),
    ([], "empty"),
    ("", "empty"),
    ("   ", "empty"),
    ({"idx": 1, "plan": None}, "null"),
    ({"idx": 1, "query": "q"}, "'plan' key"),
    (42, "int is not a plan"),
    (3.5, "float is not a plan"),
    (True, "bool is not a plan"),
    (object(), "object is not a plan"),
    ("no plan here", "not a JSON"),
    ("<answer>[1, 2", "not closed"),
    ("<answer>not json</answer>", "not a JSON"),
    ('"just a string"', "holds a string"),
    (["a", "b"], "no day objects"),
    ([[DAY]], "no day objects"),
    ([None, None], "no day objects"),
    ("[" * 5000 + "]" * 5000, "not a JSON"),
    (b"\xff\xfe", "not UTF-8"),
    ("x" * (MAX_PLAN_TEXT + 1), "longer than"),
])
def test_not_delivered_shapes(source, why):
    parsed = parse_plan(source)
    assert not parsed.delivered and parsed.days is None
    assert why in parsed.reason


def test_non_dict_entries_are_kept_for_the_evaluator():
    parsed = parse_plan([DAY, "day two", None, {}])
    assert parsed.delivered
    assert parsed.days == [DAY, "day two", None, {}]


def test_parsed_plan_passes_through_and_plan_model_converts():
    parsed = parse_plan(DAYS)
    assert parse_plan(parsed) is parsed
    plan = Plan(days=tuple(PlanDay(**d) for d in DAYS))
    assert parse_plan(plan).days == DAYS
    assert PlanDay(days=3, current_city="C").to_official()["accommodation"] == "-"


def test_parsed_plan_is_frozen():
    parsed = parse_plan(DAYS)
    with pytest.raises(Exception):
        parsed.delivered = False
    assert isinstance(parsed, ParsedPlan)
