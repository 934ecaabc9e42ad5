"""TravelPlannerEnv: plan a multi-day trip with the TravelPlanner tools (Xie et al., ICML 2024)."""

from __future__ import annotations

import os
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from agentgym._deprecated import RenamedKeys, renamed_attribute
from agentgym._toolbox import clip
from agentgym.core.env import TextEnv, require_choice
from agentgym.core.tasks import TASK_OPTION_RENAMES, pick_task
from agentgym.core.turn_cut import TurnCut
from agentgym.core.parsing import FORMATS, Answer, Call, GiveUp, parse_action
from agentgym.core.tools import Tool, ToolBox
from agentgym.core.types import ActionError, ErrorCode, StepInfo, ToolCall, ToolResult
from agentgym.envs.travelplanner._prompts import first_observation
from agentgym.envs.travelplanner.evaluation import EVALUATORS, evaluate
from agentgym.envs.travelplanner.plan import ParsedPlan, parse_plan
from agentgym.envs.travelplanner.tasks import TravelTask, load_tasks, tasks_from_environment
from agentgym.envs.travelplanner.reference_information import reference_information
from agentgym.envs.travelplanner.tools import Notebook, search_tools
from agentgym.envs.travelplanner.world import World
from agentgym.errors import ConfigError, DataError

__all__ = ["TravelPlannerEnv", "MODES"]

MODES = ("tool-use", "sole-planning")
_RENAMED_KWARGS = RenamedKeys("TravelPlannerEnv kwarg", {"queries": "tasks", "evaluation": "evaluator"})
_SEARCHES: weakref.WeakKeyDictionary[World, tuple[Tool, ...]] = weakref.WeakKeyDictionary()


def tools_for(world: World, notebook: Notebook | None = None) -> ToolBox:
    """The world's tools, NotebookWrite writing to ``notebook`` (a new one when None). The searches
    are shared by every env on that world, so their result caches are."""
    searches = _SEARCHES.get(world)
    if searches is None:
        searches = _SEARCHES[world] = search_tools(world)
    return ToolBox([*searches, (Notebook() if notebook is None else notebook).tool])


class TravelPlannerEnv(TextEnv):
    """Plan a multi-day trip that satisfies a traveller's request, using a sandbox travel database.

    ## Description
    Each episode is one TravelPlanner task (the benchmark's query): an origin, a destination city (3-day trips) or
    state (5- and 7-day trips visiting 2 or 3 of its cities), dates, the number of people, a
    budget and local constraints (house rule, cuisine, room type, transportation). The agent
    gathers flights, accommodations, restaurants, attractions and distances with tools
    (``tool-use`` mode) or is given them (``sole-planning`` mode), then submits a day-by-day
    plan, which the TravelPlanner evaluator checks against 8 commonsense and 5 hard constraints.

    ## Action format
    ``action_format="react"`` (default): the official syntax, one action per turn, e.g.
    ``FlightSearch[New York, Boston, 2022-03-01]``; arguments are separated by ``", "``.
    Preceding thoughts are allowed; the action is the last line or the text after ``Action:``.
    ``Finish[<plan JSON>]`` or ``<answer><plan JSON></answer>`` submits; ``GiveUp[reason]`` quits.

    ``action_format="json"``: ``<tool_call>{"name": "search_flights", "arguments": {...}}</tool_call>``
    with the schemas in ``env.unwrapped.tools.schemas()`` (also shown in the first observation);
    ``<answer><plan JSON></answer>`` submits.

    ## Tools
    FlightSearch / search_flights, AccommodationSearch / search_accommodations,
    RestaurantSearch / search_restaurants, AttractionSearch / search_attractions,
    CitySearch / search_cities, GoogleDistanceMatrix / distance_matrix (self-driving, taxi),
    NotebookWrite / notebook_write. Results and error strings are the official ones; tables are
    shown as pandas ``to_string(index=False)`` renders them.

    ## Observation
    Text: the instructions and the task after ``reset``; the tool's result, or a one-line error
    saying what was wrong and how to fix it, after ``step``.

    ## Rewards
    0 on every step but the last; on submission, 1.0 if the plan passes every constraint
    (final pass) under the ``evaluator``, else 0.0. Override ``terminal_reward`` for another
    terminal signal; ``info["report"]`` holds the full report. With ``reward=`` (a preset
    such as ``planner_r1/dense``, or a reward spec) the last step pays the shaped reward instead,
    with its breakdown in ``info["reward"]`` (see ``docs/rewards.md``).

    ## Episode end
    Terminated when a plan is submitted or the agent gives up; truncated after ``max_turns``
    actions (default 30, as the official agent).

    ## Info
    ``StepInfo.to_info()``: turn, action kind, tool call and result summary, error code
    (``info["error"]["code"]``), and on termination the evaluation report.

    ## Arguments
    * ``database``: a world folder in the official layout (holding ``database/``), a ``World``,
      or None for ``$AGENTGYM_TRAVELPLANNER_DB`` or else the embedded synthetic world.
    * ``tasks``: a split name of the world (``train``, ``validation``, ``test``), a task
      file (jsonl, json, csv, parquet, in the benchmark's query format), ``hf:SPLIT``, or a list
      of rows or ``TravelTask``; None for ``$AGENTGYM_TRAVELPLANNER_TASKS`` or else ``train``.
    * ``mode``: ``tool-use`` (default) or ``sole-planning``.
    * ``action_format``: ``react`` (default) or ``json``.
    * ``evaluator``: ``strict`` (default; no loopholes, for training) or ``official``
      (the official evaluator's verdicts, for leaderboard-comparable numbers).
    * ``reward``: None (the final-pass reward above), or a reward preset name or spec.
    * ``max_turns``, ``max_action_chars``, ``cache_dir``, ``render_mode`` (``ansi``).

    ## Reset options
    ``{"task_index": i}``, ``{"task_id": "train-3"}`` or ``{"task": row_or_TravelTask}``;
    otherwise the task is drawn with the env's seeded generator. ``{"training_step": n}`` (and
    optionally ``"total_steps"``) sets the training step for scheduled rewards.

    ## Version history
    * v0: first release.
    """

    reward_provides: ClassVar[frozenset[str]] = frozenset({"travelplanner"})
    reward_lab: ClassVar[str] = "agentgym.envs.travelplanner.lab"
    renamed_kwargs: ClassVar[RenamedKeys] = _RENAMED_KWARGS
    client_kwargs: ClassVar[tuple[str, ...]] = ("action_format", "mode", "evaluator", "tasks")
    task_splits: ClassVar[tuple[str, ...]] = ("train", "validation", "test")
    renamed_options: ClassVar[RenamedKeys] = TASK_OPTION_RENAMES

    def __init__(
        self,
        *,
        database: str | os.PathLike[str] | World | None = None,
        tasks: str | os.PathLike[str] | Sequence[Mapping[str, Any] | TravelTask] | None = None,
        mode: str = "tool-use",
        action_format: str = "react",
        evaluator: str = "strict",
        max_turns: int = 30,
        max_action_chars: int = 1_000_000,
        cache_dir: str | os.PathLike[str] | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(max_turns=max_turns, max_action_chars=max_action_chars, render_mode=render_mode)
        require_choice("mode", mode, MODES)
        require_choice("action_format", action_format, FORMATS)
        require_choice("evaluator", evaluator, EVALUATORS)
        self.mode, self.action_format, self.evaluator = mode, action_format, evaluator
        # json actions end at a closing tag; react's Finish[<plan JSON>] nests brackets, so no string is safe.
        self.turn_cut = TurnCut(("</tool_call>", "</answer>") if action_format == "json" else ())
        self.world = database if isinstance(database, World) else _open_world(database, cache_dir)
        self.tasks = _load(tasks, self.world.root)
        self._ids = {t.id: i for i, t in enumerate(self.tasks)}
        self._task: TravelTask | None = None
        self._notebook = Notebook()
        self._answer: str | None = None

    @property
    def tools(self) -> ToolBox:
        """The tools this mode offers (none in sole-planning); ``tools.schemas()`` for function calling."""
        # Built on each use rather than stored, so the env keeps pickling (the caches do not).
        return tools_for(self.world, self._notebook) if self.mode == "tool-use" else ToolBox([])

    @property
    def task(self) -> TravelTask | None:
        """The current episode's task."""
        return self._task

    query = renamed_attribute("TravelPlannerEnv", "query", "task")

    evaluation = renamed_attribute("TravelPlannerEnv", "evaluation", "evaluator")

    queries = renamed_attribute("TravelPlannerEnv", "queries", "tasks")

    # -- episode -----------------------------------------------------------------------------
    def on_reset(self, options: dict[str, Any]) -> tuple[str, StepInfo]:
        self._task = pick_task(options, self.tasks, self._ids, self.np_random, _read_task)
        self._notebook = Notebook()
        self._answer = None
        reference = None
        if self.mode == "sole-planning":
            reference = list(self._task.reference_information or ()) or reference_information(
                self._task, self.world, tools_for(self.world))
        text = first_observation(self._task, self.tools, self.action_format, reference)
        return text, StepInfo(turn=0, task_id=self._task.id)

    def on_step(self, action: str) -> tuple[str, float, bool, StepInfo]:
        # Actions over max_action_chars never get here (TextEnv.step answers them).
        parsed = parse_action(action, self.tools, self.action_format)
        if isinstance(parsed, ActionError):
            return self.on_invalid_action(parsed)
        if isinstance(parsed, Call):
            return self._call(parsed)
        return self._finish(parsed)

    def on_invalid_action(self, error: ActionError) -> tuple[str, float, bool, StepInfo]:
        return self.transition(error.message, info=self._info(action="invalid", error=error))

    def _call(self, call: Call) -> tuple[str, float, bool, StepInfo]:
        tool = call.tool
        result = tool.run(*call.arguments.values())
        self._notebook.remember(tool, result)
        error = None if result.ok else ActionError(code=result.error, message=clip(result.content, 300))
        info = self._info(action="tool", tool_call=ToolCall(name=tool.action, arguments=call.arguments),
                          tool_result=_summary(result), error=error)
        return self.transition(result.content, info=info)

    def _finish(self, parsed: Answer | GiveUp) -> tuple[str, float, bool, StepInfo]:
        gave_up = isinstance(parsed, GiveUp)
        self._answer = None if gave_up else parsed.text
        # The model's text is read leniently (fences, <answer>, literals) by either evaluator.
        plan = None if gave_up else parse_plan(parsed.text)
        report = evaluate(plan, self._task, self.world, evaluator=self.evaluator)
        reward = self.terminal_reward(report)
        error = None
        if not gave_up and not report.delivered:
            error = ActionError(code=ErrorCode.INVALID_PLAN, message=f"The plan could not be read: {report.error}")
        text = _final_text(report, gave_up)
        info = self._info(action="give_up" if gave_up else "answer", error=error, answer=self._answer,
                          terminated_reason="give_up" if gave_up else "answer",
                          report=report.model_dump(mode="json"))
        return self.termination(text, reward, info=info)

    def terminal_reward(self, report: Any) -> float:
        """The reward for a submitted plan: 1.0 on final pass, else 0.0. Override to reshape."""
        return 1.0 if report.final_pass else 0.0

    def reward_context(self) -> dict[str, Any]:
        """The task, the submitted plan text, and the evaluator, for reward terms that want a report
        of their own evaluator (``evaluate(plan, evaluator)``)."""
        task, world = self._task, self.world
        return {"task": task, "answer": self._answer,
                "evaluate": lambda plan, evaluator: evaluate(
                    plan if isinstance(plan, ParsedPlan) else parse_plan(plan), task, world, evaluator=evaluator
                ).model_dump(mode="json")}

    def describe_task(self, task: TravelTask) -> dict[str, Any]:
        """The task's fields (its text, cities, dates, budget, constraints, level), without its gold plan
        and its sole-planning notes (up to a megabyte)."""
        return task.model_dump(mode="json", exclude={"annotated_plan", "reference_information"})

    # -- helpers -----------------------------------------------------------------------------
    def _info(self, **fields: Any) -> StepInfo:
        return StepInfo(turn=self.turn, task_id=self._task.id if self._task else None, **fields)


def _load(tasks: Any, root: Path) -> list[TravelTask]:
    if tasks is None:
        tasks = tasks_from_environment() or "train"
    if isinstance(tasks, (list, tuple)) and all(isinstance(t, TravelTask) for t in tasks):
        loaded = list(tasks)
    else:
        loaded = load_tasks(tasks, world_root=root)
    if not loaded:
        raise DataError(f"no tasks in {tasks!r}")
    return loaded


def _read_task(task: Any) -> TravelTask:
    if isinstance(task, TravelTask):
        return task
    if isinstance(task, Mapping):
        return TravelTask.from_row(task, id="custom")
    raise ConfigError("task", task, "a TravelTask or a row of the TravelPlanner dataset")


def _summary(result: ToolResult) -> ToolResult:
    # info carries a bounded preview; the full text is the observation itself.
    return result.model_copy(update={"content": clip(result.content, 500)})


def _final_text(report: Any, gave_up: bool) -> str:
    if gave_up:
        return "You gave up. The episode is over."
    if not report.delivered:
        return f"The plan could not be read ({report.error}). The episode is over."
    verdict = "passes every constraint" if report.final_pass else "fails at least one constraint"
    return f"Plan received; it {verdict}. The episode is over."


def _open_world(database: Any, cache_dir: Any) -> World:
    # Imported here: the synthetic world's generator (and its solver) load only when it is needed.
    from agentgym.envs.travelplanner.synthetic import open_world

    return open_world(database, cache_dir=cache_dir)
