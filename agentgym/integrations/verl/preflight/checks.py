"""The checks behind ``agentgym train --dry-run``: each takes the composed verl config and returns
one line per problem. Nothing here starts Ray, loads a model or needs a GPU."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agentgym.integrations.verl._guard import require_verl

require_verl()  # omegaconf comes with verl: without it, the extra's message, not a bare ModuleNotFoundError

from omegaconf import OmegaConf  # noqa: E402

__all__ = ["check_config", "check_mandatory", "check_registries", "check_agentgym", "check_loop", "check_vspo",
           "check_files", "check_verl", "SUPPORTED_ESTIMATORS", "AGENTGYM_BUFFERS"]

_SAMPLED_ROWS = 64  # rows per data file whose env is built and reset

SUPPORTED_ESTIMATORS = ("grpo", "vspo", "rloo", "gae", "reinforce_plus_plus")
"""The estimators agentgym's loop is tested under (the reward on a sampled token, failed rollouts out
of every baseline): group baselines and per-token returns alike."""
AGENTGYM_BUFFERS = ("AgentGymReplayBuffer", "AgentGymReplayBufferAsync", "VSPOReplayBuffer", "VSPOReplayBufferAsync")
"""The replay buffers that leave failed rollouts out of the batch (``sampler.audit_batch``)."""
_VERL_TOOL_RESPONSE_LENGTH = 256  # verl's default multi_turn.max_tool_response_length, which its config always has


def check_config(config: Any) -> list[str]:
    """Every problem found in a composed config, as one line each (empty: ready to launch)."""
    problems: list[str] = []
    for check in (check_mandatory, check_registries, check_agentgym, check_loop, check_vspo, check_files, check_verl):
        try:
            problems += check(config)
        except Exception as exc:  # a check that cannot run is itself a finding, not a crash
            problems.append(f"{check.__name__}: {type(exc).__name__}: {exc}")
    return problems


def check_mandatory(config: Any) -> list[str]:
    """Keys still ``???`` outside disabled sections, and the data files, which the recipes leave unset."""
    problems = [f"{key}: mandatory value missing (pass {key}=...)" for key in _missing_keys(config)]
    for key in ("data.train_files", "data.val_files"):
        if not OmegaConf.select(config, key):
            problems.append(f"{key} is not set: pass {key}=FILE.parquet (from `agentgym verl prepare`)")
    return problems


def check_registries(config: Any) -> list[str]:
    """The agent loop, estimator, policy loss, reward manager, trainer mode and sampler exist."""
    from agentgym.integrations.verl import plugin  # noqa: F401  (what verl's entry point runs)
    from verl.experimental.agent_loop.agent_loop import _agent_loop_registry
    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, POLICY_LOSS_REGISTRY

    rollout, problems = config.actor_rollout_ref.rollout, _check_entry_point()
    loops = set(_agent_loop_registry) | _yaml_agent_loops(rollout.agent.get("agent_loop_config_path"))
    if rollout.agent.default_agent_loop not in loops:
        problems.append(f"actor_rollout_ref.rollout.agent.default_agent_loop={rollout.agent.default_agent_loop!r} "
                        f"is not a registered agent loop ({sorted(loops)})")
    estimator = config.algorithm.adv_estimator
    if estimator not in ADV_ESTIMATOR_REGISTRY and estimator not in ("gae", "grpo") \
            and rollout.agent.default_agent_loop != "agentgym":  # check_loop names agentgym's own list
        problems.append(f"algorithm.adv_estimator={estimator!r} is not registered ({sorted(ADV_ESTIMATOR_REGISTRY)})")
    loss = config.actor_rollout_ref.actor.policy_loss.loss_mode
    if loss not in POLICY_LOSS_REGISTRY:
        problems.append(f"actor_rollout_ref.actor.policy_loss.loss_mode={loss!r} is not registered "
                        f"({sorted(POLICY_LOSS_REGISTRY)})")
    return problems + _check_reward_manager(config) + _check_trainer(config)


def check_agentgym(config: Any) -> list[str]:
    """The ``agentgym:`` section validates and its reward spec builds."""
    from agentgym.integrations.verl.config import AgentGymConfig

    agentgym = AgentGymConfig.from_trainer_config(config)
    if agentgym.reward is not None:
        from agentgym.rewards import build_shaper

        build_shaper(agentgym.reward)
    return []


def check_loop(config: Any) -> list[str]:
    """With the agentgym loop: verl options it would ignore, and the pieces the signal depends on."""
    rollout = config.actor_rollout_ref.rollout
    if rollout.agent.default_agent_loop != "agentgym":
        return []
    problems: list[str] = []
    estimator = config.algorithm.adv_estimator
    if estimator not in SUPPORTED_ESTIMATORS:
        problems.append(f"algorithm.adv_estimator={estimator!r} is not one agentgym's loop supports "
                        f"({', '.join(SUPPORTED_ESTIMATORS)})")
    custom = (config.trainer.v1.sampler.get("custom_sampler") or {}) if config.trainer.use_v1 else {}
    if not config.trainer.use_v1 or custom.get("name") not in AGENTGYM_BUFFERS:
        problems.append(f"trainer.v1.sampler.custom_sampler.name={custom.get('name')!r}: agentgym's loop needs one of "
                        f"its replay buffers ({', '.join(AGENTGYM_BUFFERS)}, path "
                        "pkg://agentgym.integrations.verl.sampler, trainer.use_v1=true): they leave failed rollouts "
                        "out of every group's baseline, where verl's would count them as zeros")
    length = rollout.multi_turn.get("max_tool_response_length")
    if length is not None and length != _VERL_TOOL_RESPONSE_LENGTH:
        problems.append(f"actor_rollout_ref.rollout.multi_turn.max_tool_response_length={length} is not read by "
                        "agentgym's loop: cut observations with agentgym.max_observation_chars (characters)")
    reward = config.get("reward", {}) or {}
    if (reward.get("custom_reward_function") or {}).get("path") or (reward.get("reward_model") or {}).get("enable"):
        problems.append("reward.custom_reward_function / reward.reward_model is never called for agentgym rows: "
                        "their env's reward spec scores them (agentgym.reward, or the rows' own); remove it, or "
                        "write the reward as a spec (a custom term) in agentgym.reward")
    return problems


def check_vspo(config: Any) -> list[str]:
    """VSPO's sampler, estimator and data options agree."""
    from agentgym.integrations.verl.vspo import VSPOConfig

    problems: list[str] = []
    VSPOConfig.from_section(config.algorithm.get("vspo"))
    if not _uses_vspo_sampler(config):
        return problems
    sampler = config.trainer.v1.sampler
    VSPOConfig.from_section((sampler.get("sampler_kwargs") or {}).get("vspo"))
    if not config.trainer.use_v1:
        problems.append("the VSPO replay buffers need trainer.use_v1=true")
    if config.data.get("gen_batch_size") != 1:
        problems.append("the VSPO replay buffer asks for exact prompt counts: set data.gen_batch_size=1")
    if config.algorithm.adv_estimator != "vspo":
        problems.append(f"the VSPO replay buffer writes copies that only algorithm.adv_estimator=vspo smooths "
                        f"(got {config.algorithm.adv_estimator!r})")
    if config.algorithm.get("filter_groups", {}).get("enable"):
        problems.append("algorithm.filter_groups is ignored with a custom sampler; VSPO evicts groups itself")
    return problems


def check_files(config: Any) -> list[str]:
    """Data files exist and their rows name registered loops, env ids and reward specs."""
    problems: list[str] = []
    for key in ("data.train_files", "data.val_files"):
        for path in _as_list(OmegaConf.select(config, key)):
            problems += _check_data_file(config, key, Path(os.path.expanduser(str(path))))
    model = str(config.actor_rollout_ref.model.path)
    if _looks_local(model) and not Path(os.path.expanduser(model)).exists():
        problems.append(f"actor_rollout_ref.model.path={model!r}: no such folder")
    for key in ("actor_rollout_ref.rollout.agent.agent_loop_config_path",
                "actor_rollout_ref.rollout.multi_turn.tool_config_path", "reward.custom_reward_function.path"):
        value = OmegaConf.select(config, key)
        if value and not value.startswith("pkg://") and not Path(os.path.expanduser(value)).exists():
            problems.append(f"{key}={value!r}: no such file")
    return problems


def check_verl(config: Any) -> list[str]:
    """verl's own ``validate_config`` (batch sizes, micro batches, ...), as ``main_ppo`` runs it."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    with open(os.devnull, "w") as sink, _stdout_to(sink):
        validate_config(config=config, use_reference_policy=need_reference_policy(config),
                        use_critic=need_critic(config))
    return []


# -- helpers -----------------------------------------------------------------------------------
def _check_data_file(config: Any, key: str, path: Path) -> list[str]:
    from agentgym.integrations.verl.prepare import read_parquet
    from agentgym.integrations.verl.config import AgentGymConfig, EnvTask

    if not path.is_file():
        return [f"{key}: {path} does not exist"]
    rows = read_parquet(path) if path.suffix == ".parquet" else []
    if not rows:
        return [f"{key}: {path} has no rows (or is not parquet)"]
    missing = {"prompt", "data_source", "reward_model", "extra_info"} - set(rows[0])
    if missing:
        return [f"{key}: {path} lacks the columns {sorted(missing)}"]
    agentgym, problems = AgentGymConfig.from_trainer_config(config), []
    default = config.actor_rollout_ref.rollout.agent.default_agent_loop
    for i, row in enumerate(rows[:_SAMPLED_ROWS]):
        if (row.get("agent_name") or default) == "agentgym":
            try:
                task = EnvTask.from_extra_info(row["extra_info"], agentgym)
            except Exception as exc:
                problems.append(f"{key}: {path} row {i}: {exc}")
                continue
            problems += _check_row(key, path, i, task)
    return problems[:5]


def _check_row(key: str, path: Path, index: int, task: Any) -> list[str]:
    try:
        env = task.make()
        try:
            options = dict(task.reset_options)
            if task.reward is not None:  # a scheduled reward needs a step and a run length to start
                options.update(training_step=0, total_steps=1)
            env.reset(seed=task.seed, options=options or None)
        finally:
            env.close()
    except Exception as exc:
        return [f"{key}: {path} row {index}: {task.env_id} cannot start: {type(exc).__name__}: {exc}"]
    return []


def _check_entry_point() -> list[str]:
    # Ray workers only see the registrations if verl loads the plugin there on `import verl`.
    from importlib.metadata import entry_points

    names = {ep.name for ep in entry_points(group="verl.plugins")}
    policy = os.environ.get("VERL_USE_EXTERNAL_PLUGINS", "auto").strip().lower()
    if "agentgym" not in names:
        return ["the verl.plugins entry point 'agentgym' is not installed (reinstall agentgym-rl[verl])"]
    if policy == "none" or (policy != "auto" and "agentgym" not in {p.strip() for p in policy.split(",")}):
        return [f"VERL_USE_EXTERNAL_PLUGINS={policy!r} keeps verl from loading the agentgym plugin in Ray workers"]
    return []


def _check_reward_manager(config: Any) -> list[str]:
    manager = config.reward.get("reward_manager", {})
    if manager.get("source", "register") != "register":
        return []
    from verl.experimental.reward_loop.reward_manager.registry import get_reward_manager_cls

    try:
        get_reward_manager_cls(manager.get("name", "naive"))
    except Exception as exc:
        return [f"reward.reward_manager.name: {exc}"]
    return []


def _check_trainer(config: Any) -> list[str]:
    problems: list[str] = []
    if not config.trainer.use_v1:
        return problems
    from verl.trainer.ppo.v1 import get_trainer_cls
    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer
    from verl.utils.import_utils import load_extern_object

    try:
        get_trainer_cls(config.trainer.v1.trainer_mode)
    except Exception as exc:
        problems.append(f"trainer.v1.trainer_mode: {exc}")
    custom = config.trainer.v1.sampler.get("custom_sampler") or {}
    if custom.get("path") and custom.get("name"):
        sampler = load_extern_object(custom.path, custom.name)
        if not (isinstance(sampler, type) and issubclass(sampler, ReplayBuffer)):
            problems.append(f"trainer.v1.sampler.custom_sampler: {custom.name} is not a ReplayBuffer")
        mode, modes = config.trainer.v1.trainer_mode, getattr(sampler, "MODES", None)
        if modes is not None and mode not in modes:  # agentgym's buffers say which modes they support
            problems.append(f"trainer.v1.sampler.custom_sampler.name={custom.name} runs in {' or '.join(modes)}, "
                            f"not trainer.v1.trainer_mode={mode}: use {sampler.COUNTERPART}")
    return problems + _check_separate_async(config)


def _check_separate_async(config: Any) -> list[str]:
    """What verl's separate_async trainer asserts when it starts, checked before any GPU is allocated."""
    if config.trainer.v1.trainer_mode != "separate_async":
        return []
    problems = []
    batch, rollout = config.data.train_batch_size, config.actor_rollout_ref.rollout
    sync_steps = config.trainer.v1.separate_async.parameter_sync_step
    mini = config.actor_rollout_ref.actor.ppo_mini_batch_size
    if batch != sync_steps * mini:
        problems.append(f"data.train_batch_size={batch} must equal trainer.v1.separate_async.parameter_sync_step x "
                        f"actor_rollout_ref.actor.ppo_mini_batch_size = {sync_steps} x {mini} = {sync_steps * mini}")
    if rollout.checkpoint_engine.backend == "naive":
        problems.append("actor_rollout_ref.rollout.checkpoint_engine.backend=naive cannot send weights to a separate "
                        "rollout: use nccl, nixl, hccl or mooncake")
    for key in ("nnodes", "n_gpus_per_node"):
        if not rollout.get(key):
            problems.append(f"actor_rollout_ref.rollout.{key}={rollout.get(key)}: separate_async needs rollout GPUs "
                            "of its own (> 0)")
    return problems


def _uses_vspo_sampler(config: Any) -> bool:
    custom = config.trainer.v1.sampler.get("custom_sampler") or {}
    return custom.get("name") in ("VSPOReplayBuffer", "VSPOReplayBufferAsync")


def _yaml_agent_loops(path: str | None) -> set[str]:
    if not path or not Path(path).is_file():
        return set()
    return {str(item.name) for item in OmegaConf.load(path)}


def _missing_keys(config: Any, prefix: str = "") -> Iterable[str]:
    if config.get("enable", None) is False:  # e.g. reward.reward_model when no reward model is used
        return
    for key in config:
        full = f"{prefix}{key}"
        if OmegaConf.is_missing(config, key):
            yield full
        else:
            node = config._get_node(key)
            if OmegaConf.is_dict(node) and not node._is_interpolation():
                yield from _missing_keys(node, f"{full}.")


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if OmegaConf.is_list(value) or isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _looks_local(path: str) -> bool:
    # "Qwen/Qwen3-8B" is a hub id (fetched by the workers); "/models/x", "./x", "~/x" are folders.
    return path.startswith(("/", ".", "~"))


def _stdout_to(sink: Any) -> Any:
    import contextlib

    return contextlib.redirect_stdout(sink)
