"""``agentgym train trl_* [key=value ...]``: a TRL ``GRPOTrainer`` run from a bundled recipe.

A recipe (``recipes/<name>.yaml``) names the env and its kwargs, the reward, the tasks, the
rollout's limits and sampling constraint, the model and the ``GRPOConfig`` fields. Overrides are
``dotted.key=value`` with the value read as YAML (``grpo.max_steps=50``, ``model.path=/models/q``).
With ``model.path: null`` the policy is a tiny Qwen2 built from a config, with a word-level
tokenizer trained on the env's text: nothing is downloaded, and the run fits a CPU.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentgym._toolbox import require_choice
from agentgym.errors import ConfigError

__all__ = ["RECIPES", "TrlRecipe", "load_recipe", "recipe_text", "build_run", "train", "dry_run"]

RECIPES = ("trl_searchqa", "trl_travelplanner", "trl_planner_r1")
"""The bundled TRL recipes: SearchQA-v0 and TravelPlanner-v0's tool calls (both run on CPU as
shipped) and Planner-R1 on TravelPlanner-v0 (a real model on GPUs)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EnvPart(_Strict):
    id: str
    """The env id, e.g. ``SearchQA-v0``."""
    kwargs: dict[str, Any] = Field(default_factory=dict)
    """``gymnasium.make`` keyword arguments."""


class TasksPart(_Strict):
    count: int = Field(ge=1)
    """Tasks in the dataset: reset options ``{"task_index": i}`` for i < count."""


class ConstraintPart(_Strict):
    """Constrained sampling: ``tags`` (``TagConstraint``) or ``tools`` (``ReactConstraint``)."""

    tags: dict[str, tuple[int, int]] | None = None
    """``{"<tag>": [min_words, max_words]}`` (``TagConstraint``)."""
    tools: tuple[str, ...] | None = None
    """ReAct tool names, ``Tool[words]`` (``ReactConstraint``)."""
    max_words: int = Field(default=6, ge=1)
    """Words inside a ReAct call's brackets, at most."""
    words: str = "episode"

    @model_validator(mode="after")
    def _one_kind(self) -> ConstraintPart:
        if (self.tags is None) == (self.tools is None):
            raise ValueError("give exactly one of constraint.tags and constraint.tools")
        return self

    def build(self, tokenizer: Any) -> Any:
        from agentgym.integrations.trl.constraints import ReactConstraint, TagConstraint

        if self.tags is not None:
            return TagConstraint(tokenizer, self.tags, words=self.words)
        return ReactConstraint(tokenizer, self.tools or (), max_words=self.max_words, words=self.words)


class RolloutPart(_Strict):
    max_turns: int | None = Field(default=None, ge=1)
    response_length: int | None = Field(default=None, ge=1)
    constraint: ConstraintPart | None = None
    layout: Literal["chat", "search-r1"] = "chat"
    """``search-r1``: Search-R1's token layout (envs playing ``action_format: search-r1``)."""
    max_observation_tokens: int = Field(default=500, ge=1)
    """With ``layout: search-r1``: observation tokens kept (Search-R1's ``max_obs_length``)."""


class ModelPart(_Strict):
    path: str | None = None
    """A Hugging Face model name or folder; None builds the tiny in-memory model."""
    hidden_size: int = Field(default=64, ge=8)
    layers: int = Field(default=2, ge=1)
    seed: int = 0


class TrlRecipe(_Strict):
    """A TRL recipe: every part the run is built from."""

    env: EnvPart
    reward: Any = None
    """A reward preset name or spec (the env's ``reward=``)."""
    tasks: TasksPart
    rollout: RolloutPart = RolloutPart()
    model: ModelPart = ModelPart()
    grpo: dict[str, Any] = Field(default_factory=dict)
    """``trl.GRPOConfig`` fields."""


def recipe_text(name: str) -> str:
    """A recipe's YAML, comments included."""
    require_choice("recipe", name, RECIPES)
    return resources.files("agentgym.integrations.trl").joinpath("recipes", f"{name}.yaml").read_text("utf-8")


def load_recipe(name: str, overrides: Sequence[str] = ()) -> TrlRecipe:
    """A bundled recipe with ``dotted.key=value`` overrides applied."""
    data = yaml.safe_load(recipe_text(name))
    for override in overrides:
        _apply(data, override)
    try:
        return TrlRecipe.model_validate(data)
    except Exception as exc:
        raise ConfigError("recipe", name, f"a valid recipe after the overrides ({exc})") from None


def _apply(data: dict[str, Any], override: str) -> None:
    key, sep, raw = override.partition("=")
    if not sep or not key:
        raise ConfigError("override", override, "dotted.key=value")
    *parents, leaf = key.split(".")
    node = data
    for part in parents:
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise ConfigError("override", override, f"a key under a mapping ({part!r} is a value)")
        node = child
    node[leaf] = yaml.safe_load(raw)


def build_run(recipe: TrlRecipe, *, grpo: Mapping[str, Any] | None = None,
              reward_funcs: Sequence[Callable] | None = None, tokenizer: Any = None, model: Any = None,
              **rollout_kwargs: Any) -> tuple[Any, Any]:
    """``(trainer, rollout)``: a ``GRPOTrainer`` playing the recipe's env through ``rollout_func``.

    ``grpo`` overrides ``GRPOConfig`` fields; ``reward_funcs`` replace ``[agentgym_reward]``
    (weight several with ``grpo={"reward_weights": [...]}``); ``rollout_kwargs`` go to
    ``rollout_func`` (e.g. ``train_on_observations=True``, a control)."""
    from trl import GRPOConfig, GRPOTrainer

    from agentgym.integrations.trl.rewards import agentgym_reward
    from agentgym.integrations.trl.rollout import rollout_func, task_dataset

    args = GRPOConfig(**{**recipe.grpo, **dict(grpo or {})})
    _check_tasks_fill_a_step(recipe, args)
    if tokenizer is None or model is None:
        tokenizer, model = policy(recipe)
    constraint = recipe.rollout.constraint.build(tokenizer) if recipe.rollout.constraint is not None else None
    rollout = rollout_func(recipe.env.id, env_kwargs=recipe.env.kwargs, reward=recipe.reward,
                           max_turns=recipe.rollout.max_turns, response_length=recipe.rollout.response_length,
                           constraint=constraint, layout=recipe.rollout.layout,
                           max_observation_tokens=recipe.rollout.max_observation_tokens, **rollout_kwargs)
    dataset = task_dataset(recipe.env.id, options=_task_options(recipe), env_kwargs=recipe.env.kwargs)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=list(reward_funcs or [agentgym_reward]),
                          args=args, train_dataset=dataset, rollout_func=rollout)
    return trainer, rollout


def _check_tasks_fill_a_step(recipe: TrlRecipe, args: Any) -> None:
    """TRL's sampler drops an incomplete batch of prompts: fewer tasks than one step samples would
    train 0 steps and exit cleanly."""
    prompts = int(args.generation_batch_size) // int(args.num_generations)
    if recipe.tasks.count < prompts:
        raise ConfigError("tasks.count", recipe.tasks.count,
                          f"at least {prompts}: each step samples {prompts} tasks x {args.num_generations} generations "
                          f"(grpo.per_device_train_batch_size={args.per_device_train_batch_size}); TRL would train 0 "
                          "steps on fewer")


def policy(recipe: TrlRecipe) -> tuple[Any, Any]:
    """The recipe's tokenizer and model: ``model.path``, else the tiny in-memory pair."""
    if recipe.model.path is not None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        return AutoTokenizer.from_pretrained(recipe.model.path), AutoModelForCausalLM.from_pretrained(recipe.model.path)
    from agentgym.integrations.trl.tiny import tiny_qwen2, word_tokenizer

    tokenizer = word_tokenizer(_env_text(recipe))
    return tokenizer, tiny_qwen2(tokenizer, hidden_size=recipe.model.hidden_size, layers=recipe.model.layers,
                                 seed=recipe.model.seed)


def _env_text(recipe: TrlRecipe) -> list[str]:
    """The text the tiny tokenizer learns: each task's prompt and the reply to searching its prompt."""
    import gymnasium

    env = gymnasium.make(recipe.env.id, **recipe.env.kwargs)
    texts: list[str] = []
    try:
        for options in _task_options(recipe):
            observation, _ = env.reset(options=options)
            texts.append(observation)
            for stop in getattr(env.unwrapped, "stop_strings", ()):
                opening = stop.replace("</", "<", 1)
                texts.append(opening + " " + stop)
            question = getattr(env.unwrapped, "task", None)
            if hasattr(question, "golden_answers"):  # SearchQA: what a search for the question returns
                reply, *_ = env.step(f"<search>{question.text}</search>")
                texts.append(reply)
    finally:
        env.close()
    constraint = recipe.rollout.constraint
    if constraint is not None and constraint.tools:  # ReAct calls start a turn: the tool names unspaced
        texts.extend(f"{tool}[]" for tool in constraint.tools)
    return texts


def _task_options(recipe: TrlRecipe) -> list[dict[str, Any]]:
    return [{"task_index": i} for i in range(recipe.tasks.count)]


def train(name: str, overrides: Sequence[str] = (), *, echo: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Run the recipe; print each step's mean reward and the actions taken; return the history."""
    recipe = load_recipe(name, overrides)
    started = time.process_time()
    trainer, rollout = build_run(recipe)
    trainer.add_callback(_step_printer(rollout, echo))
    trainer.train()
    history = rollout.history
    if history:
        echo(f"{name}: mean reward {history[0]['reward']:.3f} at step 0 -> {history[-1]['reward']:.3f} at step "
             f"{history[-1]['step']} ({time.process_time() - started:.0f} s of CPU)")
    return history


def dry_run(name: str, overrides: Sequence[str] = (), *, echo: Callable[[str], None] = print) -> int:
    """Resolve and check a recipe without training: the env, the reward, the tasks, the config."""
    problems: list[str] = []
    try:
        recipe = load_recipe(name, overrides)
    except ConfigError as exc:
        echo(f"problem: {exc}")
        return 1
    echo(yaml.safe_dump(recipe.model_dump(mode="json"), sort_keys=False).rstrip())
    for check in (_check_env, _check_grpo, _check_model):
        try:
            note = check(recipe)
            if note:
                echo(f"note: {note}")
        except Exception as exc:  # each failing check is one finding
            problems.append(f"{check.__name__[7:]}: {type(exc).__name__}: {exc}")
    for problem in problems:
        echo(f"problem: {problem}")
    echo(f"{name}: {'ready to train' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


def _check_env(recipe: TrlRecipe) -> None:
    import gymnasium

    from agentgym.integrations.reward_info import term_names_for

    term_names_for(recipe.reward)
    kwargs = dict(recipe.env.kwargs)
    if recipe.reward is not None:
        kwargs["reward"] = recipe.reward
    env = gymnasium.make(recipe.env.id, **kwargs)
    try:
        for options in _task_options(recipe):
            env.reset(options=options)
    finally:
        env.close()


def _check_grpo(recipe: TrlRecipe) -> str | None:
    import torch
    from trl import GRPOConfig

    if torch.cuda.is_available() or recipe.grpo.get("use_cpu"):
        _check_tasks_fill_a_step(recipe, GRPOConfig(**recipe.grpo))
        return None
    _check_tasks_fill_a_step(recipe, GRPOConfig(**{**recipe.grpo, "use_cpu": True, "bf16": False}))  # as far as a CPU can tell
    return "grpo: no GPU here; the GRPOConfig fields were checked with use_cpu=true, bf16=false"


def _check_model(recipe: TrlRecipe) -> None:
    if recipe.model.path is None:
        return
    from transformers import AutoConfig

    AutoConfig.from_pretrained(recipe.model.path)


def _step_printer(rollout: Any, echo: Callable[[str], None]) -> Any:
    """A ``TrainerCallback`` printing the latest rollout's reward and action mix at each step's end."""
    from transformers import TrainerCallback

    class StepPrinter(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if not rollout.history:
                return
            last = rollout.history[-1]
            top = sorted(last["actions"].items(), key=lambda item: -item[1])[:3]
            mix = ", ".join(f"{k or '-'} {v:.2f}" for k, v in top)
            echo(f"step {state.global_step:>4}  reward {last['reward']:.3f}  outcome {last['outcome']:.3f}  {mix}")

    return StepPrinter()
