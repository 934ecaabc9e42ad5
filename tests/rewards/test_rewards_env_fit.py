"""Reward terms know their env (issue 22, items 2 and 4).

A TravelPlanner term on a SearchQA env raised ``KeyError`` at the episode's last step, and a
``total_steps`` of ``10**400`` an ``OverflowError``. Now a spec whose terms do not fit the env is
refused when the env is made, integers are bounded when the spec is built, anything that still
reaches shaping abstains, and ``Episode.from_infos`` raises ``DataError``.

The property test shapes fuzzed specs on recorded episodes of both envs; it runs 300 examples by
default, and ``AGENTGYM_FUZZ_EXAMPLES=20000`` runs the issue's 20,000 (about 2 minutes).
"""

from __future__ import annotations

import functools
import os
import random
import warnings

import gymnasium
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import agentgym  # noqa: F401
from agentgym import ConfigError, DataError
from agentgym.envs.searchqa.env import SearchQAEnv
from agentgym.envs.travelplanner.env import TravelPlannerEnv
from agentgym.rewards import TERM_KINDS, Episode, build_shaper
from agentgym.rewards.presets import PRESETS

TRAVELPLANNER_TERMS = ("schema", "commonsense_micro", "hard_micro", "commonsense_macro", "hard_macro", "final_pass")
QA_TERMS = ("exact_match", "sub_em", "f1", "la_bleu")


@pytest.mark.parametrize("kind", TRAVELPLANNER_TERMS)
def test_a_travelplanner_term_is_refused_on_searchqa(kind):
    with pytest.raises(ConfigError) as caught:
        gymnasium.make("SearchQA-v0", reward={"terms": [{"kind": kind, "weight": 1}]})
    assert kind in str(caught.value) and "SearchQA" in str(caught.value)


@pytest.mark.parametrize("kind", [k for k in QA_TERMS if k in TERM_KINDS])
def test_a_qa_term_is_refused_on_travelplanner(kind):
    with pytest.raises(ConfigError) as caught:
        gymnasium.make("TravelPlanner-v0", reward={"terms": [{"kind": kind, "weight": 1}]})
    assert kind in str(caught.value) and "TravelPlanner" in str(caught.value) and "gold_answers" in str(caught.value)


def test_every_preset_fits_the_env_it_was_made_for(monkeypatch):
    monkeypatch.setenv("AGENTGYM_JUDGE_MODEL", "judge")  # prs/long grades with a judge; never called here
    fits = {"planner_r1": TravelPlannerEnv, "prs": SearchQAEnv}
    for name in PRESETS:
        build_shaper(name, env=fits[name.partition("/")[0]])
        other = SearchQAEnv if fits[name.partition("/")[0]] is TravelPlannerEnv else TravelPlannerEnv
        with pytest.raises(ConfigError):
            build_shaper(name, env=other)


def test_the_issue_reproducer_is_a_config_error_at_make_time():
    with pytest.raises(ConfigError, match="final_pass"):
        gymnasium.make("SearchQA-v0", reward={"terms": [{"kind": "final_pass", "weight": 1}]})


def test_a_foreign_report_makes_travelplanner_terms_abstain():
    """Shaped without an env check (e.g. offline), a SearchQA episode gets abstentions, not KeyError."""
    shaper = build_shaper({"terms": [{"kind": k, "weight": 1} for k in TRAVELPLANNER_TERMS[1:]]
                           + [{"kind": "constraint", "constraint": "valid_cost", "weight": 1}]})
    steps, actions, context = _episodes()["SearchQA"][0]
    breakdown = shaper.shape(Episode(steps, actions=actions, **context))
    assert all(t.abstained for t in breakdown.terms.values()), breakdown.terms


@pytest.mark.parametrize("spec", [
    {"unit": "fraction", "total_steps": 10**400, "stages": [{"name": "a", "start": 0, "terms": [{"kind": "format", "weight": 1}]}]},
    {"terms": [{"kind": "format", "weight": 1}], "guards": {"min_copy_chars": 10**400}},
])
def test_huge_integers_are_refused_when_the_spec_is_built(spec):
    with pytest.raises(ConfigError):
        build_shaper(spec)


def test_huge_training_steps_are_config_errors():
    shaper = build_shaper("planner_r1/curriculum")
    steps, actions, context = _episodes()["TravelPlanner"][0]
    with pytest.raises(ConfigError, match="total_steps"):
        shaper.shape(Episode(steps, actions=actions, **context), 1, 10**400)
    with pytest.raises(ConfigError, match="training_step"):
        shaper.shape(Episode(steps, actions=actions, **context), 10**400, 100)


@pytest.mark.parametrize("infos", [[{}], ["x"], [{"turn": "one"}], [None], [{"turn": 1}, 3]])
def test_episode_from_bad_infos_is_a_data_error(infos):
    with pytest.raises(DataError, match=r"infos\[\d\]"):
        Episode.from_infos(infos)


# -- fuzzing ------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _episodes() -> dict[str, list[tuple[list, list[str], dict]]]:
    """A few recorded episodes of each env: random tool calls, unreadable turns, and an answer."""
    rng = random.Random(0)
    scripts = {
        "TravelPlanner": ["CitySearch[Texas]", "AccommodationSearch[Nowhere]", "garbage ]]",
                          'Finish[[{"days": 1, "current_city": "from A to B"}]]', "GiveUp[no]"],
        "SearchQA": ["<search>capital of France</search>", "<answer>Paris</answer>", "nonsense", "<answer></answer>"],
    }
    found: dict[str, list] = {}
    for name, env_id in (("TravelPlanner", "TravelPlanner-v0"), ("SearchQA", "SearchQA-v0")):
        env = gymnasium.make(env_id)
        found[name] = []
        for seed in range(4):
            obs, _ = env.reset(seed=seed)
            steps, actions = [], []
            for _ in range(rng.randint(1, 4)):
                action = rng.choice(scripts[name])
                obs, _, terminated, truncated, info = env.step(action)
                steps.append(Episode.from_infos([info]).steps[0])
                actions.append(action)
                if terminated or truncated:
                    break
            found[name].append((steps, actions, {"prompt": obs, **env.unwrapped.reward_context()}))
        env.close()
    return found


_FUZZED_KINDS = [k for k in TERM_KINDS if k not in ("llm_judge", "custom")]  # no servers, no imports
_huge = st.sampled_from([10**400, -(10**400), 10**12, 10**13, 2**63, 1e308, -1e308, float("nan"), float("inf")])
_junk = st.one_of(_huge, st.integers(-3, -1), st.text(max_size=3), st.none(), st.booleans())
_fine = st.one_of(st.integers(0, 1000), st.floats(0, 10, allow_nan=False))
_number = st.one_of(*[_fine] * 8, _junk)  # mostly usable, so that many specs get to shaping
_weight = st.one_of(_number, _number, st.fixed_dictionaries(
    {"kind": st.just("linear"), "start": _number, "end": _number, "initial": _number, "final": _number}))
_extra = st.one_of(st.just({}), st.just({}), st.fixed_dictionaries({}, optional={
    "evaluator": st.sampled_from(["strict", "official", "x"]),
    "constraint": st.sampled_from(["valid_cost", "is_valid_restaurants", "nope"]),
    "max_order": _number, "floor": _number}))
_term = st.builds(lambda base, extra: {**base, **extra}, st.fixed_dictionaries(
    {"kind": st.sampled_from(_FUZZED_KINDS), "weight": _weight},
    optional={"name": st.sampled_from(["a", "b", "c", "outcome"]), "penalty": st.booleans(), "cap": _number,
              "gate": st.fixed_dictionaries({"term": st.sampled_from(["a", "b", "outcome", "format"]),
                                             "at_least": _number})}), _extra)
_terms = st.lists(_term, min_size=1, max_size=4)
_stage = st.fixed_dictionaries({"name": st.sampled_from(["s1", "s2", "s3"]), "start": _number, "terms": _terms})
_total = st.one_of(st.integers(1, 10_000), st.integers(1, 10_000), _junk)
_spec = st.one_of(
    st.sampled_from(sorted(PRESETS)),
    st.fixed_dictionaries({"preset": st.sampled_from(sorted(PRESETS))},
                          optional={"total_steps": _total, "unit": st.sampled_from(["step", "fraction"])}),
    st.fixed_dictionaries({"terms": _terms}, optional={
        "normalize": st.sampled_from(["none", "weights"]), "clip": st.lists(_number, min_size=2, max_size=2),
        "guards": st.fixed_dictionaries({}, optional={"min_copy_chars": _number, "single_answer": st.booleans()}),
        "total_steps": _total}),
    st.fixed_dictionaries({"stages": st.lists(_stage, min_size=1, max_size=3)},
                          optional={"unit": st.sampled_from(["step", "fraction"]), "total_steps": _total}),
)
_step = st.one_of(st.none(), st.integers(-2, 2000), _huge, st.just(True))


@settings(max_examples=int(os.environ.get("AGENTGYM_FUZZ_EXAMPLES", 300)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(spec=_spec, env_name=st.sampled_from(["TravelPlanner", "SearchQA"]), check=st.booleans(),
       training_step=_step, total_steps=_step)
def test_fuzzed_specs_raise_only_config_or_data_errors(spec, env_name, check, training_step, total_steps):
    """Built for either env (or for none, so that unfit terms reach shaping), shaped on both envs'
    episodes: every failure is a ConfigError or a DataError."""
    env_class = TravelPlannerEnv if env_name == "TravelPlanner" else SearchQAEnv
    try:
        shaper = build_shaper(spec, env=env_class if check else None)
    except (ConfigError, DataError):
        event("refused when built")
        return
    event("built")
    for recorded in _episodes().values():
        for steps, actions, context in recorded[:2]:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # "shaped without a training step"
                    shaper.shape(Episode(steps, actions=actions, **context), training_step, total_steps)
                event("shaped")
            except (ConfigError, DataError):
                event("refused when shaped")
