"""The client allowlist and the operator's presets, as units (the attacks over HTTP are in test_server_attacks)."""

from __future__ import annotations

import json

import gymnasium
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym.errors import ConfigError
from agentgym.server.boundary import ClientBoundary, client_options
from agentgym.server.presets import EnvPreset, Presets, load_presets

ENVS = ("TravelPlanner-v0", "SearchQA-v0", "SearchQA-LongForm-v0", "AgentGymTest/Sleepy-v0")
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=20)


def boundary(**presets) -> ClientBoundary:
    return ClientBoundary(Presets(**presets), ENVS)


@settings(max_examples=300, deadline=None)
@given(env_id=st.sampled_from(ENVS), field=st.text(min_size=1, max_size=20), value=JSON)
def test_any_field_off_the_allowlist_is_refused_naming_it(env_id, field, value):
    if field in client_options(env_id):
        return
    with pytest.raises(ConfigError) as refused:
        boundary().kwargs(env_id, None, {field: value})
    assert refused.value.field == field and "max_turns" in refused.value.allowed
    assert len(str(refused.value)) < 1000


@settings(max_examples=300, deadline=None)
@given(env_id=st.sampled_from(ENVS), data=st.data())
def test_allowed_fields_with_any_json_value_either_pass_checked_or_raise_config_error(env_id, data):
    field = data.draw(st.sampled_from(client_options(env_id)))
    value = data.draw(JSON)
    try:
        kwargs = boundary().kwargs(env_id, None, {field: value})
    except ConfigError as exc:
        assert exc.field == field
        return
    if field == "reward":  # only names reach the env, never specs
        assert isinstance(kwargs["reward"], str)
    if field in ("tasks", "queries", "questions"):
        assert isinstance(value, (list, str)) and not (isinstance(value, str) and "/" in value)
    if field == "max_turns":
        assert 1 <= kwargs["max_turns"] <= 100


def test_presets_fix_the_operators_kwargs_and_reward_names_resolve_to_its_specs():
    spec = {"terms": [{"kind": "llm_judge", "weight": 1, "model": "m", "base_url": "http://judge/v1"}]}
    gate = boundary(presets=(EnvPreset(name="wiki", env_id="SearchQA-v0", kwargs={"corpus": "/data/wiki.jsonl"},
                                       max_turns=8),), rewards={"judged": spec}, reward_presets=("prs/short",))
    kwargs = gate.kwargs("SearchQA-v0", "wiki", {"reward": "judged", "max_turns": 8})
    assert kwargs == {"corpus": "/data/wiki.jsonl", "reward": spec, "max_turns": 8}
    assert gate.kwargs("SearchQA-v0", None, {})["corpus"] == "/data/wiki.jsonl"  # the env's first preset
    with pytest.raises(ConfigError, match="prs/short"):
        gate.kwargs("SearchQA-v0", "wiki", {"reward": "planner_r1/dense"})  # not in the allowed list
    with pytest.raises(ConfigError) as too_many:
        gate.kwargs("SearchQA-v0", "wiki", {"max_turns": 9})
    assert too_many.value.field == "max_turns"
    with pytest.raises(ConfigError) as wrong_env:
        gate.kwargs("TravelPlanner-v0", "wiki", {})
    assert wrong_env.value.field == "preset"
    with pytest.raises(ConfigError) as overriding:
        gate.kwargs("SearchQA-v0", "wiki", {"corpus": "/etc/passwd"})
    assert overriding.value.field == "corpus"


def test_trusted_clients_get_open_kwargs():
    gate = ClientBoundary(Presets(), ENVS, trust_clients=True)
    assert gate.kwargs("SearchQA-v0", None, {"index_dir": "/x"}) == {"index_dir": "/x"}


def test_reset_options_are_bounded():
    gate = boundary()
    gate.check_options("TravelPlanner-v0", {"query_index": 3, "training_step": 10})
    for options, field in (({"query": {"date": "[" + "0," * 6000 + "0]"}}, "options.query"),
                           ({"query_index": "3"}, "options.query_index"), ({"colour": 1}, "options.colour")):
        with pytest.raises(ConfigError) as refused:
            gate.check_options("TravelPlanner-v0", options)
        assert refused.value.field == field



@pytest.mark.parametrize("options, field", [
    ({"task": {"date": "[" + "0," * 6000 + "0]"}}, "options.task"),  # past one inline task's bytes
    ({"task": {"a": {"b": {"c": {"d": {"e": {"f": {"g": 1}}}}}}}}, "options.task"),  # nested too deep
    ({"task_index": "3"}, "options.task_index"),
    ({"anything": 1}, "options.anything"),  # not among the env's reset_options
])
def test_reset_options_of_a_third_party_env_are_bounded_too(options, field):
    """The boundary used to return early for an env id it did not list: a served third-party env's
    clients could send an inline task of any size or depth."""
    with pytest.raises(ConfigError) as refused:
        boundary().check_options("AgentGymTest/Sleepy-v0", options)
    assert refused.value.field == field


@pytest.mark.parametrize("env_id, old, new", [("TravelPlanner-v0", "queries", "tasks"),
                                              ("TravelPlanner-v0", "evaluation", "evaluator"),
                                              ("SearchQA-v0", "questions", "tasks")])
def test_the_glossary_names_and_their_retired_spellings_pass_the_same_checks(env_id, old, new):
    gate = boundary()
    for value in ("train", [{"x": 1}], "/etc/passwd", [{"date": "x" * 20_000}]):
        outcomes = []
        for field in (old, new):
            try:
                outcomes.append(gate.kwargs(env_id, None, {field: value})[field])
            except ConfigError as exc:
                outcomes.append(type(exc))
        assert outcomes[0] == outcomes[1]
    for old_option, new_option, bad in (("query_index", "task_index", "3"), ("query_id", "task_id", "x" * 300),
                                        ("query", "task", {"date": "[" + "0," * 6000 + "0]"})):
        for option in (old_option, new_option):
            with pytest.raises(ConfigError) as refused:
                gate.check_options("TravelPlanner-v0", {option: bad})
            assert refused.value.field == f"options.{option}"


def test_a_presets_file_is_read_as_yaml_or_json_and_mistakes_are_config_errors(tmp_path):
    yaml_file = tmp_path / "presets.yaml"
    yaml_file.write_text("presets:\n  - {name: tp, env_id: TravelPlanner-v0, kwargs: {mode: sole-planning}}\n"
                         "reward_presets: [planner_r1/dense]\n")
    loaded = load_presets(yaml_file)
    assert loaded.presets[0].kwargs == {"mode": "sole-planning"} and loaded.reward_presets == ("planner_r1/dense",)
    json_file = tmp_path / "presets.json"
    json_file.write_text(json.dumps({"presets": [{"name": "a", "env_id": "SearchQA-v0"}]}))
    assert load_presets(json_file).presets[0].name == "a"
    for text in ("presets: [", "presets: [{name: a}]", "presets: [{name: a, env_id: X}, {name: a, env_id: Y}]",
                 "colour: red"):
        yaml_file.write_text(text)
        with pytest.raises(ConfigError):
            load_presets(yaml_file)
    with pytest.raises(ConfigError):
        load_presets(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="reward_presets"):
        ClientBoundary(Presets(reward_presets=("nope",)), ENVS)


def test_a_client_may_choose_the_search_r1_protocol_but_not_a_tokenizer_path():
    gate = boundary()
    kwargs = gate.kwargs("SearchQA-v0", None, {"action_format": "search-r1", "bm25": "pyserini",
                                              "max_observation_tokens": 500})
    assert kwargs == {"action_format": "search-r1", "bm25": "pyserini", "max_observation_tokens": 500}
    with pytest.raises(ConfigError) as refused:
        gate.kwargs("SearchQA-v0", None, {"tokenizer": "/models/qwen"})  # loads from a path: the operator's
    assert refused.value.field == "tokenizer"
    with pytest.raises(ConfigError):
        gate.kwargs("SearchQA-v0", None, {"max_observation_tokens": 10**9})


def test_what_a_client_may_set_is_read_from_the_env_s_class():
    from agentgym.envs.travelplanner.env import TravelPlannerEnv
    from agentgym.registration import env_class

    assert env_class("TravelPlanner-v0") is TravelPlannerEnv and env_class("Nope-v0") is None
    assert client_options("TravelPlanner-v0") == ("max_turns", "render_mode", "reward", *TravelPlannerEnv.client_kwargs,
                                                  "queries", "evaluation")  # retired spellings, from the env
    gymnasium.register("AgentGymTest/Factory-v0", entry_point=lambda: TravelPlannerEnv())
    try:  # a factory's class is unknown until it runs: the common options only
        assert client_options("AgentGymTest/Factory-v0") == ("max_turns", "render_mode", "reward")
    finally:
        gymnasium.registry.pop("AgentGymTest/Factory-v0")
