"""Any agentgym env as a skyrl-gym 0.4.0 ``BaseTextEnv``: ``pip install 'agentgym-rl[skyrl]'``.

Importing this module registers the env class ``agentgym`` with ``skyrl_gym.register``; SkyRL's
generator then builds one per trajectory as it builds its own envs::

    env = skyrl_gym.make("agentgym", env_config={"env_id": "SearchQA-v0", "reward": "prs/short"},
                         extras={"agentgym_task": '{"seed": 0, "options": {"task_index": 3}}', "max_turns": 4})
    prompt, _ = env.init(row_prompt)        # the env's own first observation, as a user message
    out = env.step(model_reply)             # observations, reward, done, metadata, postprocessed_action

* ``env_config`` (SkyRL's ``skyrl_gym_config.agentgym`` block) names the env (``env_id``), the reward
  spec (``reward``) and ``gymnasium.make`` kwargs (``env_kwargs``); each dataset row's extra columns
  (``extras``) name its task: ``agentgym_task``, JSON ``{"seed": ..., "options": {...}}`` as
  ``task_rows`` writes it (the rows of one prompt, and so of its group, share it), and optionally
  its own ``env_id``. ``max_turns`` is the generator's.
* ``init`` returns agentgym's own prompt (the env's first observation), replacing the row's.
* ``step`` cuts the reply at its first complete action and gives that back as
  ``postprocessed_action`` (the generator keeps the cut turn); the observation comes back as a user
  message; the last step pays the reward spec's total, and ``metadata``/``get_metrics()`` hold the
  outcome and every term (``term/<name>``), the keys verl and TRL log.
* skyrl-gym has no slot for a failed episode and SkyRL's generator would train on a 0, so a failure
  outside the model (an env or retriever that failed) raises ``EpisodeFailed``: loud, never a 0.
* SkyRL's generator (``skyrl.train.generators``) does not run here: it needs SkyRL's inference
  engines (vLLM or SGLang) and Ray.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agentgym.errors import ConfigError, DependencyNotInstalled, EpisodeFailed
from agentgym.integrations.messages import MessageEpisode, env_task

try:
    import skyrl_gym
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError:  # pragma: no cover - the extra is missing
    raise DependencyNotInstalled("the skyrl-gym bridge needs skyrl-gym 0.4.0: pip install 'agentgym-rl[skyrl]'") \
        from None

__all__ = ["ENV_CLASS", "TASK_KEY", "AgentGymTextEnv", "task_rows"]

ENV_CLASS = "agentgym"
"""The id the env is registered under (a dataset row's ``env_class``)."""
TASK_KEY = "agentgym_task"
"""The extra column naming a row's task: JSON ``{"seed": ..., "options": {...}}``."""


class AgentGymTextEnv(BaseTextEnv):
    """One agentgym episode; see the module docstring."""

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        config, extras = dict(env_config or {}), dict(extras or {})
        env_id = extras.get("env_id") or config.get("env_id")
        if not env_id:
            raise ConfigError("env_config.env_id", env_id, "an agentgym env id (or an env_id column in the data)")
        self.max_turns = int(extras.get("max_turns") or config.get("max_turns") or 30)
        task = env_task(str(env_id), _start_of(extras.get(TASK_KEY)), reward=_plain(config.get("reward")),
                        env_kwargs=_plain(config.get("env_kwargs")) or {})
        self.episode = MessageEpisode(task, max_turns=self.max_turns)

    def init(self, prompt: Any = None) -> tuple[list[dict[str, str]], dict[str, Any]]:
        observation = self.episode.reset()
        self._raise_failure()
        return [{"role": "user", "content": observation}], {"task_id": self.episode.end().task_id}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        observation = self.episode.step(action)
        self._raise_failure()
        end = self.episode.end()
        done = self.episode.done
        return BaseTextEnvStepOutput(
            observations=[] if done else [{"role": "user", "content": observation}],
            reward=end.total if done else 0.0, done=done, postprocessed_action=self.episode.actions[-1],
            metadata={"task_id": end.task_id, "stop_reason": end.stop_reason, **(end.metrics if done else {})})

    def get_metrics(self) -> dict[str, Any]:
        return dict(self.episode.end().metrics)

    def close(self) -> None:
        self.episode.close()

    def _raise_failure(self) -> None:
        if self.episode.failure is not None:
            raise EpisodeFailed(self.episode.failure)


def task_rows(env_id: str, starts: Sequence[Mapping[str, Any]], *,
              env_kwargs: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """SkyRL dataset rows, one per task (``{"seed": ..., "options": {...}}``): the env's first observation
    as the prompt, ``env_class`` ``agentgym``, and the task (``agentgym_task``) and ``env_id`` columns the
    env reads back."""
    rows = []
    for start in starts:
        episode = MessageEpisode(env_task(env_id, start, env_kwargs=env_kwargs))
        try:
            prompt = episode.reset()
            if episode.failure is not None:
                raise EpisodeFailed(episode.failure)
        finally:
            episode.close()
        rows.append({"prompt": [{"role": "user", "content": prompt}], "env_class": ENV_CLASS, "env_id": env_id,
                     TASK_KEY: json.dumps({"seed": start.get("seed"), "options": dict(start.get("options") or {})}),
                     "data_source": env_id})
    return rows


def _start_of(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise ConfigError(TASK_KEY, raw, 'JSON {"seed": ..., "options": {...}} (task_rows writes it)') from None
    return _plain(raw)


def _plain(value: Any) -> Any:
    """A plain dict/list from an OmegaConf node (SkyRL's configs), else the value."""
    if hasattr(value, "items") and not isinstance(value, dict):
        try:
            from omegaconf import OmegaConf

            return OmegaConf.to_container(value, resolve=True)
        except (ImportError, ValueError):
            return dict(value)
    return value


if ENV_CLASS not in skyrl_gym.registry:
    skyrl_gym.register(id=ENV_CLASS, entry_point=f"{__name__}:AgentGymTextEnv")
