"""What ``agentgym train RECIPE --dry-run`` checks beyond the config itself: what the run will meet.

* **The run length**, computed the way verl's trainer computes it: ``len(train set) // train_batch_size``
  steps per epoch times ``trainer.total_epochs``, or ``trainer.total_training_steps`` when set. Too
  few rows for one batch means 0 steps: refused. The val set needs a row, and ``val_batch_size``
  rows when that is set. With ``data.filter_overlong_prompts`` on and the model's tokenizer on this
  machine (``actor_rollout_ref.model.path`` a local folder or already in the Hugging Face cache),
  the rows are counted after verl's own ``create_rl_dataset`` has dropped the prompts longer than
  ``data.max_prompt_length``; otherwise before, and a note says so (the filter can only shrink it).
* **Scheduled rewards** (curricula, linear weights) get that run length as ``total_steps``, like
  the agent loop passes it; the resolved stage boundaries are printed, and a stage that never
  starts within the run (or is empty) is refused.
* **A rehearsal**: a few rows per data file are played through the agent loop's own path (the
  env from ``extra_info`` and the run's ``agentgym`` config, ``reset_options`` with a training
  step and the run length, one scripted final action; a staged reward's rows are played at the
  stages' first steps) so the reward spec, its dependencies and
  the env's data are exercised before any GPU is allocated. A reward that raises, or whose every
  term abstains, is a problem.
* **Keys verl accepts but the chosen trainer ignores** (where that is knowable): warnings.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym.integrations.verl._guard import require_verl

require_verl()  # omegaconf comes with verl: without it, the extra's message, not a bare ModuleNotFoundError

from omegaconf import OmegaConf  # noqa: E402

from agentgym.rewards import RewardBreakdown  # noqa: E402

__all__ = ["RunLength", "DryRunReport", "run_length", "stage_boundaries", "play_row", "check_run", "ignored_keys",
           "gold_answer"]

PLAYED_ROWS = 3  # rows per data file played through one scripted episode


@dataclass
class RunLength:
    """The run length as verl's trainer will compute it."""

    train_rows: int
    batch_size: int
    epochs: int
    explicit: int | None  # trainer.total_training_steps

    @property
    def steps_per_epoch(self) -> int:
        return self.train_rows // self.batch_size if self.batch_size > 0 else 0

    @property
    def total_steps(self) -> int:
        return self.explicit if self.explicit is not None else self.steps_per_epoch * self.epochs

    def describe(self) -> str:
        derived = (f"{self.train_rows} train rows // data.train_batch_size={self.batch_size} = "
                   f"{self.steps_per_epoch} steps per epoch x trainer.total_epochs={self.epochs}")
        if self.explicit is not None:
            return f"run length: {self.total_steps} steps (trainer.total_training_steps; {derived})"
        return f"run length: {self.total_steps} steps ({derived})"


@dataclass
class DryRunReport:
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def run_length(config: Any, train_rows: int) -> RunLength:
    """verl's own count (``trainer_base``: steps per epoch = rows // train_batch_size, drop_last)."""
    cap = OmegaConf.select(config, "data.train_max_samples", default=-1)
    rows = min(train_rows, int(cap)) if cap is not None and int(cap) > 0 else train_rows
    explicit = OmegaConf.select(config, "trainer.total_training_steps", default=None)
    return RunLength(rows, int(config.data.train_batch_size), int(config.trainer.total_epochs),
                     None if explicit is None else int(explicit))


def stage_boundaries(reward: Any, total_steps: int | None) -> list[tuple[str, int, int]]:
    """``(stage, first step, end step)`` of a staged reward over a run of ``total_steps`` (empty when
    unstaged); raises ``ConfigError`` when a fractional spec has no run length."""
    from agentgym.rewards import build_shaper

    shaper = build_shaper(reward)
    spec = shaper.spec
    if not spec.stages:
        return []
    total = total_steps if total_steps is not None else spec.total_steps
    if spec.unit == "fraction":
        if total is None:
            from agentgym.errors import ConfigError

            raise ConfigError("total_steps", None, "an int >= 1 (the stages are fractions of the run)")
        starts = [round(s.start * total) for s in spec.stages]
    else:
        starts = [int(s.start) for s in spec.stages]
    ends = [*starts[1:], total if total is not None else math.inf]
    return [(s.name, a, b) for s, a, b in zip(spec.stages, starts, ends, strict=True)]


def check_run(config: Any) -> DryRunReport:
    """Run length, stage boundaries and a rehearsal of a few rows per data file."""
    from agentgym.integrations.verl.config import AgentGymConfig

    report = DryRunReport(warnings=ignored_keys(config))
    agentgym = AgentGymConfig.from_trainer_config(config)
    train = _files(config, "data.train_files")
    val = _files(config, "data.val_files")
    total = None
    kept = _kept_rows(config, train, val, report)
    if train and all(p.is_file() for p in train):
        length = run_length(config, kept[0] if kept else sum(_row_count(p) for p in train))
        report.notes.append(length.describe())
        if length.steps_per_epoch < 1:
            report.problems.append(
                f"data.train_files has {length.train_rows} rows, fewer than data.train_batch_size="
                f"{length.batch_size}: verl makes 0 steps per epoch and trains on nothing (add rows or lower "
                f"data.train_batch_size)")
        total = agentgym.total_steps or length.total_steps
    if val and all(p.is_file() for p in val):
        report.problems += _check_val(config, kept[1] if kept else sum(_row_count(p) for p in val))
    if total == 0:  # the run cannot start: stages and rehearsal would only repeat that
        return report
    stages = _check_stages(_reward_of(agentgym, train), total, report) if total is not None else []
    steps = [a for _, a, b in stages if b > a] or [0]
    for key, paths in (("data.train_files", train), ("data.val_files", val)):
        for path in paths:
            if path.is_file():
                _rehearse(config, agentgym, key, path, steps, total, report)
    return report


def ignored_keys(config: Any) -> list[str]:
    """Keys verl 0.9.1 accepts but the chosen trainer does not read, when set away from verl's default."""
    found: list[str] = []
    v1 = bool(OmegaConf.select(config, "trainer.use_v1", default=False))
    if v1 and OmegaConf.select(config, "actor_rollout_ref.rollout.multi_turn.enable", default=False):
        found.append("actor_rollout_ref.rollout.multi_turn.enable=true does nothing under the V1 trainer "
                     "(trainer.use_v1=true): the agent loop is always multi-turn; agentgym.max_turns bounds it")
    if OmegaConf.select(config, "data.return_raw_chat", default=True) is False:
        found.append("data.return_raw_chat=false does nothing in verl 0.9.1: the agent loop always receives "
                     "the raw chat")
    if config.algorithm.get("adv_estimator") == "vspo" and config.algorithm.get("norm_adv_by_std_in_grpo") is False:
        found.append("algorithm.norm_adv_by_std_in_grpo=false is ignored by the vspo estimator: set "
                     "algorithm.vspo.norm_by_std instead")
    return found


def play_row(row: dict[str, Any], agentgym: Any, *, training_step: int,
             total_steps: int | None) -> tuple[float, RewardBreakdown | None]:
    """One short episode of a row, as the agent loop plays it: the env from ``extra_info`` (with the
    run's ``agentgym`` config), reset with the training step and run length, then one scripted final action.
    Returns the reward and the reward breakdown (None without a reward spec)."""
    from agentgym.integrations.rollouts import Clock, reset_options
    from agentgym.integrations.verl.envs import row_extra_info
    from agentgym.integrations.verl.config import EnvTask

    task = EnvTask.from_extra_info(row_extra_info(row), agentgym)
    env = task.make()
    try:
        options = reset_options(task, Clock(training_step, total_steps), pass_training_step=agentgym.pass_training_step)
        env.reset(seed=task.seed, options=options or None)
        _, reward, terminated, truncated, info = env.step(_final_action(env, row))
    finally:
        env.close()
    if not (terminated or truncated):
        raise AssertionError("the scripted final action did not end the episode")
    return float(reward), RewardBreakdown.from_info(info)


# -- helpers -----------------------------------------------------------------------------------
def _final_action(env: Any, row: dict[str, Any]) -> str:
    """An action that ends the episode with a meaningful reward: TravelPlanner's gold plan
    submitted (when the task has one); for question answering a near miss, a gold answer plus two
    words, so partial-credit terms compute their statistics (an exact match short-cuts BLEU, and
    would not show that its dependency is missing)."""
    inner = getattr(env, "unwrapped", env)
    task = getattr(inner, "task", None)
    travel = task if hasattr(task, "annotated_plan") else None  # TravelPlanner's task
    if travel is not None and getattr(travel, "annotated_plan", None):
        from agentgym.envs.travelplanner.scripted import gold_plan_actions

        return gold_plan_actions(travel, getattr(inner, "action_format", "react"), tools=False)[-1]
    if travel is not None:  # a TravelPlanner task without a gold plan: submit an empty plan
        return "<answer>[]</answer>" if getattr(inner, "action_format", "") == "json" else "Finish[[]]"
    gold = gold_answer(row)
    return f"<answer> {gold or ''} or so </answer>"


def gold_answer(row: dict[str, Any]) -> str | None:
    """The first gold answer of a question-answering row (``reward_model.ground_truth``: Search-R1's
    ``{"target": [...]}``, or a plain list)."""
    truth = (row.get("reward_model") or {}).get("ground_truth")
    if isinstance(truth, dict):
        truth = truth.get("target")
    truth = truth.tolist() if hasattr(truth, "tolist") else truth
    gold = truth[0] if isinstance(truth, (list, tuple)) and truth else truth
    return gold if isinstance(gold, str) else None


def _check_stages(reward: Any, total: int | None, report: DryRunReport) -> list[tuple[str, int, int]]:
    if reward is None:
        return []
    try:
        stages = stage_boundaries(reward, total)
    except Exception as exc:
        report.problems.append(f"agentgym.reward: {type(exc).__name__}: {exc}")
        return []
    if not stages:
        return []
    report.notes.append("reward stages (verl's global steps): " + ", ".join(
        f"{n} {a + 1}-{b}" if b > a else f"{n} none" for n, a, b in stages) + f" of {total} steps")
    for name, first, end in stages:
        if end <= first:
            report.problems.append(
                f"agentgym.reward: stage {name!r} gets no training step ([{first}, {end}) of a {total}-step run): "
                f"the curriculum cannot be followed; lengthen the run (trainer.total_epochs, more rows) or move "
                f"the stage starts")
    return stages


def _reward_of(agentgym: Any, train: list[Path]) -> Any:
    """The run's reward spec: ``agentgym.reward``, else the first train row's own (``prepare --reward``)."""
    if agentgym.reward is not None or not train or train[0].suffix != ".parquet":
        return agentgym.reward
    from agentgym.integrations.verl.envs import row_extra_info
    from agentgym.integrations.verl.prepare import read_parquet
    from agentgym.integrations.verl.config import EnvTask

    rows = read_parquet(train[0])
    try:
        return EnvTask.from_extra_info(row_extra_info(rows[0]), agentgym).reward if rows else None
    except Exception:  # a malformed row: check_files reports it
        return None


def _check_val(config: Any, rows: int) -> list[str]:
    size = OmegaConf.select(config, "data.val_batch_size", default=None)
    if rows < 1:
        return ["data.val_files has no rows: verl's validation has nothing to run"]
    if size is not None and rows < int(size):
        return [f"data.val_files has {rows} rows, fewer than data.val_batch_size={size}"]
    return []


def _rehearse(config: Any, agentgym: Any, key: str, path: Path, steps: list[int], total: int | None,
              report: DryRunReport) -> None:
    from agentgym.integrations.verl.prepare import read_parquet

    default = config.actor_rollout_ref.rollout.agent.default_agent_loop
    rows = [r for r in (read_parquet(path) if path.suffix == ".parquet" else [])
            if (r.get("agent_name") or default) == "agentgym"][:PLAYED_ROWS]
    played, failures = [], 0
    for i, row in enumerate(rows):
        step = steps[i % len(steps)]
        where = f"{key}: {path.name} row {i}"
        try:
            reward, breakdown = play_row(row, agentgym, training_step=step, total_steps=total)
        except Exception as exc:
            failures += 1
            if failures == 1:  # the rows of one file share their env and reward: one line says it
                report.problems.append(f"{where}: the scripted episode failed: {type(exc).__name__}: {exc}")
            continue
        if (breakdown is not None and breakdown.all_abstained) or not math.isfinite(reward):
            report.problems.append(f"{where}: the reward says nothing (every term abstained): "
                                   f"{breakdown.to_dict() if breakdown else reward}")
            continue
        stage = f", stage {breakdown.stage}" if breakdown is not None and breakdown.stage else ""
        played.append(f"{reward:g} (step {step + 1}{stage})")
    if played:
        report.notes.append(f"{key}: played {len(played)} row(s) of {path.name}, one scripted final action each "
                            "(a gold plan, or a near-miss answer): reward "
                            + ", ".join(played))


def _kept_rows(config: Any, train: list[Path], val: list[Path], report: DryRunReport) -> tuple[int, int] | None:
    """(train rows, val rows) as verl's trainer builds its datasets, after ``filter_overlong_prompts``;
    None when the filter is off, a file is missing, or the tokenizer is not on this machine."""
    files = [*train, *val]
    if not OmegaConf.select(config, "data.filter_overlong_prompts", default=False) or not train or not val \
            or not all(p.is_file() and p.suffix == ".parquet" for p in files):
        return None
    model = str(OmegaConf.select(config, "actor_rollout_ref.model.path", default=""))
    tokenizer = _local_tokenizer(config, model)
    if tokenizer is None:
        report.notes.append(f"prompt lengths not checked: the tokenizer of actor_rollout_ref.model.path={model} is "
                            "not on this machine, so the rows are counted before verl's filter_overlong_prompts")
        return None
    try:
        (kept, offered), (val_kept, val_offered) = (_verl_rows(config, train, tokenizer, is_train=True),
                                                    _verl_rows(config, val, tokenizer, is_train=False))
    except Exception as exc:  # what the launch would meet too
        report.problems.append(f"verl could not build its datasets: {type(exc).__name__}: {exc}")
        return None
    dropped = "" if (kept, val_kept) == (offered, val_offered) else (
        " (verl drops a row whose prompt is longer, or that the chat template cannot render: see its messages above)")
    report.notes.append(f"prompts within data.max_prompt_length={OmegaConf.select(config, 'data.max_prompt_length')} "
                        f"tokens ({model}'s tokenizer, verl's filter_overlong_prompts): {kept} of {offered} train "
                        f"rows, {val_kept} of {val_offered} val rows{dropped}")
    return kept, val_kept


def _verl_rows(config: Any, paths: list[Path], tokenizer: Any, *, is_train: bool) -> tuple[int, int]:
    """(rows in verl's dataset, rows offered to its filter) for one split, built as verl's trainer builds it."""
    from verl.trainer.ppo.utils import create_rl_dataset

    cap = int(OmegaConf.select(config, "data.train_max_samples" if is_train else "data.val_max_samples",
                               default=-1) or -1)
    dataset = create_rl_dataset([str(p) for p in paths], config.data, tokenizer, None, is_train=is_train,
                                max_samples=cap)
    rows = sum(map(_row_count, paths))
    return len(dataset), min(rows, cap) if cap > 0 else rows


def _local_tokenizer(config: Any, model: str) -> Any:
    """The model's tokenizer from a local folder or the Hugging Face cache (never the network), or None."""
    if not model or "://" in model:
        return None
    from verl.utils import hf_tokenizer

    trust = bool(OmegaConf.select(config, "actor_rollout_ref.model.trust_remote_code", default=False))
    try:
        return hf_tokenizer(os.path.expanduser(model), trust_remote_code=trust, local_files_only=True)
    except (OSError, ValueError):  # not downloaded here: the launch machine will have it
        return None


def _files(config: Any, key: str) -> list[Path]:
    value = OmegaConf.select(config, key)
    if value is None:
        return []
    items = list(value) if OmegaConf.is_list(value) or isinstance(value, (list, tuple)) else [value]
    return [Path(os.path.expanduser(str(v))) for v in items]


def _row_count(path: Path) -> int:
    if path.suffix != ".parquet":
        return 0
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(path).metadata.num_rows)
