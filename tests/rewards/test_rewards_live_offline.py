"""A logged episode shaped afterwards earns what the same episode earned live.

Offline, a user has the episode's ``info`` dicts and actions (a run log) plus what the env knows of
the task; the submitted answer must come from the infos (``StepInfo.answer``) in every action
format (``Finish[...]``, ``<answer>``, the json ``finish`` tool), not from the action text.

The run folder round: ``agentgym run --samples-per-task`` under every preset and under a spec of
every term kind, on both envs, read back with ``Rollouts.load`` and shaped again: every total, every
term's raw value and the outcome equal the live ones (issue 29: 453 of 480 TravelPlanner and 23 of
480 SearchQA trajectories rebuilt from ``results.jsonl`` got another total).
"""

from __future__ import annotations

import json

import gymnasium
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentgym  # noqa: F401  (registers the env ids)
from agentgym.envs.travelplanner.scripted import gold_plan_actions
from agentgym.envs.travelplanner.evaluation import COMMONSENSE, HARD
from agentgym.rewards import Episode, RewardBreakdown, build_shaper
from agentgym.rewards.lab import Rollouts, shape_rollouts
from agentgym.runner import RunConfig, run_eval

SCHEDULE = {"training_step": 30, "total_steps": 100}


def play(env: gymnasium.Env, actions: list[str], seed: int) -> tuple[str, list[dict], list[str], float]:
    """Play ``actions`` from a reset; the first observation, the infos, the actions played, the live reward."""
    prompt, info = env.reset(seed=seed, options=dict(SCHEDULE))
    infos, played, live = [info], [], 0.0
    for action in actions:
        _, live, terminated, truncated, info = env.step(action)
        infos.append(info)
        played.append(action)
        if terminated or truncated:
            break
    return prompt, infos, played, live


def offline(env: gymnasium.Env, preset: str, prompt: str, infos: list[dict], actions: list[str]) -> float:
    """Shape the logged episode afresh, told only what the env knows of the task (not the answer)."""
    context = {k: v for k, v in env.unwrapped.reward_context().items() if k != "answer"}
    episode = Episode.from_infos(infos, actions=actions, prompt=prompt, **context)
    return build_shaper(preset).shape(episode, SCHEDULE["training_step"], SCHEDULE["total_steps"]).total


def plan_of(submission: str) -> list:
    return json.loads(submission[submission.index("["):submission.rindex("]") + 1])


def submit(plan: list, how: str) -> str:
    text = json.dumps(plan)
    return {"finish": f"Finish[{text}]", "answer": f"<answer>{text}</answer>",
            "finish_tool": "<tool_call>" + json.dumps({"name": "finish", "arguments": {"plan": plan}}) + "</tool_call>",
            }[how]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 40), preset=st.sampled_from(["planner_r1/dense", "planner_r1/sparse",
                                                         "planner_r1/curriculum"]),
       action_format=st.sampled_from(["react", "json"]), mode=st.sampled_from(["tool-use", "sole-planning"]),
       how=st.sampled_from(["finish", "answer", "finish_tool"]), drop_days=st.integers(0, 2))
def test_travelplanner_live_and_offline_shaping_agree(seed, preset, action_format, mode, how, drop_days):
    env = gymnasium.make("TravelPlanner-v0", reward=preset, action_format=action_format, mode=mode,
                         total_steps=SCHEDULE["total_steps"])
    env.reset(seed=seed, options=dict(SCHEDULE))
    actions = gold_plan_actions(env.unwrapped.task, action_format, tools=mode == "tool-use")
    plan = plan_of(actions[-1])
    if how == "finish" and action_format == "json":
        how = "finish_tool"  # react syntax is not read in the json format
    if how == "finish_tool" and action_format == "react":
        how = "finish"
    actions[-1] = submit(plan[:len(plan) - drop_days] if drop_days < len(plan) else plan, how)
    prompt, infos, played, live = play(env, actions, seed)
    assert infos[-1]["action"] == "answer" and infos[-1]["answer"] is not None
    assert offline(env, preset, prompt, infos, played) == pytest.approx(live)


def test_the_reference_plan_scores_the_same_live_and_offline_under_dense():
    """The issue's case: 6.0 live (now 5.0 with the schema gate) but 0.0 offline, 'no answer was submitted'."""
    env = gymnasium.make("TravelPlanner-v0", reward="planner_r1/dense")
    env.reset(seed=0)
    actions = gold_plan_actions(env.unwrapped.task, "react")
    prompt, infos, played, live = play(env, actions, 0)
    assert live > 0 and offline(env, "planner_r1/dense", prompt, infos, played) == pytest.approx(live)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 40), action_format=st.sampled_from(["tags", "json"]), right=st.booleans(),
       searches=st.integers(0, 2))
def test_searchqa_live_and_offline_shaping_agree(seed, action_format, right, searches):
    env = gymnasium.make("SearchQA-v0", reward="prs/short", action_format=action_format)
    env.reset(seed=seed)
    question = env.unwrapped.task
    answer = question.golden_answers[0] if right else "certainly not this"
    if action_format == "tags":
        actions = [f"<think>look it up</think><search>{question.text}</search>"] * searches
    else:
        call = json.dumps({"name": "search", "arguments": {"query": question.text}})
        actions = [f"<tool_call>{call}</tool_call>"] * searches
    actions.append(f"<think>so</think><answer>{answer}</answer>")
    prompt, infos, played, live = play(env, actions, seed)
    assert infos[-1]["answer"] == answer
    assert offline(env, "prs/short", prompt, infos, played) == pytest.approx(live)


@pytest.mark.parametrize("env_id, metric", [("SearchQA-v0", "em"), ("SearchQA-v0", "f1"),
                                            ("SearchQA-LongForm-v0", None)])
@pytest.mark.parametrize("right", [True, False])
def test_the_outcome_reshaped_from_infos_is_the_live_one(env_id, metric, right):
    """The issue's case: a correct SearchQA episode reshaped from its infos got outcome 0 (Episode.outcome read
    only report["final_pass"]); live it got 1. The context here is what a log keeps: no outcome, no answer."""
    spec = {"terms": [{"kind": "outcome", "weight": 1.0}, {"kind": "format", "weight": 0.5, "gate": {"term": "outcome"}}]}
    env = gymnasium.make(env_id, reward=spec, **({"metric": metric} if metric else {}))
    env.reset(seed=3)
    gold = env.unwrapped.task.golden_answers[0]
    prompt, infos, played, live = play(env, [f"<answer>{gold if right else 'certainly not this'}</answer>"], 3)
    context = {k: v for k, v in env.unwrapped.reward_context().items() if k not in ("answer", "outcome")}
    episode = Episode.from_infos(infos, actions=played, prompt=prompt, **context)
    shaped = build_shaper(spec).shape(episode, SCHEDULE["training_step"], SCHEDULE["total_steps"])
    live_breakdown = RewardBreakdown.from_info(infos[-1])
    assert shaped.outcome == pytest.approx(live_breakdown.outcome) and shaped.total == pytest.approx(live)
    if env_id == "SearchQA-v0":
        assert shaped.outcome == (1.0 if right else 0.0)


# -- the run folder round ------------------------------------------------------------------------
GENERIC = [{"kind": "format", "weight": 0.3, "balanced_tags": ["think"]}, {"kind": "tool_call_validity", "weight": 0.2},
           {"kind": "tool_error_rate", "weight": 0.1, "penalty": True}, {"kind": "num_turns", "weight": 0.01, "penalty": True},
           {"kind": "answer_length", "weight": 0.001, "unit": "chars", "cap": 0.5}, {"kind": "outcome", "weight": 1.0},
           {"kind": "custom", "function": "reward_fixture_terms:answer_chars", "weight": 0.0001, "content": True}]
EVERY_TRAVELPLANNER_TERM = {"name": "every travelplanner term", "terms": [
    *GENERIC, {"kind": "schema", "weight": 0.5},
    *({"kind": k, "weight": 1.0, "evaluator": e, "name": f"{k}_{e}", **({"gate": {"term": "schema"}} if e == "strict" else {})}
      for k in ("commonsense_micro", "hard_micro", "commonsense_macro", "hard_macro", "final_pass")
      for e in ("strict", "official")),
    *({"kind": "constraint", "constraint": c, "weight": 0.1, "evaluator": "official", "name": f"official_{c}"}
      for c in COMMONSENSE + HARD),
    *({"kind": "constraint", "constraint": c, "weight": 0.1} for c in COMMONSENSE + HARD)]}
EVERY_QA_TERM = {"name": "every qa term", "terms": [
    *GENERIC, {"kind": "exact_match", "weight": 1.0}, {"kind": "sub_em", "weight": 0.5},
    {"kind": "token_f1", "weight": 0.5, "gate": {"term": "format"}}, {"kind": "la_bleu", "weight": 0.5, "max_order": 2}]}


def _judge_spec(url: str, preset: bool) -> dict:
    judge = {"base_url": url, "model": "stub-judge", "max_retries": 0}
    if preset:  # the preset itself, its judge pointed at the stub without copying it
        return {"preset": "prs/long", "terms": {"llm_judge": judge}}
    return {"name": "every long-form term", "terms": [*GENERIC, {"kind": "llm_judge", "weight": 1.0, **judge},
                                                      {"kind": "la_bleu", "weight": 0.5}]}


def run_and_reshape(tmp_path, env_id, spec, env_kwargs=None, tasks=3, samples=3):
    """Play ``agentgym run --agent perturbed --samples-per-task`` under ``spec``; reshape the folder offline."""
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec) if isinstance(spec, dict) else "", encoding="utf-8")
    reward = str(path) if isinstance(spec, dict) else spec
    out = tmp_path / "run"
    config = RunConfig(env_id=env_id, env_kwargs=env_kwargs or {}, episodes=tasks * samples,
                       samples_per_task=samples, concurrency=2, reward=reward, out=out, fsync=False,
                       agent={"kind": "perturbed"})
    outcome = run_eval(config)
    assert outcome.complete and not outcome.failed
    rollouts = Rollouts.load(out)
    assert len(rollouts) == tasks * samples and len(rollouts.groups()) == tasks
    return rollouts, shape_rollouts(rollouts, spec if isinstance(spec, dict) else reward)


def assert_live_equals_offline(rollouts, offline):
    for rollout, shaped in zip(rollouts, offline):
        live = rollout.breakdown
        assert not rollout.clipped
        assert shaped.total == pytest.approx(rollout.total) == pytest.approx(live.total), rollout.key
        assert shaped.outcome == live.outcome, rollout.key
        assert {n: t.raw for n, t in shaped.terms.items()} == pytest.approx({n: t.raw for n, t in live.terms.items()},
                                                                              nan_ok=True), rollout.key
        assert shaped.abstained == live.abstained and shaped.stage == live.stage, rollout.key
    assert len({r.total for r in rollouts}) > 1  # the perturbed agent's rollouts differ


@pytest.mark.parametrize("spec", ["planner_r1/sparse", "planner_r1/dense", "planner_r1/curriculum",
                                  EVERY_TRAVELPLANNER_TERM])
@pytest.mark.parametrize("env_kwargs", [{}, {"action_format": "json", "mode": "sole-planning", "evaluator": "official"}],
                         ids=["react-tools", "json-sole"])
def test_a_travelplanner_run_folder_reshapes_to_the_live_totals(tmp_path, spec, env_kwargs):
    rollouts, offline = run_and_reshape(tmp_path, "TravelPlanner-v0", spec, env_kwargs)
    assert_live_equals_offline(rollouts, offline)


@pytest.mark.parametrize("spec", ["prs/short", EVERY_QA_TERM])
@pytest.mark.parametrize("action_format", ["tags", "json", "search-r1"])
def test_a_searchqa_run_folder_reshapes_to_the_live_totals(tmp_path, spec, action_format):
    rollouts, offline = run_and_reshape(tmp_path, "SearchQA-v0", spec, {"action_format": action_format})
    assert_live_equals_offline(rollouts, offline)
    assert any(r.outcome == 1.0 for r in rollouts)  # the outcome term and the gate saw the SearchQA outcome


@pytest.mark.parametrize("preset", [True, False], ids=["prs/long", "every long-form term"])
def test_a_long_form_run_folder_reshapes_to_the_live_totals_with_a_judge(tmp_path, preset):
    from test_rewards_judge import StubJudge

    stub = StubJudge()
    try:
        rollouts, offline = run_and_reshape(tmp_path, "SearchQA-LongForm-v0", _judge_spec(stub.url, preset))
    finally:
        stub.server.shutdown()
    assert_live_equals_offline(rollouts, offline)
    assert all(r.breakdown.terms["llm_judge"].raw is not None or r.breakdown.terms["llm_judge"].reason.startswith("gated")
               for r in rollouts)
