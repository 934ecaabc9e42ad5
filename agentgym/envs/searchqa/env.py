"""SearchQAEnv: answer questions by searching a corpus, Search-R1 style (short form and long form)."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

from agentgym._deprecated import RenamedKeys, alias, module_aliases, renamed_attribute, warn_renamed
from agentgym.core.env import StepResult, TextEnv, require_choice, require_positive_int
from agentgym.core.tasks import TASK_OPTION_RENAMES, pick_task
from agentgym.core.turn_cut import TurnCut
from agentgym.core.parsing import GiveUp
from agentgym.core.tools import ToolBox
from agentgym.core.types import ActionError, ErrorCode, Failure, FailureReason, StepInfo, ToolCall, ToolResult
from agentgym.envs.searchqa._search_r1 import SCORINGS, SearchR1Episode
from agentgym.envs.searchqa._render import (SEARCH_R1_PROMPT, clip, first_observation, render_hits, render_search_r1,
                                            search_r1_question)
from agentgym.envs.searchqa.data import QATask
from agentgym.envs.searchqa.observation import ObservationCutter
from agentgym.envs.searchqa.actions import (ACTION_FORMATS, SEARCH_R1_INVALID, SEARCH_TOOLS, Search, clean_text,
                                             cut_turn, read_action, read_search_r1)
from agentgym.envs.searchqa.retrievers import Retriever
from agentgym.envs.searchqa.scoring import (answer_in_text, exact_match, lexical_longform_score,
                                            substring_match, token_f1)
from agentgym.envs.searchqa.sources import resolve_sources
from agentgym.errors import ConfigError

__all__ = ["SearchQAEnv", "LongFormSearchQAEnv", "METRICS", "STOP_STRINGS", "AnswerJudge"]

METRICS = ("em", "subem", "f1")
"""The answer metrics ``metric=`` chooses among (the evaluator of the short form)."""
_PROTOCOLS = ("agentgym", "search-r1")
STOP_STRINGS = ("</search>", "</answer>")


class _RenamedKwargs(RenamedKeys):
    """``questions=`` is ``tasks=``; ``protocol=`` folds into ``action_format``: ``"search-r1"`` is
    that action format, ``"agentgym"`` keeps the one given."""

    def retired(self, names: Iterable[str]) -> tuple[str, ...]:
        names = set(names)
        return (*super().retired(names), *(("protocol",) if "action_format" in names else ()))

    def apply(self, given: Mapping[str, Any] | None, *, stacklevel: int = 4) -> dict[str, Any]:
        out = super().apply(given, stacklevel=stacklevel + 1)
        if "protocol" not in out:
            return out
        protocol = require_choice("protocol", out.pop("protocol"), _PROTOCOLS)
        warn_renamed("SearchQAEnv kwarg 'protocol'", "'action_format'", stacklevel=stacklevel)
        if protocol == "search-r1":
            if out.get("action_format", "tags") not in ("tags", "search-r1"):
                raise ConfigError("action_format", out["action_format"], "'search-r1' (protocol='search-r1' was given)")
            out["action_format"] = "search-r1"
        return out


_RENAMED_KWARGS = _RenamedKwargs("SearchQAEnv kwarg", {"questions": "tasks"})
alias("SearchQAEnv attribute", "protocol", "action_format")
alias("SearchQAEnv kwarg", "protocol", "action_format")
alias("SearchQAEnv info['extra'] key", "question", "task_text")
AnswerJudge = Callable[[str, str, Sequence[str]], "float | None"]
"""``judge(task_text, answer, gold_answers)``, called positionally: a grade in [0, 1], or None for none."""
_PUBLIC_METADATA = ("answer_type", "type", "data_source")
"""The metadata keys ``describe_task`` shows: short form or long, the question's kind, its dataset."""
_INFO_ANSWER_CHARS = 2000  # info keeps logs small; the model's own text has the whole answer
SEARCH_R1_QUERY_CHARS = 10_000
"""The longest query ``search-r1`` sends (``max_query_chars``): a 500-token turn (Search-R1's
``max_response_length``) rarely holds more, and e5 reads only 256 tokens of a query."""


class SearchQAEnv(TextEnv):
    """Answer a question by searching a passage corpus: Search-R1's tool-integrated QA.

    ## Description
    Each episode is one question. The agent may search a corpus several times, reading the top
    passages of each search, then answers. Without data the env uses the embedded world: a
    generated knowledge base of fictional entities with single-hop, two-hop and comparison
    questions (``agentgym.envs.searchqa.synthetic``), so it runs offline and no model knows the
    answers from pretraining. Real FlashRAG/Search-R1 question files and corpora plug in as they are.

    ## Action formats
    ``action_format="search-r1"`` plays and scores Search-R1's episodes exactly, quirks included
    (docs/searchqa.md lists the rules and the quirks): its prompt (or a Search-R1 row's own);
    the turn cut after the first ``</search>`` (else ``</answer>``), ``<think>`` being plain
    text, and the first case-sensitive ``<search>``/``<answer>`` acted on; no size limit on a
    turn; the query sent to the retriever cut to ``max_query_chars`` (10,000 characters: the one
    difference from Search-R1, which sends it whole); its fixed invalid-action observation; an
    empty answer ends the episode;
    ``max_turns`` turns with searches, then one final turn in which a search is not run;
    passages rendered from the corpus's raw ``contents``; an empty ``<information></information>``
    on no hits; observations cut to ``max_observation_tokens`` tokens of ``tokenizer`` (an
    estimate of them without one); the reward at the end of every episode, ``qa_em`` (or
    ``qa_subem``) on the last ``<answer>`` of prompt plus transcript (``scoring="answer"``: on
    the answer the turn acted on); Search-R1's counters in ``info["extra"]["search_r1"]``.
    ``action_format="tags"`` (default) and ``"json"`` are forgiving of case, spacing and an
    empty answer, with a search budget:

    ``action_format="tags"`` (Search-R1's tags): ``<search>query</search>`` searches and
    ``<answer>text</answer>`` answers; ``<think>`` blocks are allowed and ignored. The first
    complete tag decides the action; a turn with more than one well-formed ``<answer>`` block is an
    invalid action (``multiple_answers``), so a hedge never counts as solved.
    ``action_format="json"``: ``<tool_call>{"name": "search", "arguments": {"query": ...}}</tool_call>``
    with the schema in ``env.unwrapped.tools.schemas()``, and ``<answer>...</answer>``
    (or the ``finish`` tool); ``give_up`` ends the episode.

    ## Tools
    ``search(query)``: the retriever's top ``top_k`` passages. Embedded BM25 by default, or a
    Search-R1 ``/retrieve`` server (``retriever="http://host:8000/retrieve"``).

    ## Observation
    After reset: instructions and the question. After a search: the passages as
    ``Doc n(Title: title) text`` lines, inside ``<information>...</information>`` with the tag
    format. After a bad action: one line saying what was wrong and how to fix it.

    ## Rewards
    0 on every step but the last. On an answer: its exact match (``metric="em"``, default),
    substring match (``"subem"``) or token F1 (``"f1"``) against the gold answers, on the answer
    text only, SQuAD-normalized. ``info["report"]`` has all three and whether a gold answer
    appeared in any retrieved passage. ``reward=`` (a preset such as ``prs/short`` or a spec)
    replaces this with a shaped reward, breakdown in ``info["reward"]`` (see the rewards docs).

    ## Episode end
    Terminated on an answer (or ``give_up``); truncated after ``max_turns`` actions (reward 0;
    with ``search-r1``, Search-R1's reward of the transcript).

    ## Info
    ``StepInfo.to_info()``: ``action`` (``tool``, ``answer``, ``give_up``, ``invalid``), the
    search as ``tool_call`` and ``tool_result`` (rows = passages), ``error.code``
    (``empty_action``, ``unparseable_action``, ``invalid_argument`` for an empty or too long
    query, ``search_limit``, ``retriever_failed``, ``multiple_answers``, ``action_too_long``,
    ``unknown_tool``...), and
    in ``extra``: ``query``, ``passage_ids``, ``scores``, ``searches_used``, ``answer``,
    ``answer_blocks``, ``parse_notes``, ``retriever_error``, ``query_cut_from`` (``search-r1``: the
    length of a query cut to ``max_query_chars``).

    ## Arguments
    * ``tasks``: a FlashRAG/Search-R1 question file (jsonl, json, parquet), rows, ``QATask``
      objects, or a split of the embedded world (``train``, ``validation``, ``test``); None for
      ``$AGENTGYM_SEARCHQA_TASKS`` or else the embedded ``train`` split.
    * ``corpus``: a passage file (``id`` + ``contents`` or ``id`` + ``title`` + ``text``) or rows,
      indexed with BM25 on first use; None for ``$AGENTGYM_SEARCHQA_CORPUS`` or the embedded world.
    * ``retriever``: a ``Retriever``, or a ``/retrieve`` URL (``$AGENTGYM_SEARCHQA_RETRIEVER``);
      replaces the corpus's BM25 index.
    * ``action_format``: ``tags`` (default), ``json`` or ``search-r1``. ``metric``: ``em``, ``subem``
      or ``f1``. ``protocol="search-r1"`` (deprecated) is ``action_format="search-r1"``.
    * ``tokenizer``: a Hugging Face tokenizer
      (or its name or local path) for Search-R1's token cut of observations;
      ``max_observation_tokens`` (500, Search-R1's ``max_obs_length``). ``scoring`` (``search-r1``
      only): ``transcript`` (Search-R1's; the default of ``SearchQA-v0``) or ``answer`` (the
      default of the long form, which Search-R1 does not score).
    * ``reward``: a reward preset name or spec (None: the ``metric`` is the reward).
    * ``top_k`` (3), ``max_searches`` (4), ``max_turns`` (10; 4 with ``search-r1``, whose meaning differs:
      see Action formats), ``passage_chars`` (1000, per passage text), ``max_query_chars`` (1000, per
      search string, a longer one refused; with ``search-r1`` 10,000, a longer one cut to it before
      it is sent), ``max_action_chars`` (1,000,000; none with ``search-r1``
      unless given).
    * ``synthetic_size`` (``small``, ``default``, ``large`` or an int of passages) and
      ``synthetic_seed`` (0): the embedded world. ``index_dir``, ``cache_dir``: where the BM25
      index and the generated world are kept (the index defaults to the cache, never the data
      folder). ``bm25``: ``bm25s`` (k1 1.5, b 0.75) or ``pyserini`` (k1 0.9, b 0.4).
      ``prompt_template``: replaces the instructions;
      ``{question}``, ``{top_k}``, ``{max_searches}`` and ``{tools}`` are filled in.
      ``render_mode``: ``ansi``.

    ## Reset options
    ``{"task_index": i}``, ``{"task_id": "train-3"}`` or ``{"task": row_or_QATask}``;
    otherwise the task is drawn with the env's seeded generator.

    ## Version history
    * v0: first release.
    """

    long_form: ClassVar[bool] = False
    turn_cut: TurnCut = TurnCut(STOP_STRINGS)
    """Where a generated turn ends (the tag format's closing tags; each instance sets its own:
    ``search-r1`` stops at ``</search>`` only and cuts as Search-R1 does)."""
    client_kwargs: ClassVar[tuple[str, ...]] = ("action_format", "metric", "bm25", "top_k", "max_searches",
                                                "max_observation_tokens", "tasks")
    task_splits: ClassVar[tuple[str, ...]] = ("train", "validation", "test")
    reward_provides: ClassVar[frozenset[str]] = frozenset({"task_text", "gold_answers"})
    reward_lab: ClassVar[str] = "agentgym.envs.searchqa.lab"
    renamed_kwargs: ClassVar[RenamedKeys] = _RENAMED_KWARGS
    renamed_options: ClassVar[RenamedKeys] = TASK_OPTION_RENAMES

    def __init__(self, *, tasks: Any = None, corpus: Any = None, retriever: Retriever | str | None = None,
                 action_format: str = "tags", metric: str = "em", top_k: int = 3, max_searches: int = 4,
                 max_turns: int | None = None, passage_chars: int = 1000, max_query_chars: int | None = None,
                 max_action_chars: int | None = None, tokenizer: Any = None, max_observation_tokens: int = 500,
                 scoring: str | None = None,
                 synthetic_size: str | int = "default", synthetic_seed: int = 0, bm25: str = "bm25s",
                 index_dir: str | os.PathLike[str] | None = None, cache_dir: str | os.PathLike[str] | None = None,
                 prompt_template: str | None = None, render_mode: str | None = None) -> None:
        require_choice("action_format", action_format, ACTION_FORMATS)
        search_r1 = action_format == "search-r1"
        if max_turns is None:  # Search-R1's training scripts run max_turns=4
            max_turns = 4 if search_r1 else 10
        require_positive_int("max_turns", max_turns)
        if max_action_chars is None:  # Search-R1 reads a turn of any length (in one linear pass)
            max_action_chars = sys.maxsize if search_r1 else 1_000_000
        if max_query_chars is None:  # search-r1 cuts instead of refusing: an 8 MB query costs seconds of BM25
            max_query_chars = SEARCH_R1_QUERY_CHARS if search_r1 else 1000
        # Search-R1's max_turns=N: N turns that act, then a final turn in which a search is not run.
        super().__init__(max_turns=max_turns + 1 if search_r1 else max_turns,
                         max_action_chars=max_action_chars, render_mode=render_mode)
        if scoring is None:  # Search-R1 scores short answers only; long form scores the answer given
            scoring = "transcript" if search_r1 and not self.long_form else "answer"
        require_choice("scoring", scoring, SCORINGS if search_r1 else ("answer",))
        self.scoring = scoring
        if search_r1:  # Search-R1 generates to the end of the turn and keeps it up to its first </search>,
            # else its first </answer>; tags inside <think> count (a later </answer> may still be scored)
            self.turn_cut = TurnCut(("</search>",), priority=("</search>", "</answer>"), in_thoughts=True)
        else:
            self.turn_cut = TurnCut(("</search>", "</answer>") if action_format == "tags" else
                                    ("</tool_call>", "</answer>"))
        require_choice("metric", metric, METRICS)
        for name, value in (("top_k", top_k), ("max_searches", max_searches), ("passage_chars", passage_chars),
                            ("max_query_chars", max_query_chars), ("max_observation_tokens", max_observation_tokens)):
            require_positive_int(name, value)
        if prompt_template is not None and not isinstance(prompt_template, str):
            raise ConfigError("prompt_template", prompt_template, "a str or None")
        self.action_format, self.metric = action_format, metric
        self.search_turns = max_turns
        """Turns in which a search runs (``max_turns`` as given); ``self.max_turns`` counts every turn."""
        self.top_k, self.max_searches = top_k, max_searches
        self._cut = ObservationCutter(tokenizer, max_observation_tokens)
        self.passage_chars, self.max_query_chars = passage_chars, max_query_chars
        self.prompt_template = prompt_template
        self.tasks, self.retriever = resolve_sources(
            tasks, corpus, retriever, long_form=self.long_form, synthetic_size=synthetic_size,
            synthetic_seed=synthetic_seed, index_dir=index_dir, cache_dir=cache_dir, bm25=bm25)
        self._ids = {t.id: i for i, t in enumerate(self.tasks)}
        self._task: QATask | None = None
        self._reset_episode()

    @property
    def tools(self) -> ToolBox:
        """The search tool; ``tools.schemas()`` for function calling."""
        return SEARCH_TOOLS

    @property
    def task(self) -> QATask | None:
        """The current episode's task (the question and its gold answers)."""
        return self._task

    question = renamed_attribute("SearchQAEnv", "question", "task")

    questions = renamed_attribute("SearchQAEnv", "questions", "tasks")

    # -- episode -----------------------------------------------------------------------------
    def _reset_episode(self) -> None:
        self._answer: str | None = None
        self._searches = 0
        self._retrieval_hit = False
        self._seen_ids: list[str] = []
        self._r1 = SearchR1Episode("")
        self._failure: Failure | None = None  # what failed outside the model in this step (``_info`` takes it)

    def on_reset(self, options: dict[str, Any]) -> tuple[str, StepInfo]:
        self._task = pick_task(options, self.tasks, self._ids, self.np_random, _read_task)
        self._reset_episode()
        if self.search_r1:
            text = _prompt_of(options.get("task"))  # a Search-R1 row's own prompt, as the model reads it
            if text is None and self.prompt_template is not None:
                text = first_observation(self._task.text, action_format="tags", top_k=self.top_k,
                                         max_searches=self.max_searches, long_form=self.long_form,
                                         template=self.prompt_template)
            if text is None:
                text = SEARCH_R1_PROMPT.format(question=search_r1_question(self._task.text))
            self._r1 = SearchR1Episode(text)
            return text, StepInfo(turn=0, task_id=self._task.id, extra=self._reset_extra())
        text = first_observation(self._task.text, action_format=self.action_format, top_k=self.top_k,
                                 max_searches=self.max_searches, long_form=self.long_form,
                                 template=self.prompt_template)
        return text, StepInfo(turn=0, task_id=self._task.id, extra=self._reset_extra())

    @property
    def search_r1(self) -> bool:
        """Whether the env plays Search-R1's episodes exactly (``action_format="search-r1"``)."""
        return self.action_format == "search-r1"

    @property
    def protocol(self) -> str:
        """Deprecated: ``action_format`` (``"search-r1"``, or ``"agentgym"`` for the others)."""
        warn_renamed("SearchQAEnv.protocol", "SearchQAEnv.action_format")
        return "search-r1" if self.search_r1 else "agentgym"

    def on_step(self, action: str) -> tuple[str, float, bool, StepInfo]:
        if self.search_r1:
            return self._act_search_r1(action)
        text, reward, terminated, info = self._act_turn(action)
        if not terminated and self.turn >= self.max_turns and info.report is None:
            # The episode ends unanswered: report it as a wrong answer, so per-dataset EM counts it.
            info = info.model_copy(update={"report": self._unanswered()})
        return text, reward, terminated, info

    def _unanswered(self) -> dict[str, Any]:
        report: dict[str, Any] = {"answer": None, "score": 0.0}
        if not self.long_form:
            report.update(golden_answers=list(self._task.golden_answers), em=0.0, subem=0.0, f1=0.0,
                          retrieval_hit=self._retrieval_hit, reward_metric=self.metric)
        if self._task.data_source is not None:
            report["data_source"] = self._task.data_source
        return report

    def _act_turn(self, action: str) -> tuple[str, float, bool, StepInfo]:
        if len(action) > self.action_space.max_length:
            return self.on_invalid_action(ActionError(code=ErrorCode.ACTION_TOO_LONG, message=(
                f"Your reply has {len(action)} characters; the limit is {self.action_space.max_length}.")))
        reading = read_action(action, self.action_format)
        extra: dict[str, Any] = {"parse_notes": list(reading.notes)} if reading.notes else {}
        parsed = reading.action
        if isinstance(parsed, ActionError):
            return self.on_invalid_action(parsed, extra)
        if isinstance(parsed, Search):
            return self._search(clean_text(parsed.query), extra)
        extra["answer_blocks"] = reading.answer_blocks
        if isinstance(parsed, GiveUp):
            return self._finish(None, extra)
        return self._finish(clean_text(parsed.text), extra)

    def _act_search_r1(self, action: str) -> tuple[str, float, bool, StepInfo]:
        # Search-R1's loop: no size limit (one linear pass), think blocks are plain text.
        turn = cut_turn(action)
        search_phase = self.turn <= self.search_turns
        kind, (text, _, terminated, info) = self._search_r1_turn(read_search_r1(turn).action, search_phase)
        self._r1.record(turn, text, action=kind, search_phase=search_phase)
        update: dict[str, Any] = {"extra": {**info.extra, "search_r1": self._r1.counters()}}
        if not (terminated or self.turn >= self.max_turns):
            return self.transition(text, info=info.model_copy(update=update))
        update["report"] = self._search_r1_evaluation()  # Search-R1 scores every episode, answered or not
        if self._failure is not None:  # the judge failed while scoring
            update["failure"], self._failure = self._failure, None
        # the final turn is scored too, and ends by max_turns unless it answered
        return StepResult(text, float(update["report"]["score"]), terminated, info.model_copy(update=update))

    def _search_r1_turn(self, parsed: Any, search_phase: bool) -> tuple[str, StepResult]:
        """What the turn does (``search``, ``answer`` or ``invalid``) and its step."""
        if isinstance(parsed, ActionError):
            text = self._cut(SEARCH_R1_INVALID) if search_phase else ""  # the final turn appends nothing
            return "invalid", self.transition(text, info=self._info(action="invalid", error=parsed))
        if isinstance(parsed, Search) and not search_phase:  # the final turn: the search is not run
            error = ActionError(code=ErrorCode.SEARCH_LIMIT, message="The final turn's search is not run.")
            return "search", self.transition("", info=self._info(action="tool", error=error,
                                                                 extra={"query": clip(parsed.query, 300)}))
        if isinstance(parsed, Search):  # the query as Search-R1 sends it, up to max_query_chars
            cut = {"query_cut_from": len(parsed.query)} if len(parsed.query) > self.max_query_chars else {}
            return "search", self._search(parsed.query[:self.max_query_chars], cut)
        self._answer = parsed.text
        extra = {"answer": clip(parsed.text, _INFO_ANSWER_CHARS), "answer_blocks": 1}
        return "answer", self.termination("", info=self._info(action="answer", terminated_reason="answer",
                                                              answer=parsed.text, extra=extra))

    def _search_r1_evaluation(self) -> dict[str, Any]:
        """Search-R1's reward at the end of every episode, answered or not: ``qa_em`` on the
        transcript's last ``<answer>`` (``scoring="transcript"``), or on the acted answer."""
        scored = self._r1.scored_answer() if self.scoring == "transcript" else self._answer
        if scored is None:
            report = self._unanswered()
        else:
            report = self.evaluate(scored)
        report.update(answer=None if self._answer is None else clip(self._answer, _INFO_ANSWER_CHARS),
                      scored_answer=None if scored is None else clip(scored, _INFO_ANSWER_CHARS),
                      scoring=self.scoring, searches=self._searches,
                      passage_ids_seen=list(dict.fromkeys(self._seen_ids)))
        return report

    def on_invalid_action(self, error: ActionError, extra: dict[str, Any] | None = None,
                 call: ToolCall | None = None) -> tuple[str, float, bool, StepInfo]:
        return self.transition(error.message, info=self._info(action="invalid", error=error, tool_call=call,
                                                              extra=extra or {}))

    def _search(self, query: str, extra: dict[str, Any]) -> tuple[str, float, bool, StepInfo]:
        call = ToolCall(name="search", arguments={"query": clip(query, 300)})
        extra["query"] = clip(query, 300)
        problem = None if self.search_r1 else self._query_problem(query)
        if problem is not None:
            return self.on_invalid_action(problem, extra, call)
        try:
            hits = self.retriever.search(query, self.top_k)
        except Exception as exc:  # any retriever failure is an observation, never a crash of the rollout
            message = f"The search failed ({clip(str(exc) or type(exc).__name__, 200)}). Search again or answer."
            extra["retriever_error"] = f"{type(exc).__name__}: {clip(str(exc), 300)}"
            self._failure = Failure(reason=FailureReason.RETRIEVER_UNREACHABLE, message=extra["retriever_error"])
            error = ActionError(code=ErrorCode.RETRIEVER_FAILED, message=message)
            text = message if self.action_format == "json" else f"\n\n<information>{message}</information>\n\n"
            return self.transition(text, info=self._info(action="tool", tool_call=call, error=error, extra=extra,
                                                         tool_result=ToolResult(content=message, error=error.code)))
        self._searches += 1
        if self.search_r1:
            text = self._cut(render_search_r1(hits))
        else:
            text = render_hits(hits, action_format=self.action_format, passage_chars=self.passage_chars)
        self._note_retrieval(hits)
        extra.update(passage_ids=[h.id for h in hits], scores=[_finite(h.score) for h in hits],
                     searches_used=self._searches)
        result = ToolResult(content=clip(text, 500), n_rows=len(hits))
        return self.transition(text, info=self._info(action="tool", tool_call=call, tool_result=result, extra=extra))

    def _query_problem(self, query: str) -> ActionError | None:
        if not query:
            return ActionError(code=ErrorCode.INVALID_ARGUMENT, message=(
                "The search query is empty. Search with a few keywords, e.g. capital of France."))
        if len(query) > self.max_query_chars:
            return ActionError(code=ErrorCode.INVALID_ARGUMENT, message=(
                f"The search query has {len(query)} characters; the limit is {self.max_query_chars}. "
                "Search with a few keywords."))
        if self._searches >= self.max_searches:
            return ActionError(code=ErrorCode.SEARCH_LIMIT, message=(
                f"You have used all {self.max_searches} searches. Give your answer between <answer> and </answer>."))
        return None

    def _note_retrieval(self, hits: list) -> None:
        self._seen_ids.extend(h.id for h in hits)
        if not self.long_form and not self._retrieval_hit:
            golden = self._task.golden_answers
            self._retrieval_hit = any(answer_in_text(golden, f"{h.title} {h.text}") for h in hits)

    def _finish(self, answer: str | None, extra: dict[str, Any]) -> tuple[str, float, bool, StepInfo]:
        if answer == "":
            return self.on_invalid_action(ActionError(code=ErrorCode.INVALID_ARGUMENT, message=(
                "The answer is empty. Write it between <answer> and </answer>.")), extra)
        self._answer = answer
        evaluation = self.evaluate(answer) if answer is not None else self._unanswered()
        evaluation.update(searches=self._searches, passage_ids_seen=list(dict.fromkeys(self._seen_ids)))
        reward = float(evaluation["score"])
        kind = "answer" if answer is not None else "give_up"
        extra["answer"] = None if answer is None else clip(answer, _INFO_ANSWER_CHARS)
        text = "Answer received. The episode is over." if answer is not None else "You gave up. The episode is over."
        return self.termination(text, reward, info=self._info(action=kind, terminated_reason=kind, report=evaluation,
                                                              answer=answer, extra=extra))

    def evaluate(self, answer: str) -> dict[str, Any]:
        """The terminal report; ``score`` is the reward. Override to reshape the terminal signal."""
        golden = self._task.golden_answers
        f1 = token_f1(answer, golden)
        report = {"answer": clip(answer, _INFO_ANSWER_CHARS), "golden_answers": list(golden),
                  "em": exact_match(answer, golden),
                  "subem": substring_match(answer, golden, skip_empty_golds=not self.search_r1),
                  "f1": f1.f1, "precision": f1.precision,
                  "recall": f1.recall, "retrieval_hit": self._retrieval_hit, "reward_metric": self.metric}
        report["score"] = report[self.metric]
        if self._task.data_source is not None:
            report["data_source"] = self._task.data_source
        return report

    def reward_context(self) -> dict[str, Any]:
        """The question, its reference answers and the submitted answer, for the reward terms.

        The unshaped outcome is exact match (short form) on the submitted answer."""
        task = self._task
        context: dict[str, Any] = {"task": task, "task_text": task.text,
                                   "gold_answers": list(task.golden_answers), "answer": self._answer}
        if not self.long_form:
            scored = self._r1.scored_answer() if self.scoring == "transcript" else self._answer
            context["outcome"] = 0.0 if scored is None else exact_match(scored, task.golden_answers)
        return context

    def describe_task(self, task: QATask) -> dict[str, Any]:
        """The task's id and text, and its kind from its metadata: never its gold answers, nor the rest
        of its metadata (supporting passage ids point at them)."""
        kind = {key: task.metadata[key] for key in _PUBLIC_METADATA if key in task.metadata}
        return {"id": task.id, "text": task.text, **kind}

    # -- helpers -----------------------------------------------------------------------------
    def _reset_extra(self) -> dict[str, Any]:
        """The reset's ``info["extra"]``: the task's text (0.1's key ``question`` kept beside it until 0.3)."""
        return {"task_text": self._task.text, "question": self._task.text}

    def _info(self, **fields: Any) -> StepInfo:
        failure, self._failure = self._failure, None
        return StepInfo(turn=self.turn, task_id=self._task.id if self._task else None, failure=failure, **fields)


class LongFormSearchQAEnv(SearchQAEnv):
    """Long-form search QA: answers of a few sentences, scored against reference answers.

    Everything is as in ``SearchQAEnv`` except the scoring and the default questions (the embedded
    world's long-form ``profile`` questions). The terminal reward is ``judge(task_text, answer,
    gold_answers)`` when a judge is given and returns a number; otherwise (no judge, or it returned
    None or raised) the deterministic lexical fallback: the best ROUGE-L F1 of the answer against a
    gold answer, over SQuAD-normalized tokens (``scoring.lexical_longform_score``).
    ``info["report"]["scorer"]`` says which one scored. The reward shaper plugs an LLM judge in
    through ``judge``; scale its output to [0, 1] to keep rewards comparable with the fallback.
    """

    long_form: ClassVar[bool] = True

    def __init__(self, *, judge: AnswerJudge | None = None, **kwargs: Any) -> None:
        if judge is not None and not callable(judge):
            raise ConfigError("judge", judge, "a callable (task_text, answer, gold_answers) -> float | None")
        super().__init__(**kwargs)
        self.judge = judge

    def evaluate(self, answer: str) -> dict[str, Any]:
        task_text, references = self._task.text, list(self._task.golden_answers)
        report: dict[str, Any] = {"answer": clip(answer, _INFO_ANSWER_CHARS), "references": references,
                                  "rouge_l": lexical_longform_score(task_text, answer, references)}
        score, scorer = None, "lexical"
        if self.judge is not None:
            try:
                score = _finite(self.judge(task_text, answer, references))
                scorer = "judge" if score is not None else "lexical"
            except Exception as exc:  # a failed judge call falls back, and says so
                report["judge_error"] = f"{type(exc).__name__}: {clip(str(exc), 300)}"
            if score is None:  # no grade: the lexical score stands in, and the episode says the judge failed
                self._failure = Failure(reason=FailureReason.JUDGE_UNREACHABLE,
                                        message=report.get("judge_error", "the judge gave no grade"))
        report.update(score=report["rouge_l"] if score is None else score, scorer=scorer)
        return report


def _read_task(task: Any) -> QATask:
    if isinstance(task, QATask):
        return task
    if isinstance(task, Mapping):
        return QATask.from_row(task, "custom")
    raise ConfigError("task", task, "a QATask or a row with 'question' and 'golden_answers'")


def _prompt_of(task: Any) -> str | None:
    """The text of a row's own chat prompt (its messages' contents), when the reset option has one."""
    prompt = task.get("prompt") if isinstance(task, Mapping) else None
    if not prompt or isinstance(prompt, (str, bytes)):
        return None
    texts = [str(m.get("content", "")) for m in prompt if isinstance(m, Mapping)]
    return "\n".join(texts) if texts else None


def _finite(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


__getattr__ = module_aliases(__name__, {"PROTOCOLS": "_PROTOCOLS", "REWARDS": "METRICS"})
