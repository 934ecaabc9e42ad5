"""Learning setups for TRL's ``GRPOTrainer`` on CPU where task success can rise: what the learning
tests assert and ``docs/learning.md`` draws.

The bundled recipes teach a tiny random model behaviour (search, then answer; calls the env can
run) but not the task: exact match stays at 0 and no plan is written. These setups keep every
piece of the integration (``rollout_func``, the turn rules, the env's shaped reward, TRL's loss)
and change what the constraint lets the model write, so that success is reachable:

* ``answer_recipe(reward)``: SearchQA-v0 with a short prompt (the question alone), one passage of
  60 characters per search, one-word answers drawn from the episode, and only tasks whose gold
  answer is a word of the passage that searching the question returns, and not of the question:
  every gold is writable, and only after a search (a random policy hits about one time in 200);
* ``plan_setup(reward)``: TravelPlanner-v0's first 4 training tasks (3-day, one city, budget
  only), one action per episode, written through a plan template
  (``agentgym.envs.travelplanner.plan_template``: the reference plan's shape, every entry a
  choice of 4): a random plan passes about one time in 200.

``run_arm`` (``controls``) trains them, with their ``tokenizer`` and ``constraint`` where given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agentgym._deprecated import renamed_kwargs

__all__ = ["ANSWER_REWARDS", "ANSWER_ARMS", "PLAN_REWARDS", "PLAN_ARMS", "STAGED_REWARD", "answer_recipe",
           "writable_tasks", "PlanSetup", "plan_setup", "run_answers", "run_plans", "run_schedule"]

ANSWER_ENV = {"synthetic_size": "small", "top_k": 1, "passage_chars": 60, "max_turns": 2,
              "prompt_template": "{question}"}
"""SearchQA-v0's kwargs in ``answer_recipe``: the question as the whole prompt, one short passage."""

ANSWER_REWARDS: dict[str, Any] = {
    "shaped": {"terms": [{"kind": "format", "weight": 0.5}, {"kind": "tool_call_validity", "weight": 0.5},
                         {"kind": "exact_match", "weight": 1.0}]},
    "em": {"terms": [{"kind": "format", "weight": 0.0}, {"kind": "exact_match", "weight": 1.0}]},
    "prs": "prs/short",
}
"""``shaped``: the ``trl_searchqa`` recipe's reward; ``em``: binary exact match (format logged,
not paid); ``prs``: PRS's staged short-form reward (0.2 format + 0.8 format x LA-BLEU)."""

ANSWER_ARMS = {"shaped": ("shaped", "real"), "shuffled": ("shaped", "shuffled"), "em": ("em", "real"),
               "prs": ("prs", "real")}
"""The runs ``run_answers`` compares: name -> (``ANSWER_REWARDS`` key, ``controls`` arm)."""

PLAN_REWARDS = {"dense": "planner_r1/dense", "sparse": "planner_r1/sparse"}
PLAN_ARMS = {"dense": ("dense", "real"), "sparse": ("sparse", "real"), "shuffled": ("dense", "shuffled")}
"""The runs ``run_plans`` compares: name -> (``PLAN_REWARDS`` key, ``controls`` arm)."""

STAGED_REWARD = {
    "unit": "fraction",
    "stages": [{"name": "format", "start": 0.0, "terms": [{"kind": "format", "weight": 1.0},
                                                          {"kind": "exact_match", "weight": 0.0}]},
               {"name": "answer", "start": 0.5, "terms": [{"kind": "format", "weight": 0.0},
                                                          {"kind": "exact_match", "weight": 1.0}]}]}
"""A schedule whose stage changes halfway through the run: well-formed turns are paid first, the
answer's exact match after. Both terms are logged in both stages, so which one is paid shows in
the logged means (``agentgym.rewards.stages_in_force``)."""


def writable_tasks(count: int = 8, env_kwargs: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The first ``count`` train tasks whose gold answer is one word of the passage that searching
    the question returns and not a word of the question (rows for SearchQA-v0's ``tasks``)."""
    import gymnasium

    env = gymnasium.make("SearchQA-v0", **{**ANSWER_ENV, **(env_kwargs or {})})
    rows: list[dict[str, Any]] = []
    try:
        for index in range(len(env.unwrapped.tasks)):
            observation, _ = env.reset(options={"task_index": index})
            task = env.unwrapped.task
            reply, *_ = env.step(f"<search> {task.text} </search>")
            asked, found = set(re.findall(r"\w+", observation)), set(re.findall(r"\w+", reply))
            if any(re.fullmatch(r"\w+", gold) and gold in found - asked for gold in task.golden_answers):
                rows.append({"id": task.id, "question": task.text, "golden_answers": list(task.golden_answers)})
            if len(rows) == count:
                break
    finally:
        env.close()
    return rows


def answer_recipe(reward: Any = "shaped", *, tasks: int = 8) -> Any:
    """``trl_searchqa`` at settings where every gold is writable (module docstring); ``reward`` is
    a key of ``ANSWER_REWARDS`` or a reward spec. 4 prompts x 8 episodes per step, at most 2 turns."""
    import gymnasium

    from agentgym.integrations.trl.train import EnvPart, load_recipe

    rows = writable_tasks(tasks)
    recipe = load_recipe("trl_searchqa", [
        f"tasks.count={len(rows)}", "rollout.max_turns=2", "rollout.response_length=64",
        "grpo.max_completion_length=64", 'rollout.constraint.tags={"<search>": [1, 3], "<answer>": [1, 1]}'])
    search = gymnasium.make("SearchQA-v0", **ANSWER_ENV).unwrapped.retriever  # the embedded world's BM25
    return recipe.model_copy(update={
        "env": EnvPart(id="SearchQA-v0", kwargs={**ANSWER_ENV, "tasks": rows, "retriever": search}),
        "reward": ANSWER_REWARDS[reward] if isinstance(reward, str) else reward})


@dataclass(frozen=True)
class PlanSetup:
    """A TravelPlanner recipe, the tokenizer its templates are written in, and the constraint."""

    recipe: Any
    tokenizer: Any
    constraint: Any


def plan_setup(reward: str = "dense", *, tasks: int = 4, per_slot: int = 4) -> PlanSetup:
    """TravelPlanner-v0's first ``tasks`` train tasks, one ``Finish[<plan JSON>]`` action per
    episode through their plan templates; ``reward`` is a key of ``PLAN_REWARDS``. The tokenizer
    is trained on the prompts and keeps every piece of the templates whole (a literal run of
    JSON, a candidate entry), as it keeps the action tags whole: a plan is about 50 tokens, and
    each choice the model makes is one token."""
    import gymnasium

    from agentgym.envs.travelplanner.plan_template import plan_template
    from agentgym.integrations.trl.constraints import TemplateConstraint
    from agentgym.integrations.trl.tiny import word_tokenizer
    from agentgym.integrations.trl.train import load_recipe

    recipe = load_recipe("trl_travelplanner", [
        f"tasks.count={tasks}", "env.kwargs.max_turns=1", "rollout.max_turns=1", "rollout.constraint=null",
        "rollout.response_length=400", "grpo.max_completion_length=400"])
    recipe = recipe.model_copy(update={"reward": PLAN_REWARDS[reward]})
    env = gymnasium.make("TravelPlanner-v0", **recipe.env.kwargs)
    templates, prompts, pieces = {}, [], set()
    try:
        for index in range(tasks):
            observation, _ = env.reset(options={"task_index": index})
            task = env.unwrapped.task
            parts = plan_template(task, env.unwrapped.world, per_slot=per_slot, seed=index)
            templates[task.text] = parts
            prompts.append(observation)
            pieces.update(t for part in parts for t in ((part,) if isinstance(part, str) else part))
    finally:
        env.close()
    tokenizer = word_tokenizer(prompts)
    tokenizer.add_tokens(sorted(pieces))  # each piece one token, as the action tags are
    return PlanSetup(recipe, tokenizer, TemplateConstraint(tokenizer, templates))


def run_answers(seed: int, output_dir: str, *, steps: int = 100, arms: Any = tuple(ANSWER_ARMS)) -> dict[str, Any]:
    """``answer_recipe`` trained as each of ``arms`` (``ANSWER_ARMS``): name -> the rollout's history."""
    from agentgym.integrations.trl.controls import run_arm

    return {name: run_arm(answer_recipe(ANSWER_ARMS[name][0]), ANSWER_ARMS[name][1], seed=seed, steps=steps,
                          output_dir=output_dir) for name in arms}


def run_plans(seed: int, output_dir: str, *, steps: int = 30, arms: Any = tuple(PLAN_ARMS)) -> dict[str, Any]:
    """``plan_setup`` trained as each of ``arms`` (``PLAN_ARMS``): name -> the rollout's history."""
    from agentgym.integrations.trl.controls import run_arm

    runs = {}
    for name in arms:
        reward, arm = PLAN_ARMS[name]
        setup = plan_setup(reward)
        runs[name] = run_arm(setup.recipe, arm, seed=seed, steps=steps, output_dir=output_dir,
                             tokenizer=setup.tokenizer, constraint=setup.constraint)
    return runs


@renamed_kwargs({"frozen": "frozen_clock"})  # verl's run_learning names the control frozen_clock
def run_schedule(seed: int, output_dir: str, *, steps: int = 6,
                 frozen_clock: bool = False) -> tuple[Any, list[str | None]]:
    """``answer_recipe(STAGED_REWARD)`` for ``steps`` steps of 2 prompts x 8 episodes (with the
    schedule clock frozen at 0 when ``frozen_clock``, the control): the history, and which stage paid
    each step, read back from the logged means (``stages_in_force``)."""
    import contextlib

    from agentgym.integrations.trl import controls
    from agentgym.integrations.trl.controls import run_arm
    from agentgym.rewards import stages_in_force

    with controls.frozen_clock() if frozen_clock else contextlib.nullcontext():
        history = run_arm(answer_recipe(STAGED_REWARD), "real", seed=seed, steps=steps, output_dir=output_dir,
                          grpo={"per_device_train_batch_size": 16})
    means = {name: [e["terms"][name] for e in history] for name in ("format", "exact_match")}
    return history, stages_in_force(STAGED_REWARD, [e["reward"] for e in history], means)
