"""Specs: documents round-trip, schedules are piecewise as declared, bad specs say what is wrong."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from agentgym import ConfigError
from agentgym.rewards import PRESETS, TERM_KINDS, RewardSpec, build_shaper, load_preset, load_spec, preset_text
from agentgym.rewards.presets import preset_document

CONSTRAINTS = ["is_valid_restaurants", "is_not_absent", "valid_cost", "valid_cuisine"]
finite = st.floats(0, 100, allow_nan=False, allow_infinity=False)
positive = st.floats(0.001, 100, allow_nan=False, allow_infinity=False)


@st.composite
def weight_docs(draw, fraction=False):
    if draw(st.booleans()):
        return draw(finite)
    high = 1.0 if fraction else 1000.0
    start = draw(st.floats(0, high / 2, allow_nan=False))
    end = draw(st.floats(start + 0.001, high, allow_nan=False)) if start + 0.001 <= high else high
    return {"kind": "linear", "start": start, "end": end, "initial": draw(finite), "final": draw(finite)}


KIND_FIELDS = {
    "format": st.fixed_dictionaries({}, optional={"require_answer": st.just(False),
                                                  "balanced_tags": st.lists(st.sampled_from(["think", "search"]),
                                                                            min_size=1, max_size=2)}),
    "answer_length": st.fixed_dictionaries({}, optional={"unit": st.just("chars")}),
    "final_pass": st.fixed_dictionaries({}, optional={"evaluator": st.just("official")}),
    "hard_micro": st.fixed_dictionaries({}, optional={"evaluator": st.just("official")}),
    "constraint": st.fixed_dictionaries({"constraint": st.sampled_from(CONSTRAINTS)},
                                        optional={"evaluator": st.just("official")}),
    "la_bleu": st.fixed_dictionaries({}, optional={"max_order": st.integers(1, 3), "floor": positive,
                                                   "length_penalty": st.just("brevity")}),
    "llm_judge": st.fixed_dictionaries({"model": st.just("judge-model")},
                                       optional={"timeout": positive, "max_retries": st.integers(0, 5),
                                                 "cache_size": st.integers(0, 10)}),
    "custom": st.fixed_dictionaries({"function": st.just("reward_fixture_terms:scripted")},
                                    optional={"params": st.dictionaries(st.sampled_from("abc"), st.integers(), min_size=1),
                                              "content": st.just(True)}),
}
SIMPLE_KINDS = ["tool_call_validity", "tool_error_rate", "num_turns", "outcome", "schema", "commonsense_micro",
                "commonsense_macro", "hard_macro", "exact_match", "sub_em", "token_f1"]


@st.composite
def term_lists(draw, fraction=False, prefix="term"):
    terms = []
    for i in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(SIMPLE_KINDS + list(KIND_FIELDS)))
        doc = {"kind": kind, "weight": draw(weight_docs(fraction)), "name": f"{prefix}{i}"}
        doc.update(draw(KIND_FIELDS[kind]) if kind in KIND_FIELDS else {})
        doc.update(draw(st.fixed_dictionaries({}, optional={"penalty": st.just(True), "cap": positive})))
        if draw(st.booleans()):
            source = draw(st.sampled_from(["outcome", *(t["name"] for t in terms)]))
            gate = {"term": source}
            if draw(st.booleans()):
                gate["at_least"] = draw(st.floats(0, 1))
            doc["gate"] = gate
        terms.append(doc)
    return terms


@st.composite
def spec_docs(draw):
    unit = draw(st.sampled_from(["step", "fraction"]))
    fraction = unit == "fraction"
    doc = {} if not fraction else {"unit": "fraction"}
    if draw(st.booleans()):
        starts = sorted(set(draw(st.lists(st.floats(0.01, 1.0 if fraction else 500), max_size=3))))
        doc["stages"] = [{"name": f"s{i}", "start": s, "terms": draw(term_lists(fraction, f"s{i}_"))}
                         for i, s in enumerate([0.0, *starts])]
    else:
        doc["terms"] = draw(term_lists(fraction))
    optional = {"name": st.text(min_size=1, max_size=10), "normalize": st.just("weights"),
                "total_steps": st.integers(1, 10_000), "description": st.text(max_size=30),
                "clip": st.tuples(st.floats(-5, 0), st.floats(0.5, 5)).map(list),
                "guards": st.fixed_dictionaries({}, optional={"not_copied": st.just(False),
                                                              "min_copy_chars": st.integers(1, 99)}).filter(bool)}
    doc.update(draw(st.fixed_dictionaries({}, optional=optional)))
    return doc


@settings(max_examples=200, deadline=None)
@given(doc=spec_docs())
def test_document_to_spec_to_document_round_trips(doc):
    spec = load_spec(doc)
    assert spec.to_dict() == doc
    assert load_spec(spec.to_yaml()) == spec
    assert load_spec(spec.to_json()) == spec
    assert load_spec(yaml.safe_load(spec.to_yaml())).to_dict() == doc


@settings(max_examples=100, deadline=None)
@given(doc=spec_docs())
def test_spec_to_shaper_to_spec_round_trips(doc):
    spec = load_spec(doc)
    assert build_shaper(spec).spec == spec
    assert build_shaper(doc).spec.to_dict() == doc


@pytest.mark.parametrize("name", PRESETS)
def test_presets_load_and_round_trip_to_their_files(name):
    spec = load_spec(name)
    assert spec.name == name and spec.description
    assert spec.to_dict() == preset_document(name)
    assert name.split("/")[0].replace("_", "-") in preset_text(name).lower().replace("_", "-")


def test_preset_top_level_fields_can_be_overridden():
    spec = load_preset("planner_r1/curriculum", total_steps=600)
    assert spec.total_steps == 600 and spec.stages == load_spec("planner_r1/curriculum").stages
    assert load_spec({"preset": "planner_r1/dense", "normalize": "weights"}).normalize == "weights"


def test_specs_load_from_files_yaml_and_json_text(tmp_path):
    doc = {"terms": [{"kind": "final_pass", "weight": 1.0}]}
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(doc))
    (tmp_path / "r.json").write_text(json.dumps(doc))
    assert load_spec(str(tmp_path / "r.yaml")) == load_spec(tmp_path / "r.json") == load_spec(json.dumps(doc))
    assert load_spec("terms:\n  - {kind: final_pass, weight: 1}").to_dict() == doc


# -- schedules ---------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(gaps=st.lists(st.integers(1, 50), min_size=0, max_size=4), step=st.integers(0, 300))
def test_stages_apply_exactly_from_their_start_to_the_next_start(gaps, step):
    starts = [0]
    for gap in gaps:
        starts.append(starts[-1] + gap)
    stages = [{"name": f"s{i}", "start": s, "terms": [{"kind": "outcome", "weight": float(i + 1)}]}
              for i, s in enumerate(starts)]
    shaper = build_shaper({"stages": stages})
    expected = max(i for i, s in enumerate(starts) if s <= step)
    assert shaper.stage_at(step) == f"s{expected}"
    assert shaper.weights_at(step) == {"outcome": float(expected + 1)}


@settings(max_examples=200, deadline=None)
@given(start=st.integers(0, 100), length=st.integers(1, 100), initial=finite, final=finite,
       step=st.integers(0, 300))
def test_linear_weights_follow_the_declared_ramp_at_every_step(start, length, initial, final, step):
    weight = {"kind": "linear", "start": start, "end": start + length, "initial": initial, "final": final}
    shaper = build_shaper({"terms": [{"kind": "outcome", "weight": weight}]})
    value = shaper.weights_at(step)["outcome"]
    if step <= start:
        assert value == initial
    elif step >= start + length:
        assert value == final
    else:
        assert value == pytest.approx(initial + (final - initial) * (step - start) / length)
        assert min(initial, final) - 1e-9 <= value <= max(initial, final) + 1e-9


@settings(max_examples=100, deadline=None)
@given(total=st.integers(3, 5000), step=st.integers(0, 6000))
def test_fraction_boundaries_resolve_against_the_run_length(total, step):
    shaper = build_shaper({"preset": "planner_r1/curriculum", "total_steps": total})
    first, second = round(0.2 * total), round(0.8 * total)  # Planner-R1's 100/300/100 of 500 steps
    expected = "dense" if step < first else "macro" if step < second else "sparse"
    assert shaper.stage_at(step) == expected
    # the trainer may give the run length instead of the spec
    assert build_shaper("planner_r1/curriculum").stage_at(step, total_steps=total) == expected


def test_curriculum_keeps_every_term_in_the_breakdown_across_stages():
    shaper = build_shaper({"preset": "planner_r1/curriculum", "total_steps": 300})
    # schema gates every stage (weight 0: it multiplies, it does not add)
    assert [shaper.weights_at(s)["commonsense_micro"] for s in (0, 150, 250)] == [1.0, 0.0, 0.0]
    assert [shaper.weights_at(s)["final_pass"] for s in (0, 150, 250)] == [1.0, 1.0, 1.0]
    assert shaper.term_names == ("schema", "commonsense_micro", "hard_micro", "commonsense_macro", "hard_macro",
                                 "final_pass")


def test_fraction_unit_without_a_run_length_is_a_loud_error():
    with pytest.raises(ConfigError, match=r"^total_steps=None is not allowed; expected an int >= 1"):
        build_shaper("planner_r1/curriculum").stage_at(10)


def test_a_scheduled_spec_without_training_step_warns_once():
    shaper = build_shaper({"preset": "planner_r1/curriculum", "total_steps": 9})
    with pytest.warns(UserWarning, match="without a training step"):
        assert shaper.stage_at(None) == "dense"


# -- bad specs ---------------------------------------------------------------------------------
KINDS = ", ".join(repr(k) for k in TERM_KINDS)
WEIGHT = "a number >= 0, or {kind: linear, start, end, initial, final}"
BAD_SPECS = [
    ({"terms": [{"kind": "exakt_match", "weight": 1}]},
     f"terms[0].kind='exakt_match' is not allowed; expected {KINDS}"),
    ({"terms": [{"weight": 1}]}, f"terms[0].kind=<missing> is not allowed; expected {KINDS}"),
    ({"terms": [{"kind": "exact_match", "weight": -1}]}, f"terms[0].weight=-1 is not allowed; expected {WEIGHT}"),
    ({"terms": [{"kind": "exact_match"}]}, f"terms[0].weight=<missing> is not allowed; expected {WEIGHT} (required)"),
    ({"terms": [{"kind": "exact_match", "weight": "heavy"}]},
     f"terms[0].weight='heavy' is not allowed; expected {WEIGHT}"),
    ({"terms": [{"kind": "exact_match", "weight": True}]}, f"terms[0].weight=True is not allowed; expected {WEIGHT}"),
    ({"terms": [{"kind": "exact_match", "wieght": 1}]},
     "terms[0].wieght=1 is not allowed; expected 'cap', 'gate', 'kind', 'name', 'penalty', 'weight'"),
    ({"terms": [{"kind": "outcome", "weight": {"kind": "linear", "start": 10, "end": 5, "initial": 1, "final": 0}}]},
     "terms[0].weight.end=5.0 is not allowed; expected a boundary > start (10.0)"),
    ({"stages": [{"name": "a", "start": 0, "terms": [{"kind": "outcome", "weight": 1}]},
                 {"name": "b", "start": 0, "terms": [{"kind": "outcome", "weight": 1}]}]},
     ("stages[1].start=0.0 is not allowed; expected a start > 0.0 (where stages[0] starts): "
      "stages are listed in order and may not overlap")),
    ({"stages": [{"name": "a", "start": 5, "terms": [{"kind": "outcome", "weight": 1}]}]},
     "stages[0].start=5.0 is not allowed; expected 0 (the first stage starts the run)"),
    ({"terms": [{"kind": "constraint", "constraint": "valid_costs", "weight": 1}]},
     "terms[0].constraint='valid_costs' is not allowed; expected 'is_reasonable_visiting_city'"),
    ({"terms": [{"kind": "la_bleu", "weight": 1, "gate": {"term": "format"}}]},
     "terms[0].gate.term='format' is not allowed; expected 'outcome'"),
    ({"terms": "x"}, "terms='x' is not allowed; expected a list"),
    ({"terms": [{"kind": "outcome", "weight": 1, "penalty": "yes"}]},
     "terms[0].penalty='yes' is not allowed; expected true or false"),
    ({"terms": [{"kind": "outcome", "weight": 1}], "normalize": "mean"},
     "normalize='mean' is not allowed; expected 'none' or 'weights'"),
    ({"terms": [{"kind": "outcome", "weight": 1}], "clip": [1, 0]},
     "clip=[1.0, 0.0] is not allowed; expected [low, high] with low < high"),
    ({"terms": [{"kind": "outcome", "weight": 1}, {"kind": "outcome", "weight": 2}]},
     "terms[1].name='outcome' is not allowed; expected a name not used by another term here (taken: ['outcome'])"),
    ({}, "terms=None is not allowed; expected exactly one of 'terms' or 'stages'"),
    ({"preset": "planner_r1/dens"}, "preset='planner_r1/dens' is not allowed; expected 'planner_r1/curriculum', 'planner_r1/dense'"),
]


@pytest.mark.parametrize(("doc", "message"), BAD_SPECS)
def test_bad_specs_name_the_field_and_the_allowed_values(doc, message):
    with pytest.raises(ConfigError) as caught:
        load_spec(doc)
    assert str(caught.value).startswith(message)


def test_config_error_carries_field_value_and_allowed():
    with pytest.raises(ConfigError) as caught:
        load_spec({"terms": [{"kind": "final_pass", "weight": 1, "evaluator": "lenient"}]})
    assert (caught.value.field, caught.value.value) == ("terms[0].evaluator", "lenient")
    assert caught.value.allowed == "'strict' or 'official'"


def test_specs_are_frozen_data():
    spec = load_spec("planner_r1/dense")
    with pytest.raises(ValidationError, match="frozen"):
        spec.normalize = "weights"
    assert hash(spec) == hash(load_spec("planner_r1/dense"))
    assert isinstance(spec, RewardSpec)


def test_one_term_catalogue_the_union_the_exports_and_agentgym_list_read_from_the_registry():
    import typing

    import agentgym.rewards as rewards
    from agentgym.cli._catalog import catalog
    from agentgym.rewards._registry import TERMS
    from agentgym.rewards.spec import TERM_SPECS, Term

    assert set(TERM_KINDS) == set(TERMS) and len(TERM_KINDS) == len(TERMS)
    assert set(typing.get_args(typing.get_args(Term)[0])) == {d.spec for d in TERMS.values()}
    assert all(getattr(rewards, spec.__name__) is spec and spec.__name__ in rewards.__all__ for spec in TERM_SPECS)
    assert catalog()["reward_terms"] == list(TERM_KINDS)


def test_a_preset_override_reaches_a_judge_s_nested_fields_without_copying_the_preset():
    """Issue 29, item 4: ``{"preset": ...}`` replaced only top-level fields, so pointing prs/long's judge elsewhere
    meant copying the whole preset."""
    spec = load_spec({"preset": "prs/long", "terms": {"llm_judge": {"base_url": "http://judge:9000/v1", "max_retries": 0,
                                                                     "gate": {"at_least": 0.5}}}})
    judge = spec.terms[1]
    assert (judge.base_url, judge.max_retries, judge.gate.term, judge.gate.at_least) == \
        ("http://judge:9000/v1", 0, "format", 0.5)
    assert spec.terms[0] == load_preset("prs/long").terms[0]  # the other term is the preset's
    assert load_preset("prs/long", terms={"llm_judge": {"timeout": 5.0}}).terms[1].timeout == 5.0
    assert load_spec({"preset": "prs/short", "guards": {"min_copy_chars": 10}}).guards.single_answer is True


def test_a_term_override_reaches_the_term_in_every_stage_and_a_stage_override_one_stage():
    spec = load_preset("planner_r1/curriculum", total_steps=500, terms={"final_pass": {"evaluator": "official"}})
    assert [s.terms[-1].evaluator for s in spec.stages] == ["official"] * 3
    assert spec.stages[0].terms[1].evaluator == "strict"
    staged = load_preset("planner_r1/curriculum", stages={"macro": {"start": 0.3, "terms": {"hard_macro": {"weight": 2.0}}}})
    assert staged.stages[1].start == 0.3 and staged.stages[1].terms[4].weight == 2.0
    assert staged.stages[0].terms[4].weight == 1.0 and staged.stages[2].start == 0.8
    assert load_preset("prs/short", terms=[{"kind": "exact_match", "weight": 1.0}]).terms[0].kind == "exact_match"


@pytest.mark.parametrize("overrides, message", [
    ({"terms": {"judge": {"model": "m"}}}, "terms.'judge'"),
    ({"terms": {"llm_judge": 3}}, "terms.llm_judge"),
    ({"terms": {"llm_judge": {"max_retries": "many"}}}, "max_retries"),
])
def test_a_preset_override_naming_what_the_preset_lacks_says_what_it_has(overrides, message):
    with pytest.raises(ConfigError, match=re.escape(message)) as caught:
        load_preset("prs/long", **overrides)
    assert "llm_judge" in str(caught.value) or "max_retries" in str(caught.value)


def test_a_stage_override_naming_an_unknown_stage_lists_the_stages():
    with pytest.raises(ConfigError, match="'dense', 'macro', 'sparse'"):
        load_preset("planner_r1/curriculum", stages={"warmup": {"start": 0.1}})
