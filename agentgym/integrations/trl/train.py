"""``agentgym train trl_* [key=value ...]``: a TRL ``GRPOTrainer`` run from a bundled recipe.

A recipe (``recipes/<name>.yaml``) names the env and its kwargs, the reward, the tasks, the
rollout's limits and sampling constraint, the model and the ``GRPOConfig`` fields. Overrides are
``dotted.key=value`` with the value read as YAML (``grpo.max_steps=50``, ``model.path=/models/q``).
With ``model.path: null`` the policy is a tiny Qwen2 built from a config, with a word-level
tokenizer trained on the env's text: nothing is downloaded, and the run fits a CPU.

Before any weights load, a run builds and checks what the dry run does: the recipe's keys and the
``GRPOConfig`` fields ("did you mean"), the model path, the tokenizer and the constraint against
it, and the env the rollout builds, reset for every task at the run's clock. What it keeps, in
``grpo.output_dir`` (``OUTPUTS``): the final model and tokenizer, ``history.json``,
``recipe.yaml`` and TRL's ``checkpoint-N`` folders; ``resume=True`` continues from the last one.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentgym._toolbox import closest, nearest_key, require_choice, short
from agentgym.core.turn_cut import TurnCut
from agentgym.errors import ConfigError

__all__ = ["RECIPES", "OUTPUTS", "TrlRecipe", "load_recipe", "recipe_text", "grpo_config", "build_run", "train",
           "dry_run"]

RECIPES = ("trl_searchqa", "trl_travelplanner", "trl_planner_r1")
"""The bundled TRL recipes: SearchQA-v0 and TravelPlanner-v0's tool calls (both run on CPU as
shipped) and Planner-R1 on TravelPlanner-v0 (a real model on GPUs)."""

OUTPUTS = ("history.json", "recipe.yaml")
"""What ``train`` writes into ``grpo.output_dir`` beside the final model and tokenizer (what
``save_pretrained`` writes) and TRL's ``checkpoint-N`` folders."""


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
    max_failed_share: float = Field(default=0.5, ge=0.0, le=1.0)
    """The failure budget: more than this share of the last ``failure_window`` rollouts left out of
    training (something outside the model failed, every reward term abstained) stops the run."""
    failure_window: int = Field(default=256, ge=1)
    """The rollouts the failure budget looks back over, across steps."""
    log_dir: str | None = None
    """A folder to append every rollout's record to (``rollouts-<process>.jsonl``), for
    ``agentgym rewards compare``; None writes nothing."""


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


# -- the recipe --------------------------------------------------------------------------------
def recipe_text(name: str) -> str:
    """A recipe's YAML, comments included."""
    require_choice("recipe", name, RECIPES)
    return resources.files("agentgym.integrations.trl").joinpath("recipes", f"{name}.yaml").read_text("utf-8")


def load_recipe(name: str, overrides: Sequence[str] = ()) -> TrlRecipe:
    """A bundled recipe with ``dotted.key=value`` overrides applied; a mistake is one ``ConfigError``
    line naming the key (and the key meant, for a typo)."""
    data = yaml.safe_load(recipe_text(name))
    for override in overrides:
        _apply(data, override)
    try:
        return TrlRecipe.model_validate(data)
    except ValidationError as exc:
        raise _recipe_error(name, exc, overrides) from None


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


def _recipe_error(name: str, exc: ValidationError, overrides: Sequence[str]) -> ConfigError:
    error = exc.errors()[0]
    key = ".".join(str(part) for part in error["loc"])
    if error["type"] != "extra_forbidden":
        return ConfigError(key or "recipe", error.get("input"), f"a value of the {name} recipe that passes: "
                           f"{error['msg']}")
    typed, value = key, error.get("input")
    for override in overrides:  # the override that added the key: its whole key, as the user typed it
        okey, _, raw = override.partition("=")
        if f"{okey}.".startswith(f"{key}."):
            typed, value = okey, raw
    meant = nearest_key(typed, _recipe_keys())
    if meant is None:
        parent, node = key.rpartition(".")[0], _recipe_keys()
        for part in filter(None, parent.split(".")):
            node = node[part]
        return ConfigError(typed, value, f"a key of the {name} recipe: {parent or 'the recipe'} has {', '.join(node)}")
    return ConfigError(typed, value, f"a key of the {name} recipe: did you mean {meant}?")


@cache
def _recipe_keys(model: type[BaseModel] = TrlRecipe) -> dict[str, Any]:
    """The recipe's keys as a tree: a part's fields under it, free-form values (kwargs, reward, grpo) as leaves."""
    tree: dict[str, Any] = {}
    for field_name, info in model.model_fields.items():
        part = next((t for t in (info.annotation, *getattr(info.annotation, "__args__", ()))
                     if isinstance(t, type) and issubclass(t, _Strict)), None)
        tree[field_name] = _recipe_keys(part) if part is not None else None
    return tree


# -- what the run is built from, checked before any weights load --------------------------------
def grpo_config(recipe: TrlRecipe, grpo: Mapping[str, Any] | None = None) -> Any:
    """The run's ``trl.GRPOConfig``: the recipe's ``grpo`` fields with ``grpo`` on top, each checked
    against the field's type first (an unknown field gets "did you mean")."""
    from trl import GRPOConfig

    fields, checked = _grpo_fields(), {}
    for key, value in {**recipe.grpo, **dict(grpo or {})}.items():
        if key not in fields:
            meant = closest(key, fields)
            raise ConfigError(f"grpo.{key}", value, f"a trl.GRPOConfig field: did you mean grpo.{meant}?" if meant
                              else "a trl.GRPOConfig field (help(trl.GRPOConfig) lists them)")
        checked[key] = _typed(key, value, fields[key])
    try:
        return GRPOConfig(**checked)
    except (TypeError, ValueError) as exc:  # TRL's own checks: batch sizes against num_generations...
        raise ConfigError("grpo", short(checked, 300), f"fields trl.GRPOConfig accepts together; TRL says: "
                          f"{short(str(exc).strip().splitlines()[0] if str(exc).strip() else exc, 400)}") from None


@cache
def _grpo_fields() -> dict[str, Any]:
    import dataclasses
    import typing

    from trl import GRPOConfig

    hints = typing.get_type_hints(GRPOConfig)
    return {f.name: hints.get(f.name, Any) for f in dataclasses.fields(GRPOConfig) if f.init}


def _typed(key: str, value: Any, hint: Any) -> Any:
    from pydantic import TypeAdapter

    try:
        adapter = TypeAdapter(hint)
    except Exception:  # a type pydantic cannot describe: TRL's own checks apply
        return value
    try:
        return adapter.validate_python(value)
    except ValidationError:
        raise ConfigError(f"grpo.{key}", value, f"{_type_name(hint)} (trl.GRPOConfig.{key})") from None


def _type_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def load_tokenizer(recipe: TrlRecipe) -> Any:
    """The recipe's tokenizer: ``model.path``'s, else the tiny word-level one trained on the env's text."""
    if recipe.model.path is None:
        from agentgym.integrations.trl.tiny import word_tokenizer

        return word_tokenizer(_env_text(recipe))
    from transformers import AutoTokenizer

    return _from_model_path(recipe, AutoTokenizer)


def load_model(recipe: TrlRecipe, tokenizer: Any) -> Any:
    """The recipe's model: ``model.path``'s weights, else the tiny Qwen2 over ``tokenizer``."""
    if recipe.model.path is None:
        from agentgym.integrations.trl.tiny import tiny_qwen2

        return tiny_qwen2(tokenizer, hidden_size=recipe.model.hidden_size, layers=recipe.model.layers,
                          seed=recipe.model.seed)
    from transformers import AutoModelForCausalLM

    return _from_model_path(recipe, AutoModelForCausalLM)


def _from_model_path(recipe: TrlRecipe, auto: Any) -> Any:
    """``auto.from_pretrained(model.path)``, its failures as one ``ConfigError`` on ``model.path``."""
    path = str(recipe.model.path)
    folder = Path(path).expanduser()
    expected = "a model folder (what save_pretrained writes) or a Hugging Face model id such as Qwen/Qwen2.5-3B-Instruct"
    if path.startswith(("/", ".", "~")) and not folder.exists():
        raise ConfigError("model.path", path, f"{expected}; there is no such folder")
    if folder.is_dir() and not (folder / "config.json").is_file():
        raise ConfigError("model.path", path, f"{expected}; the folder has no config.json")
    try:
        return auto.from_pretrained(str(folder) if folder.is_dir() else path)
    except (OSError, ValueError) as exc:  # an id the hub does not have, no network, a damaged folder
        raise ConfigError("model.path", path, f"{expected}; {auto.__name__} cannot load it: "
                          f"{short(str(exc).strip().splitlines()[0] if str(exc).strip() else exc, 300)}") from None


def build_constraint(recipe: TrlRecipe, tokenizer: Any) -> Any:
    """The recipe's sampling constraint built against ``tokenizer`` (None without one); a tokenizer
    that splits its tags or tool names is a ``ConfigError`` that names the fix."""
    part = recipe.rollout.constraint
    if part is None:
        return None
    try:
        return part.build(tokenizer)
    except ConfigError as exc:
        whose = f"the tokenizer of {recipe.model.path}" if recipe.model.path else "the tiny tokenizer"
        raise ConfigError(f"rollout.constraint.{exc.field}", exc.value, f"{exc.allowed}, which {whose} does not "
                          "keep: train without the constraint (rollout.constraint=null) or with a tokenizer that "
                          "keeps them whole") from None


def check_env(recipe: TrlRecipe, args: Any, constraint: Any = None) -> str | None:
    """Build the env as the rollout does at the first step (the reward, the run's clock) and reset it
    for every task; returns the clock, for the dry run to show (None without a reward)."""
    from agentgym.integrations.rollouts import Clock, reset_options
    from agentgym.integrations.search_r1_layout import check_env as check_layout
    from agentgym.integrations.trl.rollout import schedule_clock

    rollout = _rollout(recipe, constraint)
    before = SimpleNamespace(state=SimpleNamespace(global_step=0, max_steps=0), args=args)  # TRL before train()
    step, total = schedule_clock(before, recipe.reward)
    tasks = [rollout._task({"options": options}) for options in _task_options(recipe)]
    env = tasks[0].make()  # as the rollout's env pool builds it
    try:
        if recipe.rollout.layout == "search-r1":
            check_layout(env)
        for task in tasks:
            env.reset(seed=task.seed, options=reset_options(task, Clock(step, total)) or None)
    finally:
        env.close()
    if recipe.reward is None or step is None:
        return None
    return (f"the reward's clock: training_step = TRL's global_step (reset here at {step}) of total_steps = "
            + (f"{total}" if total is not None else "the spec's own"))


def _rollout(recipe: TrlRecipe, constraint: Any, **rollout_kwargs: Any) -> Any:
    from agentgym.integrations.trl.rollout import rollout_func

    return rollout_func(recipe.env.id, env_kwargs=recipe.env.kwargs, reward=recipe.reward,
                        max_turns=recipe.rollout.max_turns, response_length=recipe.rollout.response_length,
                        constraint=constraint, layout=recipe.rollout.layout,
                        max_observation_tokens=recipe.rollout.max_observation_tokens,
                        **{"max_failed_share": recipe.rollout.max_failed_share,
                           "failure_window": recipe.rollout.failure_window, "log_dir": recipe.rollout.log_dir,
                           **rollout_kwargs})


def build_run(recipe: TrlRecipe, *, grpo: Mapping[str, Any] | None = None,
              reward_funcs: Sequence[Callable] | None = None, tokenizer: Any = None, model: Any = None,
              **rollout_kwargs: Any) -> tuple[Any, Any]:
    """``(trainer, rollout)``: a ``GRPOTrainer`` playing the recipe's env through ``rollout_func``.

    ``grpo`` overrides ``GRPOConfig`` fields; ``reward_funcs`` replace ``[agentgym_reward]``
    (weight several with ``grpo={"reward_weights": [...]}``); ``rollout_kwargs`` go to
    ``rollout_func`` (e.g. ``train_on_observations=True``, a control)."""
    from trl import GRPOTrainer

    from agentgym.integrations.trl.rewards import agentgym_reward
    from agentgym.integrations.trl.rollout import task_dataset

    args = grpo_config(recipe, grpo)
    _check_tasks_fill_a_step(recipe, args)
    tokenizer = tokenizer if tokenizer is not None else load_tokenizer(recipe)
    rollout = _rollout(recipe, build_constraint(recipe, tokenizer), **rollout_kwargs)
    dataset = task_dataset(recipe.env.id, options=_task_options(recipe), env_kwargs=recipe.env.kwargs)
    model = model if model is not None else load_model(recipe, tokenizer)
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


def _env_text(recipe: TrlRecipe) -> list[str]:
    """The text the tiny tokenizer learns: each task's prompt and the reply to searching its prompt."""
    import gymnasium

    from agentgym.envs.searchqa.data import QATask

    env = gymnasium.make(recipe.env.id, **recipe.env.kwargs)
    texts: list[str] = []
    try:
        for options in _task_options(recipe):
            observation, _ = env.reset(options=options)
            texts.append(observation)
            for stop in TurnCut.of(env).stops:
                opening = stop.replace("</", "<", 1)
                texts.append(opening + " " + stop)
            task = getattr(env.unwrapped, "task", None)
            if isinstance(task, QATask):  # SearchQA: what a search for the task's text returns
                reply, *_ = env.step(f"<search>{task.text}</search>")
                texts.append(reply)
    finally:
        env.close()
    constraint = recipe.rollout.constraint
    if constraint is not None and constraint.tools:  # ReAct calls start a turn: the tool names unspaced
        texts.extend(f"{tool}[]" for tool in constraint.tools)
    return texts


def _task_options(recipe: TrlRecipe) -> list[dict[str, Any]]:
    return [{"task_index": i} for i in range(recipe.tasks.count)]


# -- the run -----------------------------------------------------------------------------------
def train(name: str, overrides: Sequence[str] = (), *, resume: bool = False, verbose: bool = False,
          echo: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Run the recipe; print one line per step; keep the model, history and recipe; return the history.

    ``resume``: continue from the last ``checkpoint-N`` in ``grpo.output_dir`` (its weights,
    optimizer, step and history). ``verbose``: TRL's own progress bar and metrics too (they are
    in ``history.json`` either way)."""
    recipe = load_recipe(name, overrides)
    started = time.process_time()
    args = grpo_config(recipe)
    folder = Path(args.output_dir)
    checkpoint = _checkpoint_to_resume(folder, resume, echo)
    tokenizer = load_tokenizer(recipe)
    check_env(recipe, args, build_constraint(recipe, tokenizer))  # every check of the dry run, before the weights
    folder.mkdir(parents=True, exist_ok=True)
    _write(folder / "recipe.yaml", _recipe_yaml(name, overrides, recipe))
    trainer, rollout = build_run(recipe, tokenizer=tokenizer, model=load_model(recipe, tokenizer))
    recorder = _Recorder(name, rollout, folder, _above_bars(echo) if verbose else echo, _history_at(checkpoint))
    trainer.add_callback(recorder.callback())
    with _quiet(trainer, not verbose):
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        trainer.save_model(str(folder))
    recorder.flush()
    _summary(name, recorder.steps, folder, time.process_time() - started, echo)
    return recorder.steps


@contextlib.contextmanager
def _quiet(trainer: Any, quiet: bool) -> Iterator[None]:
    """Without ``--verbose``: agentgym's step lines only, none of TRL's progress bars and metrics dicts."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback
    from transformers.utils import logging as hf_logging

    bars = quiet and hf_logging.is_progress_bar_enabled()
    if quiet:
        trainer.remove_callback(ProgressCallback)
        trainer.remove_callback(PrinterCallback)
    if bars:
        hf_logging.disable_progress_bar()  # "Writing model shards" at each checkpoint
    try:
        yield
    finally:
        if bars:
            hf_logging.enable_progress_bar()


def _above_bars(echo: Callable[[str], None]) -> Callable[[str], None]:
    """``echo`` that clears TRL's progress bar first, so that a step line starts a line of its own."""
    from tqdm.auto import tqdm

    def write(line: str) -> None:
        with tqdm.external_write_mode():
            echo(line)

    return write


def _checkpoint_to_resume(folder: Path, resume: bool, echo: Callable[[str], None]) -> Path | None:
    from transformers.trainer_utils import get_last_checkpoint

    last = get_last_checkpoint(str(folder)) if folder.is_dir() else None
    if resume and last is None:
        raise ConfigError("--resume", str(folder), "an output folder with a checkpoint-N in it (a run writes one "
                          "every grpo.save_steps steps with grpo.save_strategy=steps); there is none")
    if not resume and last is not None:
        echo(f"note: {folder} holds {Path(last).name} of an earlier run; this run starts afresh and writes over "
             "it (add --resume to continue that run)")
    return Path(last) if resume else None


def _recipe_yaml(name: str, overrides: Sequence[str], recipe: TrlRecipe) -> str:
    command = " ".join(["agentgym train", name, *overrides])
    return f"# {command}\n" + yaml.safe_dump(recipe.model_dump(mode="json"), sort_keys=False)


def _history_at(checkpoint: Path | None) -> list[dict[str, Any]]:
    """The steps a checkpoint's run had recorded (its ``history.json``), to continue from."""
    if checkpoint is None or not (checkpoint / "history.json").is_file():
        return []
    return list(json.loads((checkpoint / "history.json").read_text("utf-8"))["steps"])


def _write(path: Path, text: str) -> None:
    part = path.with_name(path.name + ".part")  # whole or absent: a run killed mid-write keeps the last one
    part.write_text(text, "utf-8")
    os.replace(part, path)


def _summary(name: str, steps: list[dict[str, Any]], folder: Path, cpu: float, echo: Callable[[str], None]) -> None:
    scored = [s for s in steps if "reward" in s]
    if scored:
        first, last = scored[0], scored[-1]
        echo(f"{name}: mean reward {first['reward']:.3f} at step {first['step']} -> {last['reward']:.3f} at step "
             f"{last['step']} ({cpu:.0f} s of CPU)")
    echo(f"{name}: model and tokenizer, {' and '.join(OUTPUTS)} saved in {folder}")
    checkpoints = sorted(folder.glob("checkpoint-*"), key=lambda p: int(p.name[11:]) if p.name[11:].isdigit() else -1)
    if checkpoints:
        echo(f"{name}: checkpoints {', '.join(p.name for p in checkpoints)} (a run stopped early continues from "
             "its last one with --resume)")


class _Recorder:
    """Per step: agentgym's line, and the history entry (the rollout's summary and TRL's metrics),
    written to ``history.json`` in the output folder and in each checkpoint."""

    def __init__(self, name: str, rollout: Any, folder: Path, echo: Callable[[str], None],
                 steps: list[dict[str, Any]]) -> None:
        self.name, self.rollout, self.folder, self.echo = name, rollout, folder, echo
        self.steps, self.train_metrics = steps, {}
        self._seen = 0

    def step_ended(self, step: int, total: int) -> None:
        entry: dict[str, Any] = {"step": step}
        played = self.rollout.history[self._seen:]
        self._seen = len(self.rollout.history)
        if played:
            entry.update(_mean_summary(played))
        self.steps.append(entry)
        self.echo(_step_line(entry, total))

    def logged(self, step: int, logs: Mapping[str, Any]) -> None:
        logs = {k: v for k, v in logs.items() if k != "total_flos"}
        if "train_runtime" in logs:  # the run's totals, logged once at its end
            self.train_metrics = logs
        elif self.steps and self.steps[-1]["step"] == step:
            self.steps[-1]["trl"] = logs
        self.flush()

    def saved(self, step: int) -> None:
        checkpoint = self.folder / f"checkpoint-{step}"
        if checkpoint.is_dir():
            self.flush(checkpoint)

    def flush(self, folder: Path | None = None) -> None:
        body = {"recipe": self.name, "steps": self.steps, "train": self.train_metrics}
        _write((folder or self.folder) / "history.json", json.dumps(body, indent=1, default=str))

    def callback(self) -> Any:
        """The ``TrainerCallback`` that feeds this recorder."""
        from transformers import TrainerCallback

        recorder = self

        class Recorder(TrainerCallback):
            def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                recorder.step_ended(state.global_step, state.max_steps)

            def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
                recorder.logged(state.global_step, logs or {})

            def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                recorder.saved(state.global_step)

        return Recorder()


def _mean_summary(played: list[dict[str, Any]]) -> dict[str, Any]:
    """One step's rollout summaries (one per ``rollout_func`` call) as one: means, and the clock the first had."""
    n = len(played)
    mean = lambda key: sum(p[key] for p in played) / n  # noqa: E731
    actions: dict[str, float] = {}
    for summary in played:
        for sequence, share in summary["actions"].items():
            actions[sequence] = actions.get(sequence, 0.0) + share / n
    terms = {name: sum(p["terms"][name] for p in played) / n for name in played[0]["terms"]}
    return {"training_step": played[0]["step"], "reward": mean("reward"), "outcome": mean("outcome"),
            "terms": terms, "actions": actions}


def _step_line(entry: Mapping[str, Any], total: int) -> str:
    head = f"step {entry['step']:>4}/{total}"
    if "reward" not in entry:
        return f"{head}  (no new episodes: this step trains on the last step's)"
    top = sorted(entry["actions"].items(), key=lambda item: -item[1])[:3]
    mix = ", ".join(f"{k or '-'} {v:.2f}" for k, v in top)
    return f"{head}  reward {entry['reward']:.3f}  outcome {entry['outcome']:.3f}  {mix}"


# -- the dry run -------------------------------------------------------------------------------
def dry_run(name: str, overrides: Sequence[str] = (), *, resume: bool = False,
            echo: Callable[[str], None] = print) -> int:
    """Build and check what the run builds, except the model's weights: the recipe, the
    ``GRPOConfig``, the tokenizer and the constraint against it, the model's config, the env at
    the run's clock, and with ``resume`` the checkpoint. Returns 0 when the run will start, 1 with
    one line per problem."""
    try:
        recipe = load_recipe(name, overrides)
    except ConfigError as exc:
        echo(f"problem: {exc}")
        return 1
    echo(yaml.safe_dump(recipe.model_dump(mode="json"), sort_keys=False).rstrip())
    problems: list[str] = []

    def check(what: str, build: Callable[[], Any]) -> Any:
        try:
            return build()
        except Exception as exc:  # each failing check is one finding
            problems.append(f"{what}: {exc}" if isinstance(exc, ConfigError) else f"{what}: {type(exc).__name__}: {exc}")
            return None

    args, note = check("grpo", lambda: _grpo_here(recipe)) or (None, None)
    if note:
        echo(f"note: {note}")
    if resume and args is not None:
        checkpoint = check("resume", lambda: _checkpoint_to_resume(Path(args.output_dir), True, echo))
        if checkpoint:
            echo(f"note: the run continues from {checkpoint}")
    tokenizer = check("model", lambda: _check_model(recipe))
    constraint = check("constraint", lambda: build_constraint(recipe, tokenizer)) if tokenizer is not None else None
    clock = check("env", lambda: check_env(recipe, args or SimpleNamespace(max_steps=-1), constraint))
    if clock and args is not None:
        echo(f"note: {clock}")
    for problem in problems:
        echo(f"problem: {problem}")
    echo(f"{name}: {'ready to train' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


def _grpo_here(recipe: TrlRecipe) -> tuple[Any, str | None]:
    """The ``GRPOConfig``; on a machine without a GPU, a GPU recipe's is checked as a CPU one."""
    import torch

    if torch.cuda.is_available() or recipe.grpo.get("use_cpu"):
        args, note = grpo_config(recipe), None
    else:
        args, note = (grpo_config(recipe, {"use_cpu": True, "bf16": False}),
                      "grpo: no GPU here; the GRPOConfig fields were checked with use_cpu=true, bf16=false")
    _check_tasks_fill_a_step(recipe, args)
    return args, note


def _check_model(recipe: TrlRecipe) -> Any:
    """The tokenizer, and the model's config (not its weights)."""
    tokenizer = load_tokenizer(recipe)
    if recipe.model.path is not None:
        from transformers import AutoConfig

        _from_model_path(recipe, AutoConfig)
    return tokenizer
