"""What one verl row asks for (``EnvTask``) and the ``agentgym:`` section of a verl config.

A row's ``extra_info`` names the episode::

    {"index": 3, "env_id": "TravelPlanner-v0", "env_kwargs": "{\\"tasks\\": \\"validation\\"}",
     "task_index": 3, "seed": null, "reward": "\\"planner_r1/dense\\""}

Rows written by agentgym 0.1 say ``query_index``; it is still read, with a warning.

``env_kwargs`` and ``reward`` are JSON text so that rows of different shapes share one parquet
schema; dicts are accepted too. The config section (all optional) overrides rows for a whole run::

    agentgym:
      reward: planner_r1/sparse        # replaces every row's reward spec
      env_kwargs: {max_turns: 30}      # merged over every row's env kwargs
      max_turns: 30                    # cap on model turns per episode
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentgym._deprecated import RenamedKeys
from agentgym._toolbox import plain, require_int
from agentgym.errors import ConfigError
from agentgym.integrations import rollouts
from agentgym.integrations.verl._section import read_section, select
from agentgym.registration import ENV_IDS

__all__ = ["AgentGymConfig", "EnvTask", "decode_json_field"]

_ROW_KEYS = RenamedKeys("verl row extra_info", {"query_index": "task_index"})
_SECTION_KEYS = RenamedKeys("verl config agentgym", {"max_masked_share": "max_failed_share"})


class AgentGymConfig(BaseModel):
    """The ``agentgym:`` section of a verl config: run-wide options of the agent loop."""

    model_config = ConfigDict(extra="forbid")

    reward: Any = None
    """A reward preset name or spec replacing every row's ``reward`` (None: keep the rows')."""
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Env kwargs merged over every row's ``env_kwargs``."""
    max_turns: int | None = Field(default=None, ge=1)
    """Passed to every env as ``max_turns``, so the env truncates and scores the episode there;
    None: the rows' (or the env's default). verl's ``multi_turn.max_assistant_turns``, when set,
    also stops the loop (the episode is then unfinished)."""
    observation_role: Literal["user", "tool"] = "user"
    """Chat role of env observations. ``user`` works with every chat template."""
    max_observation_chars: int | None = Field(default=None, ge=16)
    """Observations longer than this are cut in the middle (None: never cut)."""
    on_env_error: Literal["mask", "raise"] = "mask"
    """``mask``: a trajectory whose env raised keeps its tokens with loss mask 0, reports
    ``failed=1`` with its typed failure, and the replay buffer leaves it out of the batch (and so
    of its group's baseline); ``raise``: let verl mark the whole group failed."""
    failure_reward: float = 0.0
    """``reward_score`` written for a failed trajectory (verl needs a number; the replay buffer
    leaves the trajectory out of training, so no estimator sees it)."""
    unfinished_reward: float = 0.0
    """Reward of an episode cut by the response-length budget before the env ended it."""
    remote_url: str | None = None
    """Run the envs on an env server (``agentgym serve``) at this URL instead of in the Ray
    workers; the reward spec is then passed to the server as the env's ``reward`` kwarg."""
    remote_token: str | None = None
    """The server's bearer token; None: ``$AGENTGYM_REMOTE_TOKEN`` on the workers."""
    env_workers: int = Field(default=8, ge=1)
    """Threads per agent-loop worker that run env resets and steps off the event loop."""
    pass_training_step: bool = True
    """Reset envs with ``training_step`` (verl's global step - 1: 0-based) so scheduled rewards follow the run."""
    total_steps: int | None = Field(default=None, ge=1)
    """Run length for scheduled rewards; None: verl's own count (``trainer.total_training_steps``,
    else epochs x steps per epoch, which verl's trainer writes into the config before the workers start)."""
    stop_at_action: bool = True
    """Stop each model turn at the env's first complete action (``TextEnv.turn_cut``): passed to
    the rollout server as stop strings, and any tokens after the action are cut before training."""
    layout: Literal["chat", "search-r1"] = "chat"
    """How turns become tokens. ``chat``: each observation is a chat message (the template's turn
    tokens around it). ``search-r1`` (envs playing ``action_format="search-r1"``): Search-R1's layout, one
    continuous response: each turn decoded, cut where Search-R1 cuts it and tokenized again (no
    end-of-turn token), each observation's raw tokens appended (loss mask 0), cut to
    ``max_observation_tokens``; no rollout log-probs (verl recomputes them, as Search-R1 does)."""
    max_observation_tokens: int = Field(default=500, ge=1)
    """With ``layout: search-r1``: each observation's tokens are cut to this many (Search-R1's ``max_obs_length``)."""
    max_failed_share: float = Field(default=0.5, ge=0.0, le=1.0)
    """The failure budget: when more than this share of the last ``failure_window`` trajectories
    were left out of training (something outside the model failed, every reward term abstained, or
    verl failed their group), the run aborts with the reasons, their counts and the first error.
    1.0 never aborts. Its old name ``max_masked_share`` still reads, with a warning."""
    failure_window: int = Field(default=256, ge=1)
    """The trajectories the failure budget looks back over, across steps."""

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        return _SECTION_KEYS.apply(data) if isinstance(data, Mapping) else data

    @classmethod
    def from_trainer_config(cls, config: Any) -> AgentGymConfig:
        """Read the ``agentgym`` section of verl's (OmegaConf) config; defaults when absent."""
        return read_section(cls, select(config, "agentgym"))


class EnvTask(rollouts.EnvTask):
    """The env and the episode one row asks for (``rollouts.EnvTask``, read from a verl row)."""

    @classmethod
    def from_extra_info(cls, extra_info: Mapping[str, Any] | None, config: AgentGymConfig | None = None) -> EnvTask:
        """Read a row's ``extra_info``, with the run's ``agentgym`` config applied on top. A row must pin
        its episode (a seed, ``task_index``, or a ``task_id``/``task`` reset option): the ``n``
        trajectories of its GRPO group would otherwise play different tasks."""
        # None is a missing key: parquet files of 0.1 and 0.2 rows read together pad each other's keys with None.
        row = _ROW_KEYS.apply({k: v for k, v in dict(extra_info or {}).items() if v is not None})
        config = config or AgentGymConfig()
        env_id = row.get("env_id")
        if config.remote_url is None:  # a server checks its own ids
            _check_env_id(env_id)
        kwargs = {**_mapping("extra_info.env_kwargs", decode_json_field(row.get("env_kwargs"))),
                  **config.env_kwargs}
        if config.max_turns is not None:  # the env itself ends (and scores) the episode at the limit
            kwargs["max_turns"] = config.max_turns
        reward = config.reward if config.reward is not None else decode_json_field(row.get("reward"))
        options = _mapping("extra_info.reset_options", decode_json_field(row.get("reset_options")))
        if row.get("task_index") is not None:
            options["task_index"] = _int("extra_info.task_index", row["task_index"])
        seed = row.get("seed")
        task = cls(env_id, kwargs, options, None if seed is None else _int("extra_info.seed", seed), reward or None,
                   config.remote_url, config.remote_token)
        if not task.pinned:
            raise ConfigError("extra_info", sorted(row), "a row that pins its episode: 'task_index', 'seed', or "
                              "'reset_options' with 'task_id' or 'task' (`agentgym verl prepare` writes task_index), "
                              "so that every trajectory of its GRPO group plays the same task")
        return task


def decode_json_field(value: Any) -> Any:
    """A row field stored as JSON text, decoded; non-strings (and None, "") pass as they are."""
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value  # a bare preset name such as planner_r1/dense
    return value


def _check_env_id(env_id: Any) -> None:
    import gymnasium

    import agentgym  # noqa: F401  (registers agentgym's ids)

    module, _, name = env_id.rpartition(":") if isinstance(env_id, str) else ("", "", env_id)
    if module:  # Gymnasium's "module:Env-v0": the module registers the env (a third-party env on a Ray worker)
        importlib.import_module(module)
    if not isinstance(name, str) or name not in gymnasium.registry:
        raise ConfigError("extra_info.env_id", env_id, f"a registered Gymnasium env id, e.g. one of {ENV_IDS}, "
                          "or 'your_module:YourEnv-v0'")


def _mapping(field_name: str, value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(field_name, value, "a JSON object (or dict)")
    return dict(value)


def _int(field_name: str, value: Any) -> int:
    return require_int(field_name, plain(value))  # parquet and numpy hand ints back as numpy scalars
