"""TravelPlannerEnv: plan a multi-day trip with the TravelPlanner tools (Xie et al., ICML 2024)."""

from __future__ import annotations

import os
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from agentgym.core.env import TextEnv, require_choice
from agentgym.core.parsing import FORMATS, Answer, Call, GiveUp, parse_action
from agentgym.core.tools import Tool, ToolBox
from agentgym.core.types import ActionError, ErrorCode, StepInfo, ToolCall, ToolResult
from agentgym.envs.travelplanner._prompts import first_observation
from agentgym.envs.travelplanner.evaluation import EVALUATIONS, evaluate
from agentgym.envs.travelplanner.plan import ParsedPlan, parse_plan
from agentgym.envs.travelplanner.queries import QUERIES_ENV_VAR, TravelQuery, load_queries
from agentgym.envs.travelplanner.reference import reference_information
from agentgym.envs.travelplanner.tools import Notebook, search_tools
from agentgym.envs.travelplanner.world import World
from agentgym.errors import ConfigError, DataError

__all__ = ["TravelPlannerEnv", "MODES"]

MODES = ("tool-use", "sole-planning")
_SEARCHES: weakref.WeakKeyDictionary[World, tuple[Tool, ...]] = weakref.WeakKeyDictionary()


def tools_for(world: World, notebook: Notebook | None = None) -> ToolBox:
    """The world's tools, NotebookWrite writing to ``notebook`` (a new one when None). The searches
    are shared by every env on that world, so their result caches are."""
    searches = _SEARCHES.get(world)
    if searches is None:
        searches = _SEARCHES[world] = search_tools(world)
    return ToolBox([*searches, (Notebook() if notebook is None else notebook).tool])


class TravelPlannerEnv(TextEnv):
    """Plan a multi-day trip that satisfies a traveller's query, using a sandbox travel database.

    ## Description
    Each episode is one TravelPlanner query: an origin, a destination city (3-day trips) or
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
    Text: the instructions and query after ``reset``; the tool's result, or a one-line error
    saying what was wrong and how to fix it, after ``step``.

    ## Rewards
    0 on every step but the last; on submission, 1.0 if the plan passes every constraint
    (final pass) under the ``evaluation`` evaluator, else 0.0. Override ``terminal_reward`` for another
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
    * ``queries``: a split name of the world (``train``, ``validation``, ``test``), a query
      file (jsonl, json, csv, parquet), ``hf:SPLIT``, or a list of rows; None for
      ``$AGENTGYM_TRAVELPLANNER_QUERIES`` or else ``train``.
    * ``mode``: ``tool-use`` (default) or ``sole-planning``.
    * ``action_format``: ``react`` (default) or ``json``.
    * ``evaluation``: ``strict`` (default; no loopholes, for training) or ``official``
      (the official evaluator's verdicts, for leaderboard-comparable numbers).
    * ``reward``: None (the final-pass reward above), or a reward preset name or spec.
    * ``max_turns``, ``max_action_chars``, ``cache_dir``, ``render_mode`` (``ansi``).

    ## Reset options
    ``{"query_index": i}``, ``{"query_id": "train-3"}`` or ``{"query": row_or_TravelQuery}``;
    otherwise the query is drawn with the env's seeded generator. ``{"training_step": n}`` (and
    optionally ``"total_steps"``) sets the training step for scheduled rewards.

    ## Version history
    * v0: first release.
    """

    reward_provides: ClassVar[frozenset[str]] = frozenset({"travelplanner"})

    def __init__(
        self,
        *,
        database: str | os.PathLike[str] | World | None = None,
        queries: str | os.PathLike[str] | Sequence[Mapping[str, Any] | TravelQuery] | None = None,
        mode: str = "tool-use",
        action_format: str = "react",
        evaluation: str = "strict",
        max_turns: int = 30,
        max_action_chars: int = 1_000_000,
        cache_dir: str | os.PathLike[str] | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(max_turns=max_turns, max_action_chars=max_action_chars, render_mode=render_mode)
        require_choice("mode", mode, MODES)
        require_choice("action_format", action_format, FORMATS)
        require_choice("evaluation", evaluation, EVALUATIONS)
        self.mode, self.action_format, self.evaluation = mode, action_format, evaluation
        # json actions end at a closing tag; react's Finish[<plan JSON>] nests brackets, so no string is safe.
        self.stop_strings = ("</tool_call>", "</answer>") if action_format == "json" else ()
        self.world = database if isinstance(database, World) else _open_world(database, cache_dir)
        self.queries = _load(queries, self.world.root)
        self._index = {q.id: i for i, q in enumerate(self.queries)}
        self._query: TravelQuery | None = None
        self._notebook = Notebook()
        self._answer: str | None = None

    @property
    def tools(self) -> ToolBox:
        """The tools this mode offers (none in sole-planning); ``tools.schemas()`` for function calling."""
        # Built on each use rather than stored, so the env keeps pickling (the caches do not).
        return tools_for(self.world, self._notebook) if self.mode == "tool-use" else ToolBox([])

    @property
    def query(self) -> TravelQuery | None:
        """The current episode's query."""
        return self._query

    # -- episode -----------------------------------------------------------------------------
    def _start(self, options: dict[str, Any]) -> tuple[str, StepInfo]:
        self._query = self._pick(options)
        self._notebook = Notebook()
        self._answer = None
        reference = None
        if self.mode == "sole-planning":
            reference = list(self._query.reference_information or ()) or reference_information(
                self._query, self.world, tools_for(self.world))
        text = first_observation(self._query, self.tools, self.action_format, reference)
        return text, StepInfo(turn=0, task_id=self._query.id)

    def _act(self, action: str) -> tuple[str, float, bool, StepInfo]:
        # Actions over max_action_chars never get here (TextEnv.step answers them).
        parsed = parse_action(action, self.tools, self.action_format)
        if isinstance(parsed, ActionError):
            return self._invalid(parsed)
        if isinstance(parsed, Call):
            return self._call(parsed)
        return self._finish(parsed)

    def _invalid(self, error: ActionError) -> tuple[str, float, bool, StepInfo]:
        return error.message, 0.0, False, self._info(action="invalid", error=error)

    def _call(self, call: Call) -> tuple[str, float, bool, StepInfo]:
        tool = call.tool
        result = tool.run(*call.arguments.values())
        self._notebook.remember(tool, result)
        error = None if result.ok else ActionError(code=result.error, message=_clip(result.content))
        info = self._info(action="tool", tool_call=ToolCall(name=tool.action, arguments=call.arguments),
                          tool_result=_summary(result), error=error)
        return result.content, 0.0, False, info

    def _finish(self, parsed: Answer | GiveUp) -> tuple[str, float, bool, StepInfo]:
        gave_up = isinstance(parsed, GiveUp)
        self._answer = None if gave_up else parsed.text
        # The model's text is read leniently (fences, <answer>, literals) by either evaluator.
        plan = None if gave_up else parse_plan(parsed.text)
        report = evaluate(plan, self._query, self.world, evaluation=self.evaluation)
        reward = self.terminal_reward(report)
        error = None
        if not gave_up and not report.delivered:
            error = ActionError(code=ErrorCode.INVALID_PLAN, message=f"The plan could not be read: {report.error}")
        text = _final_text(report, gave_up)
        info = self._info(action="give_up" if gave_up else "answer", error=error, answer=self._answer,
                          terminated_reason="give_up" if gave_up else "answer",
                          report=report.model_dump(mode="json"))
        return text, reward, True, info

    def terminal_reward(self, report: Any) -> float:
        """The reward for a submitted plan: 1.0 on final pass, else 0.0. Override to reshape."""
        return 1.0 if report.final_pass else 0.0

    def reward_context(self) -> dict[str, Any]:
        """The query, the submitted plan text, and an evaluator for the reward terms' evaluations."""
        query, world = self._query, self.world
        return {"task": query, "answer": self._answer,
                "evaluate": lambda plan, evaluation: evaluate(
                    plan if isinstance(plan, ParsedPlan) else parse_plan(plan), query, world, evaluation=evaluation
                ).model_dump(mode="json")}

    # -- helpers -----------------------------------------------------------------------------
    def _info(self, **fields: Any) -> StepInfo:
        return StepInfo(turn=self.turn, task_id=self._query.id if self._query else None, **fields)

    def _pick(self, options: dict[str, Any]) -> TravelQuery:
        unknown = set(options) - {"query_index", "query_id", "query"}
        if unknown:
            raise ConfigError("options", sorted(unknown), ["query_index", "query_id", "query"])
        if "query" in options:
            q = options["query"]
            return q if isinstance(q, TravelQuery) else TravelQuery.from_row(q, id="custom")
        if "query_id" in options:
            if options["query_id"] not in self._index:
                raise ConfigError("query_id", options["query_id"], f"an id of the loaded queries, e.g. {self.queries[0].id!r}")
            return self.queries[self._index[options["query_id"]]]
        if "query_index" in options:
            i = options["query_index"]
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self.queries):
                raise ConfigError("query_index", i, f"an int in [0, {len(self.queries) - 1}]")
            return self.queries[i]
        return self.queries[int(self.np_random.integers(len(self.queries)))]


def _load(queries: Any, root: Path) -> list[TravelQuery]:
    if queries is None:
        queries = os.environ.get(QUERIES_ENV_VAR) or "train"
    if isinstance(queries, (list, tuple)) and all(isinstance(q, TravelQuery) for q in queries):
        loaded = list(queries)
    else:
        loaded = load_queries(queries, world_root=root)
    if not loaded:
        raise DataError(f"no queries in {queries!r}")
    return loaded


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + " ..."


def _summary(result: ToolResult) -> ToolResult:
    # info carries a bounded preview; the full text is the observation itself.
    return result.model_copy(update={"content": _clip(result.content, 500)})


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
