"""Any agentgym env in tinker-cookbook 0.6.1's RL loop: ``pip install 'agentgym-rl[tinker]'``.

    builder = AgentGymGroupBuilder("SearchQA-v0", start={"seed": 0, "options": {"task_index": 3}},
                                   reward="prs/short", group_size=8, renderer_name="qwen3",
                                   model_name="Qwen/Qwen3-8B")
    group = await do_group_rollout(builder, policy, strategy=MinViableGroup())   # the cookbook's own loop

* ``AgentGymMessageEnv`` is a cookbook ``MessageEnv`` over one episode (``messages.MessageEpisode``):
  its first message is the env's first observation (agentgym's own prompt), each assistant message
  is cut at its first complete action and stepped, and the env's observation comes back as the next
  user message. The cookbook's ``EnvFromMessageEnv`` renders it to tokens with the renderer.
* The reward is paid on the last step: the reward spec's total (the env's return without one).
  ``StepResult.metrics`` of that step holds the outcome and every term (``term/<name>``), the keys
  verl and TRL log, plus the cookbook's one-hot ``stop/<reason>``.
* ``AgentGymGroupBuilder`` is picklable and holds only strings and numbers: the env id, the task
  (``start``: seed and reset options, shared by every env of the group), the reward spec, the
  group size, and the renderer and tokenizer names that ``make_envs`` builds the renderer from
  (``renderers.get_renderer``), as the cookbook's own builders do.
* A failed episode (an env or retriever that failed) raises ``EpisodeFailed`` from the env, so the
  cookbook's rollout strategy decides: ``MinViableGroup`` and ``RetryOnFailure`` record it in
  ``TrajectoryGroup.rollout_errors`` and leave it out of the group (its baseline never sees a 0);
  the default ``FailFast`` fails the group.
* Stop strings are not sent to the sampler: the renderer parses a message only up to its own
  end-of-turn, so the turn ends there and the env reads it up to its first action.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentgym.errors import DependencyNotInstalled, EpisodeFailed
from agentgym.integrations.messages import MessageEpisode, env_task

try:
    from tinker_cookbook import renderers
    from tinker_cookbook.rl import types
    from tinker_cookbook.rl.message_env import EnvFromMessageEnv, MessageEnv, MessageStepResult
    from tinker_cookbook.tokenizer_utils import get_tokenizer
except ImportError:  # pragma: no cover - the extra is missing
    raise DependencyNotInstalled("the tinker-cookbook bridge needs tinker-cookbook 0.6.1: pip install "
                                 "'agentgym-rl[tinker]', then pip install --no-deps tinker-cookbook==0.6.1") from None

__all__ = ["AgentGymMessageEnv", "AgentGymGroupBuilder", "AgentGymDataset", "ScriptedSampler", "byte_tokenizer"]


class AgentGymMessageEnv(MessageEnv):
    """One agentgym episode as a cookbook ``MessageEnv`` (single use, as cookbook envs are)."""

    def __init__(self, env_id: str, *, start: Mapping[str, Any] | None = None, reward: Any = None,
                 env_kwargs: Mapping[str, Any] | None = None, max_turns: int | None = None) -> None:
        task = env_task(env_id, start, reward=reward, env_kwargs=env_kwargs)
        self.episode = MessageEpisode(task, max_turns=max_turns)
        self.messages: list[renderers.Message] = []
        self.example_id = None

    async def initial_observation(self) -> list[renderers.Message]:
        prompt = await self.episode.areset()
        self._raise_failure()
        self.example_id = self.episode.end().task_id
        self.messages = [renderers.Message(role="user", content=prompt)]
        return list(self.messages)

    async def step(self, message: renderers.Message) -> MessageStepResult:
        reply = renderers.get_text_content(message)
        observation = await self.episode.astep(reply)
        self._raise_failure()
        self.messages.append(renderers.Message(role="assistant", content=self.episode.actions[-1]))
        if not self.episode.done:
            self.messages.append(renderers.Message(role="user", content=observation))
            return MessageStepResult(reward=0.0, episode_done=False, next_messages=list(self.messages))
        end = self.episode.end()
        stop = types.StopReason.COMPLETED if end.stop_reason == "terminated" else types.StopReason.MAX_TURNS
        metrics = {**end.metrics, f"{types.STOP_METRIC_PREFIX}{stop}": 1.0}
        self.episode.close()
        return MessageStepResult(reward=end.total, episode_done=True, next_messages=list(self.messages),
                                 metrics=metrics, logs={"task_id": end.task_id or "", "stop_reason": end.stop_reason})

    def _raise_failure(self) -> None:
        if self.episode.failure is not None:
            self.episode.close()
            raise EpisodeFailed(self.episode.failure)


@dataclass(frozen=True)
class AgentGymGroupBuilder(types.EnvGroupBuilder):
    """``group_size`` envs of one agentgym task, all starting from ``start``."""

    env_id: str
    start: dict[str, Any] = field(default_factory=dict)
    """The task: ``{"seed": int, "options": {...}}``."""
    reward: Any = None
    """A reward preset name or spec dict (None: the env's own reward)."""
    group_size: int = 1
    renderer_name: str = "role_colon"
    model_name: str = ""
    """The tokenizer's name for ``tokenizer_utils.get_tokenizer`` (a hub id or a registered name)."""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    max_turns: int | None = None

    async def make_envs(self) -> Sequence[types.Env]:
        renderer = renderers.get_renderer(self.renderer_name, get_tokenizer(self.model_name),
                                          model_name=self.model_name)
        return [EnvFromMessageEnv(renderer, AgentGymMessageEnv(
            self.env_id, start=self.start, reward=self.reward, env_kwargs=self.env_kwargs,
            max_turns=self.max_turns)) for _ in range(self.group_size)]

    def logging_tags(self) -> list[str]:
        return [self.env_id]


class AgentGymDataset(types.RLDataset):
    """Batches of group builders, one per task (``starts``), for the cookbook's ``train.Config``."""

    def __init__(self, env_id: str, starts: Sequence[Mapping[str, Any]], *, batch_size: int, **builder: Any) -> None:
        for start in starts:
            env_task(env_id, start)  # a malformed start fails here, not in a rollout worker
        self.builders = [AgentGymGroupBuilder(env_id, start=dict(s), **builder) for s in starts]
        self.batch_size = batch_size

    def get_batch(self, index: int) -> Sequence[types.EnvGroupBuilder]:
        return self.builders[index * self.batch_size:(index + 1) * self.batch_size]

    def __len__(self) -> int:
        return -(-len(self.builders) // self.batch_size)


class ScriptedSampler:
    """Stands in for ``tinker.SamplingClient`` offline (tests, the docs' example): ``policy(prompt_text)``
    gives the reply, sent back as a sampler does, its tokens ended by the tokenizer's end-of-turn token
    with a log-prob each and ``stop_reason="stop"``."""

    def __init__(self, policy: Any, tokenizer: Any) -> None:
        self.policy, self.tokenizer = policy, tokenizer
        self.prompts: list[str] = []

    async def sample(self, prompt: Any, num_samples: int, sampling_params: Any, **_: Any) -> Any:
        import numpy as np
        import tinker

        text = self.tokenizer.decode(prompt.to_ints())
        self.prompts.append(text)
        sequences = []
        for i in range(num_samples):
            tokens = [*self.tokenizer.encode(self.policy(text), add_special_tokens=False), self.tokenizer.eos_token_id]
            sequences.append(tinker.SampledSequence(stop_reason="stop", sequence_id=f"scripted-{i}",
                                                    tokens_np=np.array(tokens), logprobs_np=np.full(len(tokens), -1.0)))
        return tinker.SampleResponse(sequences=sequences)

    sample_async = sample


def byte_tokenizer() -> Any:
    """A byte-level tokenizer built in memory (256 byte tokens and ``<|eos|>``): any text round-trips
    exactly, nothing is downloaded. Register it for builders with ``register_tokenizer(name, ...)``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    vocab["<|eos|>"] = len(vocab)
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|eos|>")
