"""Any agentgym env as a verifiers v1 environment (verifiers 0.4.0): ``pip install 'agentgym-rl[verifiers]'``.

verifiers resolves ``--env.taskset.id agentgym-verifiers`` to the module ``agentgym_verifiers``, which
exports ``AgentGymTaskset`` and ``AgentGymEnv`` (this module's classes) through ``__all__``::

    vf-eval agentgym-verifiers --env.taskset.env-id SearchQA-v0 --env.taskset.reward prs/short -n 8 -r 4

* ``AgentGymTaskset`` lists the env's tasks (``env.unwrapped.tasks``), each as an ``AgentGymTask``
  whose data names the env, the task and the seed; a task of a group (``-r``) always starts the same.
* ``AgentGymEnv`` plays one episode per task (``messages.MessageEpisode``): the env's first observation
  opens the conversation as the user's message (agentgym's own prompt, not a JSON payload), each
  model reply is cut at its first complete action and stepped, and the next observation is the next
  user turn, until the env ends the episode or the seat's ``max_turns`` does. The env's stop
  strings go into the seat's sampling (``stop``, with vLLM's ``include_stop_str_in_output`` so the
  closing tag comes back: verifiers' training servers are vLLM).
* The reward spec's total is the task's ``@reward`` (``agentgym``); its terms, the outcome and the
  turn count are ``@metric``s (``term/<name>``, ``outcome``, ``model_turns``, ...).
* An episode that something outside the model failed raises ``EpisodeFailed`` in ``run()``: verifiers
  records it on the trace and the episode (``errors``, ``ok=False``, rewards unscored), the slot its
  trainers drop failed rollouts by; it is never a reward of 0.
"""

from __future__ import annotations

from typing import Any

from agentgym.errors import DependencyNotInstalled, EpisodeFailed
from agentgym.integrations.messages import MessageEpisode, env_task

try:
    import verifiers.v1 as vf
except ImportError:  # pragma: no cover - the extra is missing
    raise DependencyNotInstalled("the verifiers bridge needs verifiers 0.4: pip install 'agentgym-rl[verifiers]'") \
        from None

__all__ = ["AgentGymTasksetConfig", "AgentGymTaskData", "AgentGymTask", "AgentGymTaskset", "AgentGymEnvConfig",
           "AgentGymEnv", "INFO_KEY"]

INFO_KEY = "agentgym"
"""The key of ``trace.info`` holding the episode's end (``EpisodeEnd``'s fields)."""


class AgentGymTasksetConfig(vf.TasksetConfig):
    env_id: str = "SearchQA-v0"
    """The agentgym env (``--env.taskset.env-id``)."""
    env_kwargs: dict[str, Any] = {}
    """Keyword arguments of ``gymnasium.make`` (data paths, ``mode``, ``action_format``...)."""
    reward: str | dict[str, Any] | None = None
    """A reward preset or spec (``planner_r1/dense``, ``prs/short``...); None: the env's own reward."""
    seed: int = 0
    """The reset seed of every task (a task's group shares it)."""
    num_tasks: int | None = None
    """List only the first tasks of the env (None: all of them)."""
    stop_at_action: bool = True
    """Send the env's stop strings to the sampler (the reply is cut at the first action either way)."""


class AgentGymTaskData(vf.TaskData):
    env_id: str
    env_kwargs: dict[str, Any] = {}
    reward: str | dict[str, Any] | None = None
    start: dict[str, Any]
    """``{"seed": ..., "options": {...}}``: what every rollout of this task resets with."""


class AgentGymTask(vf.Task[AgentGymTaskData]):
    """One agentgym task; scored from the episode's end, which ``AgentGymEnv`` keeps on the trace."""

    @property
    def key(self) -> str:
        return f"{self.data.env_id}:{self.data.id}"

    @vf.reward(weight=1.0)
    async def agentgym(self, trace: vf.Trace) -> float:
        """The reward spec's total (the env's return without a spec)."""
        return float(_end(trace)["total"])

    @vf.metric
    async def agentgym_terms(self, trace: vf.Trace) -> dict[str, float]:
        """The fixed-key breakdown verl and TRL log too: outcome, model_turns, term/<name>, ..."""
        return {key: value for key, value in _end(trace)["metrics"].items() if key != "score"}


class AgentGymTaskset(vf.Taskset[AgentGymTask, AgentGymTasksetConfig]):
    """The tasks of an agentgym env, each reset by its id."""

    def load(self) -> list[AgentGymTask]:
        config = self.config
        episode = MessageEpisode(env_task(config.env_id, env_kwargs=config.env_kwargs))
        try:
            tasks = list(getattr(episode.unwrapped, "tasks", ()))
        finally:
            episode.close()
        if config.num_tasks is not None:
            tasks = tasks[: config.num_tasks]
        return [AgentGymTask(AgentGymTaskData(
            id=str(task.id), name=str(task.id), prompt=None, env_id=config.env_id, env_kwargs=dict(config.env_kwargs),
            reward=config.reward, start={"seed": config.seed, "options": {"task_id": task.id}}), config.task)
            for task in tasks]


class AgentGymEnvConfig(vf.EnvConfig):
    agent: vf.AgentConfig = vf.AgentConfig(harness={"id": "null"})
    """The policy's seat: a tool-less chat harness (the env's tools are text actions)."""


class AgentGymEnv(vf.Env[AgentGymEnvConfig]):
    """One agentgym episode per task; the env plays the user's side of the conversation."""

    def __init__(self, config: AgentGymEnvConfig) -> None:
        super().__init__(_with_stops(config))

    async def run(self, task: AgentGymTask, agents: vf.Agents) -> None:
        data = task.data
        episode = MessageEpisode(env_task(data.env_id, data.start, reward=data.reward, env_kwargs=data.env_kwargs))
        try:
            observation = await episode.areset()
            async with agents.agent.interaction(task) as chat:
                while not episode.done:
                    segment = await chat.turn(observation)
                    if segment.terminated:  # the seat's max_turns or a @stop ended the exchange
                        break
                    observation = await episode.astep(segment.last_reply)
                end = episode.end()
                chat.trace.info[INFO_KEY] = {"total": end.total, "metrics": end.metrics, "task_id": end.task_id,
                                             "stop_reason": end.stop_reason, "actions": list(episode.actions),
                                             "failure": end.failure.model_dump(mode="json") if end.failure else None}
                if end.failure is not None:
                    raise EpisodeFailed(end.failure)
        finally:
            episode.close()


def _with_stops(config: AgentGymEnvConfig) -> AgentGymEnvConfig:
    """``config`` with the env's stop strings in the policy seat's sampling (unless it names its own)."""
    taskset = config.taskset
    if not getattr(taskset, "stop_at_action", False):
        return config
    episode = MessageEpisode(env_task(taskset.env_id, env_kwargs=taskset.env_kwargs))
    stops = episode.stops
    episode.close()
    sampling = config.agent.sampling.model_dump(exclude_none=True) if config.agent.sampling else {}
    if not stops or "stop" in sampling:
        return config
    sampling.update(stop=list(stops), include_stop_str_in_output=True)
    agent = config.agent.model_copy(update={"sampling": vf.SamplingConfig(**sampling)})
    return config.model_copy(update={"agent": agent})


def _end(trace: vf.Trace) -> dict[str, Any]:
    end = trace.info.get(INFO_KEY)
    if not isinstance(end, dict):
        raise RuntimeError("the trace has no agentgym episode: score AgentGymTask traces played by AgentGymEnv")
    return end
