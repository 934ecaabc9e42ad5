"""TextEnv: the base class of agentgym's multi-turn text environments.

A subclass implements two abstract hooks, named for when they are called:
``on_reset(options) -> (observation, StepInfo)`` and
``on_step(action) -> (observation, reward, terminated, StepInfo)``; it may override a third,
``on_invalid_action(error)``. The base class owns the Gymnasium contract around them: seeding,
the text spaces, turn counting, truncation at ``max_turns``, retired kwarg and reset-option
spellings, and turning ``StepInfo`` into the plain ``info`` dict. ``docs/env-authors.md`` builds
an env from scratch.

``max_action_chars`` holds for every env: a longer action is answered with an
``action_too_long`` error (through ``on_invalid_action``) before any parser reads it, so parsing
work is bounded by it.

The base class holds no reward-shaping code: ``gymnasium.make(ID, reward=...)`` wraps the env
in ``agentgym.rewards.ShapeReward`` (see ``agentgym.registration``). A subclass tells the
reward terms about the task by overriding ``reward_context()``.
"""

from __future__ import annotations

import abc
import difflib
import functools
import importlib
import inspect
from typing import Any, ClassVar, NamedTuple

import gymnasium

from agentgym.core.spaces import TextSpace
from agentgym.core.tasks import SCHEDULE_OPTIONS, TASK_OPTIONS, task_field
from agentgym.core.turn_cut import RetiredCutNames, TurnCut
from agentgym.core.types import ActionError, ErrorCode, StepInfo
from agentgym._deprecated import RenamedKeys
from agentgym._toolbox import require_choice, require_int, require_positive_int
from agentgym.errors import ActionTypeError, ConfigError, ResetNeeded

__all__ = ["TextEnv", "StepResult", "describe_env", "allowed_kwargs", "check_kwargs", "require_choice",
           "require_positive_int"]


class StepResult(NamedTuple):
    """What ``on_step`` returns, as ``TextEnv.transition``/``termination`` build it (a plain
    4-tuple works too)."""

    observation: str
    reward: float
    terminated: bool
    info: StepInfo


class TextEnv(RetiredCutNames, gymnasium.Env[str, str], abc.ABC):
    """A Gymnasium env whose observations and actions are text; subclasses implement ``on_reset``
    and ``on_step``."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"]}
    reward_provides: ClassVar[frozenset[str]] = frozenset()
    """What the env gives reward terms beyond steps, actions, prompt, task, answer and outcome:
    ``travelplanner`` (plans and TravelPlanner evaluation reports), ``task_text``, ``gold_answers``.
    ``make(..., reward=...)`` refuses a term that needs something else."""
    turn_cut: TurnCut = TurnCut()
    """Where a model turn's action ends (``TurnCut``): the stop strings a trainer passes to its
    rollout server, and how the env reads a finished turn. Set it in the class body, or per instance
    when it depends on a kwarg (``self.turn_cut = TurnCut(stops=...)``)."""
    client_kwargs: ClassVar[tuple[str, ...]] = ()
    """The kwargs an env server's client may set, beyond ``max_turns``, ``render_mode`` and
    ``reward``: choices the env checks itself (a short string, a number) or inline ``tasks`` rows.
    Paths, URLs and secrets are the operator's: never list them. Their retired spellings
    (``renamed_kwargs``) are allowed with them."""
    task_splits: ClassVar[tuple[str, ...]] = ()
    """Names a client may give as ``tasks`` that pick the operator's own data (``train``, ...)."""
    reset_options: ClassVar[tuple[str, ...]] = TASK_OPTIONS
    """The reset options the env reads (besides a reward schedule's); an env server refuses others."""

    reward_lab: ClassVar[str | None] = None
    """The module of the env's reward-lab kit, imported on use: ``passing_actions(env)``,
    ``failure_edit(env, actions, rng)``, ``invalid_action(env, rng)`` and ``PROBES``, which the
    perturbed agent and ``agentgym rewards probe`` play (``docs/reward-lab.md``). None: no kit."""

    renamed_kwargs: ClassVar[RenamedKeys | None] = None
    """Retired spellings of this env's kwargs (``RenamedKeys``): they still work, with a warning."""
    renamed_options: ClassVar[RenamedKeys | None] = None
    """Retired spellings of this env's reset options, likewise."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            cls.__init__ = _reject_unknown_kwargs(cls.__dict__["__init__"], cls.renamed_kwargs)

    def __init__(
        self,
        *,
        max_turns: int = 30,
        max_action_chars: int = 1_000_000,
        max_observation_chars: int = 10_000_000,
        render_mode: str | None = None,
    ) -> None:
        require_positive_int("max_turns", max_turns)
        require_positive_int("max_action_chars", max_action_chars)
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ConfigError("render_mode", render_mode, [None, *self.metadata["render_modes"]])
        self.max_turns = max_turns
        self.render_mode = render_mode
        self.action_space = TextSpace(max_action_chars)
        self.observation_space = TextSpace(max_observation_chars)
        self._turn = 0
        self._done = True
        self._last_observation = ""

    # -- Gymnasium API -----------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self._turn = 0
        self._done = True  # until the new episode has started: a reset that raises leaves no episode
        options = _without_schedule(options)
        if self.renamed_options is not None:
            options = self.renamed_options.apply(options)
        observation, info = self.on_reset(options)
        self._done = False
        self._last_observation = observation
        return observation, self._to_info(info)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not isinstance(action, str):
            raise ActionTypeError(f"step() takes the model's text as a str, got {type(action).__name__}")
        if self._done:
            raise ResetNeeded("the episode is over (or never started); call reset() first")
        self._turn += 1
        limit = self.action_space.max_length
        if len(action) > limit:
            observation, reward, terminated, info = self.on_invalid_action(ActionError(
                code=ErrorCode.ACTION_TOO_LONG,
                message=f"Your reply has {len(action)} characters; the limit is {limit}. Write one short action."))
        else:
            observation, reward, terminated, info = self.on_step(action)
        truncated = not terminated and self._turn >= self.max_turns
        if truncated:
            info = info.model_copy(update={"terminated_reason": "max_turns"})
        self._done = terminated or truncated
        self._last_observation = observation
        return observation, float(reward), terminated, truncated, self._to_info(info)

    def render(self) -> str | None:
        return self._last_observation if self.render_mode == "ansi" else None

    @property
    def turn(self) -> int:
        """Actions taken so far in the current episode."""
        return self._turn

    def step_info_of(self, info: dict[str, Any]) -> StepInfo | None:
        """The ``StepInfo`` this env made ``info`` from, when ``info`` is the dict its last ``reset`` or
        ``step`` returned (wrappers in this process read the record instead of parsing it again); else None."""
        kept = self.__dict__.get("_kept_info")
        return kept[1] if kept is not None and kept[0] is info else None

    def _to_info(self, info: StepInfo) -> dict[str, Any]:
        out = info.to_info()
        self._kept_info = (out, info)
        return out

    # -- what reward terms read -------------------------------------------------------------
    def reward_context(self) -> dict[str, Any]:
        """What reward terms need to know of the episode beyond its steps: any of ``task``,
        ``task_text``, ``gold_answers``, ``answer``, ``outcome``, ``evaluate``. Override in envs."""
        return {}

    @classmethod
    def reward_lab_kit(cls) -> Any:
        """The env's reward-lab kit module (``reward_lab``); ``ConfigError`` when the env declares none."""
        if cls.reward_lab is None:
            raise ConfigError("env", cls.__name__, "an env that declares a reward-lab kit (TextEnv.reward_lab): "
                              "the perturbed agent and the probes play its passing answers")
        return importlib.import_module(cls.reward_lab)

    def task_context(self, task_id: str) -> dict[str, Any]:
        """What reward terms need to know of task ``task_id`` to shape a logged episode of it offline::

            episode = Episode.from_infos(infos, actions=actions, prompt=prompt, **env.task_context(task_id))

        ``reward_context()`` without what belongs to one episode (``answer``, ``outcome``: the
        episode's own steps say them); an ``evaluate`` in it re-evaluates the logged answer under another
        evaluator. The default resets the env to the task (``options={"task_id": task_id}``)."""
        self.reset(options={"task_id": task_id})
        return {k: v for k, v in self.reward_context().items() if k not in ("answer", "outcome")}

    def describe_task(self, task: Any) -> dict[str, Any]:
        """What a server's clients may read of one of this env's ``tasks`` (OpenEnv's task discovery):
        what the agent is told, never how it is graded. Default: its ``id`` and ``text``. Override in envs."""
        return {"id": task_field(task, "id"), "text": task_field(task, "text")}

    def describe(self) -> dict[str, Any]:
        """What an env server's client needs to know of this env (the session description):
        ``describe_env``'s fields. Override to add the env's own."""
        return describe_env(self)

    # -- step results (dm_env's constructors): what on_step and on_invalid_action return --------
    @staticmethod
    def transition(observation: str, reward: float = 0.0, *, info: StepInfo) -> StepResult:
        """A step after which the episode goes on."""
        return StepResult(observation, reward, False, info)

    @staticmethod
    def termination(observation: str, reward: float = 0.0, *, info: StepInfo) -> StepResult:
        """A step that ends the episode (the base class decides truncation, at ``max_turns``)."""
        return StepResult(observation, reward, True, info)

    # -- hooks for subclasses ----------------------------------------------------------------
    @abc.abstractmethod
    def on_reset(self, options: dict[str, Any]) -> tuple[str, StepInfo]:
        """Start an episode; return its first observation and ``StepInfo(turn=0, ...)``.

        Called by ``reset`` after seeding (``self.np_random`` is ready) and after the turn count
        is zeroed. ``options`` are the reset options with the schedule keys taken out and retired
        spellings renamed (``renamed_options``); raise ``ConfigError`` on one the env does not read.
        """

    @abc.abstractmethod
    def on_step(self, action: str) -> tuple[str, float, bool, StepInfo]:
        """Play one action; return ``(observation, reward, terminated, StepInfo)``.

        Called by ``step`` with a ``str`` of at most ``max_action_chars`` characters, after the
        turn count is raised (``self.turn`` counts this action). Model text that makes no sense is
        an observation plus an error code (``on_invalid_action``), never an exception; the base
        class decides truncation at ``max_turns``.
        """

    def on_invalid_action(self, error: ActionError) -> tuple[str, float, bool, StepInfo]:
        """The step for an action that cannot be used: its error as the observation, reward 0.

        Called by ``step`` for an action over ``max_action_chars``, and by ``on_step`` for any
        action it cannot use. Override it to add the env's own info (task id, ...)."""
        return self.transition(error.message, info=StepInfo(turn=self._turn, action="invalid", error=error))


def describe_env(env: Any) -> dict[str, Any]:
    """A text env's limits, render modes, ``action_format``, tool schemas and turn cut, read from its
    attributes: ``TextEnv.describe``'s default, and what an env server says of a text env of another kind."""
    tools = getattr(env, "tools", None)
    return {
        "max_action_chars": env.action_space.max_length,
        "max_observation_chars": env.observation_space.max_length,
        "render_modes": list(env.metadata.get("render_modes", [])),
        "action_format": getattr(env, "action_format", None),
        "tools": tools.schemas() if hasattr(tools, "schemas") else None,
        "turn_cut": TurnCut.of(env).to_json(),
    }


def _without_schedule(options: dict[str, Any] | None) -> dict[str, Any]:
    """The reset options an env reads: ``training_step``/``total_steps`` are for a reward shaper
    (``ShapeReward`` takes them first); an env without one checks and ignores them, so a trainer
    can send them to every env."""
    options = dict(options or {})
    for key, low in zip(SCHEDULE_OPTIONS, (0, 1)):
        value = options.pop(key, None)
        if value is not None:
            require_int(key, value, low=low)
    return options


def allowed_kwargs(cls: type) -> list[str] | None:
    """The keyword arguments ``cls(...)`` accepts, or None when it takes ``**kwargs``."""
    params = inspect.signature(cls.__init__).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return None
    return [n for n, p in params.items() if n != "self" and p.kind is not inspect.Parameter.VAR_POSITIONAL]


def check_kwargs(kwargs: dict[str, Any], allowed: list[str] | None) -> None:
    """A ``ConfigError`` naming the closest allowed kwarg when ``kwargs`` has one not in ``allowed``
    (``gymnasium.make`` passes kwargs straight through, where Python would raise a bare TypeError)."""
    unknown = [] if allowed is None else sorted(set(kwargs) - set(allowed))
    if unknown:
        close = difflib.get_close_matches(unknown[0], allowed, n=1)
        hint = f"{close[0]!r} or another" if close else "a"
        raise ConfigError(unknown[0], kwargs[unknown[0]], f"{hint} keyword argument among {allowed}")


def _reject_unknown_kwargs(init: Any, renamed: RenamedKeys | None) -> Any:
    """Wrap an env's ``__init__`` so a retired kwarg works (with a warning) and a misspelt one is a
    ``ConfigError`` naming the allowed ones (the current names only)."""
    params = inspect.signature(init).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return init
    allowed = [n for n, p in params.items() if n != "self" and p.kind is not inspect.Parameter.VAR_POSITIONAL]

    @functools.wraps(init)
    def checked(self: Any, *args: Any, **kwargs: Any) -> None:
        if renamed is not None:
            kwargs = renamed.apply(kwargs)
        check_kwargs(kwargs, allowed)
        init(self, *args, **kwargs)

    return checked
