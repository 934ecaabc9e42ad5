"""What ``agentgym run`` evaluates: the env, the agent, the episodes, and where results go."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from agentgym._deprecated import RenamedKeys, alias, module_aliases, renamed_kwargs, warn_renamed

from agentgym.agents.openai_chat import ChatAgentConfig

__all__ = ["RunConfig", "AgentConfig", "GoldAgentConfig", "ImportedAgentConfig", "PerturbedAgentConfig",
           "default_out_dir"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GoldAgentConfig(_Frozen):
    """The TravelPlanner gold-plan replay: no model needed (a baseline, and a smoke test)."""

    kind: Literal["gold", "reference"] = "gold"
    """``reference`` is 0.1's name for it, read with a warning until 0.3."""

    @field_validator("kind")
    @classmethod
    def _renamed(cls, kind: str) -> str:
        if kind == "reference":
            warn_renamed("agent kind 'reference'", "'gold'", stacklevel=2)
        return "gold"

    def identity(self) -> dict[str, Any]:
        return {"kind": self.kind}


class ImportedAgentConfig(_Frozen):
    """Your own agent: ``target`` is ``"package.module:factory"``, ``factory(env) -> Agent``."""

    kind: Literal["import"] = "import"
    target: str = Field(pattern=r"^[\w.]+:[\w.]+$")

    def identity(self) -> dict[str, Any]:
        return {"kind": self.kind, "target": self.target}


class PerturbedAgentConfig(_Frozen):
    """The reward lab's seeded source of groups (``agentgym.agents.PerturbedAgent``): each task's passing
    answer, or that answer with failure edits and invalid calls; no model needed."""

    kind: Literal["perturbed"] = "perturbed"
    pass_rate: float = Field(0.3, ge=0, le=1)
    """The share of episodes that play the passing answer unedited."""
    invalid_rate: float = Field(0.3, ge=0, le=1)
    """The share of episodes that make 1 or 2 invalid calls on the way."""
    max_edits: int = Field(3, ge=1, le=20)
    """The most failure edits an edited episode gets."""

    def identity(self) -> dict[str, Any]:
        return self.model_dump()


AgentConfig = Annotated[ChatAgentConfig | GoldAgentConfig | ImportedAgentConfig | PerturbedAgentConfig,
                        Field(discriminator="kind")]


_RUN_FIELDS = RenamedKeys("RunConfig field", {"tasks": "selection"})


class RunConfig(_Frozen):
    env_id: str
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    agent: AgentConfig
    episodes: int = Field(ge=1)
    """Episodes to play, all samples of all tasks: a multiple of ``samples_per_task``."""
    samples_per_task: int = Field(1, ge=1, le=4096)
    """Episodes per task, drawn together as one group (GRPO's G): episode ``e`` is sample ``e % G``
    of the group of task number ``e // G``."""
    concurrency: int = Field(8, ge=1)
    seed: int = 0
    """Episode ``e`` resets with ``seed + e`` (with ``selection="seed"``, ``seed + e // G``, so a group
    shares its task) and its agent samples with ``seed + e`` (the sample seed, distinct per episode)."""
    selection: Literal["index", "seed"] = "index"
    """How episodes pick their task: ``index``, the group of task number ``t`` plays task ``t``
    (``options={"task_index": t}``); ``seed``, the env draws the task from its seeded generator.
    (The task set itself is the env's ``tasks=`` kwarg.)"""
    reward: str | None = None
    """A reward preset (or spec file) to shape the episodes with (``agentgym.rewards``)."""
    out: Path
    env_server: str | None = None
    """Play the env on this env server (``agentgym serve``) instead of in this process."""
    env_token: SecretStr | None = None
    record_agent_errors: bool = False
    """Record an episode whose agent failed for good (e.g. a 400 for a too-long context) as a failed
    result; by default it is left out, and retried by the next run."""
    max_consecutive_failures: int | None = Field(None, ge=1)
    """Stop after this many failed episodes in a row (default: 2 x concurrency, at least 5)."""
    fsync: bool = True

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        return _RUN_FIELDS.apply(data, stacklevel=6) if isinstance(data, dict) else data

    def identity(self) -> dict[str, Any]:
        """What makes two runs comparable: a rerun must match it to resume from the same results."""
        identity = {"env_id": self.env_id, "env_kwargs": self.env_kwargs, "agent": self.agent.identity(),
                    "seed": self.seed, "selection": self.selection, "reward": self.reward}
        if self.samples_per_task > 1:  # one sample per task is how every earlier run played: they still resume
            identity["samples_per_task"] = self.samples_per_task
        return identity

    def task_of(self, episode: int) -> tuple[int, int]:
        """``(task number, sample index)`` of episode ``episode``."""
        return divmod(episode, self.samples_per_task)

    def reset_seed(self, episode: int) -> int:
        """The seed episode ``episode`` resets with (a group shares it when the seed draws the task)."""
        return self.seed + (self.task_of(episode)[0] if self.selection == "seed" else episode)

    @property
    def failure_limit(self) -> int:
        return self.max_consecutive_failures or max(5, 2 * self.concurrency)


@renamed_kwargs({"tasks": "selection"})
def default_out_dir(env_id: str, agent_label: str, reward: str | None, *, env_kwargs: dict[str, Any] | None = None,
                    seed: int = 0, selection: str = "index", samples_per_task: int = 1) -> Path:
    """``runs/<env>__<agent>[__<reward>][__seed<n>][__g<G>][__tasks-seed][__kw-<hash>]``: the same command
    resumes into the same folder, and commands that differ in what they play write to different ones.
    (``tasks-seed`` is the seed selection's suffix from before it was renamed, kept so those runs resume.)"""
    parts = [env_id, agent_label] + ([reward] if reward else [])
    if seed:
        parts.append(f"seed{seed}")
    if samples_per_task > 1:
        parts.append(f"g{samples_per_task}")
    if selection != "index":
        parts.append(f"tasks-{selection}")
    if env_kwargs:
        digest = hashlib.sha256(json.dumps(env_kwargs, sort_keys=True, default=str).encode()).hexdigest()[:8]
        parts.append(f"kw-{digest}")
    return Path("runs") / "__".join(re.sub(r"[^\w.-]+", "-", p).strip("-") for p in parts)


alias("run config agent kind", "reference", "gold")
__getattr__ = module_aliases(__name__, {"ReferenceAgentConfig": "GoldAgentConfig"})
