"""The TravelPlanner evaluator: 8 commonsense and 5 hard constraints, official metrics.

``evaluate(plan, task, world, evaluator=...)`` checks one plan and never raises on the plan:

* ``evaluator="official"`` reproduces the official evaluator's verdicts, quirks included. Where the
  official code would raise and abort the whole run, the check that raised fails with an
  ``evaluation_error: ...`` reason (and ``report.error`` says so); the other checks still run.
* ``evaluator="strict"`` closes the loopholes (exact names, stay days checked, last attraction
  counted, unknown modes rejected, ...). See ``docs/travelplanner-evaluation.md`` for the table.

Hard constraints run only when the plan was delivered and ``is_not_absent`` and
``is_valid_information_in_sandbox`` both passed, as upstream; otherwise ``report.hard`` is None.

``aggregate(reports, tasks)`` gives the six official metrics with the official denominators,
plus breakdowns by level and by trip length.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from agentgym._deprecated import alias, module_aliases, renamed_attribute, renamed_kwargs, warn_renamed
from agentgym._memo import Memo
from agentgym._toolbox import require_choice
from agentgym.envs.travelplanner.evaluation import _commonsense, _hard, _strict, _strict_hard
from agentgym.envs.travelplanner.world.index import index_for
from agentgym.envs.travelplanner.evaluation._strict_plan import read_plan
from agentgym.envs.travelplanner.plan import ParsedPlan, Plan, parse_plan
from agentgym.envs.travelplanner.tasks import TravelTask
from agentgym.envs.travelplanner.world import World
from agentgym.errors import ConfigError

__all__ = [
    "evaluate", "official_plan", "aggregate", "Verdict", "EvaluationReport", "MetricSet", "Metrics",
    "COMMONSENSE", "HARD", "EVALUATORS", "OFFICIAL_METRIC_NAMES", "hard_denominator",
]

EVALUATORS = ("official", "strict")
"""The evaluators: ``official`` (the leaderboard's verdicts, quirks included) and ``strict``."""
COMMONSENSE = tuple(_commonsense.CHECKS)
HARD = tuple(_hard.CHECKS)
ERROR_PREFIX = "evaluation_error"
OFFICIAL_METRIC_NAMES = {
    "delivery_rate": "Delivery Rate",
    "commonsense_micro": "Commonsense Constraint Micro Pass Rate",
    "commonsense_macro": "Commonsense Constraint Macro Pass Rate",
    "hard_micro": "Hard Constraint Micro Pass Rate",
    "hard_macro": "Hard Constraint Macro Pass Rate",
    "final_pass_rate": "Final Pass Rate",
}


class Verdict(BaseModel):
    """One constraint's outcome: True (pass), False (fail) or None (not applicable)."""

    model_config = ConfigDict(frozen=True)

    passed: bool | None
    reason: str


class EvaluationReport(BaseModel):
    """Everything ``evaluate`` found about one plan."""

    model_config = ConfigDict(frozen=True)

    evaluator: Literal["official", "strict"] = Field(validation_alias=AliasChoices("evaluator", "evaluation", "mode"))
    """The evaluator that wrote the report (dumps from 0.1.0 named it ``mode``, from 0.1.x
    ``evaluation``; they still load)."""
    delivered: bool
    commonsense: dict[str, Verdict]
    hard: dict[str, Verdict] | None
    """None when the hard constraints were gated off (not delivered, incomplete or outside the sandbox)."""
    commonsense_pass: bool
    hard_pass: bool
    final_pass: bool
    commonsense_passed: int
    hard_passed: int
    hard_applicable: int
    """Hard constraints the query carries: the budget plus each local constraint it sets."""
    commonsense_micro: float
    """commonsense_passed / 8."""
    hard_micro: float
    """hard_passed / hard_applicable (0 when the hard box was gated off)."""
    error: str | None = None
    """Why the plan was not delivered, or which check hit an input the official code cannot read."""

    evaluation = renamed_attribute("EvaluationReport", "evaluation", "evaluator")

    def to_official(self) -> dict[str, Any]:
        """``{delivered, commonsense: {name: bool|None}, hard: {name: bool|None} | None, final_pass, error}``."""
        return {
            "delivered": self.delivered,
            "commonsense": {k: v.passed for k, v in self.commonsense.items()},
            "hard": None if self.hard is None else {k: v.passed for k, v in self.hard.items()},
            "final_pass": self.final_pass,
            "error": self.error,
        }

    def failures(self) -> dict[str, str]:
        """``{constraint: reason}`` for every failed constraint."""
        out = {k: v.reason for k, v in self.commonsense.items() if v.passed is False}
        out.update({k: v.reason for k, v in (self.hard or {}).items() if v.passed is False})
        return out


@renamed_kwargs({"evaluation": "evaluator", "query": "task"})
def evaluate(plan: Any, task: TravelTask | Mapping[str, Any], world: World, *,
             evaluator: str = "official") -> EvaluationReport:
    """Check ``plan`` against ``task`` in ``world``.

    A :class:`ParsedPlan` (how the env passes the model's text, read leniently by ``parse_plan``)
    is taken as it is. Any other value is read as that evaluator reads a submission: the
    ``"official"`` evaluator takes only a list of day objects is a plan (:func:`official_plan`); the
    ``"strict"`` one every shape ``parse_plan`` reads is accepted."""
    require_choice("evaluator", evaluator, EVALUATORS)
    query = task if isinstance(task, TravelTask) else TravelTask.from_row(task, id="task")
    if isinstance(plan, ParsedPlan):
        parsed = plan
    else:
        parsed = official_plan(plan) if evaluator == "official" else parse_plan(plan)
    if not parsed.delivered:
        return _undelivered(evaluator, query, parsed.reason or "no plan")
    ix = index_for(world)
    days = parsed.days
    if evaluator == "official":
        subject: Any = days
        checks, hard_checks = _commonsense.CHECKS, _hard.CHECKS
    else:
        subject = _safe_read(query, days, ix)
        checks, hard_checks = _strict.CHECKS, _strict_hard.CHECKS
    errors: list[str] = []
    commonsense = {name: _run(name, fn, query, subject, ix, errors) for name, fn in checks.items()}
    hard = None
    if commonsense["is_not_absent"].passed and commonsense["is_valid_information_in_sandbox"].passed:
        hard = {name: _run(name, fn, query, subject, ix, errors) for name, fn in hard_checks.items()}
    return _report(evaluator, query, commonsense, hard, errors[0] if errors else None)


def official_plan(value: Any) -> ParsedPlan:
    """The plan as the official evaluator takes it: a list of day objects, or a submission line
    ``{"idx", "query", "plan"}`` whose ``plan`` is one (the official script reads ``line["plan"]``).

    The official code indexes ``plan[i]["current_city"]`` directly, so a JSON or Python-literal
    string, a fenced string, a nested ``{"plan": [...]}`` object or the ``[query_meta, days]``
    annotated form all crash it. Here each is an ``evaluation_error`` and the plan counts as not
    delivered. (The env reads the model's text leniently with ``parse_plan`` before evaluating.)
    """
    if isinstance(value, Mapping):
        if "plan" not in value:
            return _not_a_plan("an object without a 'plan' key")
        value = value["plan"]
    if value is None or isinstance(value, Plan):
        return parse_plan(value)
    if isinstance(value, (list, tuple)):
        meta, days = (value[0], value[1]) if len(value) == 2 else (None, None)
        if isinstance(meta, Mapping) and "org" in meta and isinstance(days, (list, tuple)):
            return _not_a_plan("the annotated [query_meta, days] form")
        return parse_plan(list(value))
    return _not_a_plan(f"a {type(value).__name__}")


def _not_a_plan(what: str) -> ParsedPlan:
    reason = f"{ERROR_PREFIX}: the official evaluator scores only a list of day objects, not {what}"
    return ParsedPlan(days=None, delivered=False, reason=reason)


def _safe_read(query: TravelTask, days: list[Any], ix: Any) -> Any:
    try:
        return read_plan(query, days, ix)
    except Exception as exc:  # noqa: BLE001 - strict reading must not raise; fail every check instead
        return exc


def _run(name: str, fn: Callable[..., tuple[bool | None, str]], query: TravelTask, subject: Any,
         ix: Any, errors: list[str]) -> Verdict:
    try:
        if isinstance(subject, Exception):
            raise subject
        passed, reason = fn(query, subject, ix)
    except Exception as exc:  # noqa: BLE001 - upstream would abort the run; fail this check instead
        detail = str(exc) if isinstance(exc, _commonsense._OfficialCrash) else f"{type(exc).__name__}: {exc}"
        reason = f"{ERROR_PREFIX}: {_line(detail)}"
        errors.append(f"{name}: {reason}")
        return Verdict.model_construct(passed=False, reason=reason)
    return _verdict(passed, reason)


_VERDICTS = Memo(4 << 20, 4096)


def _verdict(passed: bool | None, reason: str) -> Verdict:
    """Verdicts are frozen, so equal ones are shared: most reasons (every pass) repeat."""
    key = (passed, reason)
    v = _VERDICTS.get(key)
    if v is None:
        v = _VERDICTS.put(key, Verdict.model_construct(passed=passed, reason=_line(reason)))
    return v


def _line(text: str, limit: int = 240) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _undelivered(evaluator: str, query: TravelTask, reason: str) -> EvaluationReport:
    verdict = Verdict.model_construct(passed=False, reason=f"plan not delivered: {reason}")
    commonsense = {name: verdict for name in COMMONSENSE}
    return _report(evaluator, query, commonsense, None, reason, delivered=False)


def _report(evaluator: str, query: TravelTask, commonsense: dict[str, Verdict], hard: dict[str, Verdict] | None,
            error: str | None, *, delivered: bool = True) -> EvaluationReport:
    c_passed, c_pass = _tally(commonsense)
    h_passed, h_pass = (0, False) if hard is None else _tally(hard)
    c_pass = c_pass and delivered
    applicable = applicable_hard(query)
    return _construct(EvaluationReport, {
        "evaluator": evaluator, "delivered": delivered, "commonsense": commonsense, "hard": hard,
        "commonsense_pass": c_pass, "hard_pass": h_pass, "final_pass": c_pass and h_pass,
        "commonsense_passed": c_passed, "hard_passed": h_passed, "hard_applicable": applicable,
        "commonsense_micro": c_passed / len(COMMONSENSE), "hard_micro": h_passed / applicable if applicable else 0.0,
        "error": error,
    })


def _tally(verdicts: dict[str, Verdict]) -> tuple[int, bool]:
    """(how many passed, whether none failed)."""
    passed, ok = 0, True
    for v in verdicts.values():
        p = v.passed
        if p is True:
            passed += 1
        elif p is False:
            ok = False
    return passed, ok


def _construct(cls: type[BaseModel], values: dict[str, Any]) -> Any:
    """``cls.model_construct(**values)`` for trusted values naming every field, without its
    per-field alias/default walk (this runs once per evaluated plan)."""
    m = cls.__new__(cls)
    object.__setattr__(m, "__dict__", values)
    object.__setattr__(m, "__pydantic_fields_set__", set(values))
    object.__setattr__(m, "__pydantic_extra__", None)
    object.__setattr__(m, "__pydantic_private__", None)
    return m


def applicable_hard(task: TravelTask) -> int:
    """The budget plus every local constraint the task sets (what the per-plan hard micro divides by)."""
    lc = task.local_constraint
    return 1 + (lc.house_rule is not None) + bool(lc.cuisine) + (lc.room_type is not None) \
        + (lc.transportation is not None)


@renamed_kwargs({"query": "task"})
def hard_denominator(task: TravelTask) -> int:
    """The task's share of the official hard-micro denominator.

    Upstream counts, per task, the budget plus: at ``hard`` level every set local constraint;
    at ``medium`` level only house rule, cuisine and room type; at ``easy`` level nothing more.
    Tasks without a level are counted like ``hard``. On the real splits this gives 105 (train),
    420 (validation) and, per the official code, 2290 (test).
    """
    lc = task.local_constraint
    keys = ("house_rule", "cuisine", "room_type", "transportation")
    if task.level == "easy":
        keys = ()
    elif task.level == "medium":
        keys = keys[:3]
    return 1 + sum(getattr(lc, k) is not None for k in keys)


# -- metrics --------------------------------------------------------------------------------
class MetricSet(BaseModel):
    """The six official metrics over a set of tasks, with their counts and denominators."""

    model_config = ConfigDict(frozen=True)

    n_tasks: int = Field(validation_alias=AliasChoices("n_tasks", "n_queries"))
    """How many tasks (0.1 dumps say ``n_queries``; they still load)."""
    delivery_rate: float
    commonsense_micro: float
    commonsense_macro: float
    hard_micro: float
    hard_macro: float
    final_pass_rate: float
    delivered: int
    commonsense_passed: int
    commonsense_denominator: int
    hard_passed: int
    hard_denominator: int
    commonsense_macro_count: int
    hard_macro_count: int
    final_pass_count: int
    errors: int

    def official(self) -> dict[str, float]:
        """The six metrics under the names the official ``eval.py`` prints."""
        return {label: getattr(self, key) for key, label in OFFICIAL_METRIC_NAMES.items()}

    @property
    def n_queries(self) -> int:
        """Deprecated: ``n_tasks``."""
        warn_renamed(f"{type(self).__name__}.n_queries", f"{type(self).__name__}.n_tasks")
        return self.n_tasks


class Metrics(MetricSet):
    """Aggregate metrics plus the same six metrics per level and per trip length."""

    evaluator: str | None = Field(default=None, validation_alias=AliasChoices("evaluator", "evaluation", "mode"))
    """The evaluator of every report, or None when they mix evaluators."""

    evaluation = renamed_attribute("Metrics", "evaluation", "evaluator")
    by_level: dict[str, MetricSet] = {}
    by_days: dict[int, MetricSet] = {}


@renamed_kwargs({"queries": "tasks"})
def aggregate(reports: Sequence[EvaluationReport], tasks: Sequence[TravelTask]) -> Metrics:
    """The official metrics of ``reports`` (``reports[i]`` is the plan for ``tasks[i]``).

    Denominators as upstream: N = the number of tasks (45 / 180 / 1000 on the real splits),
    8N for commonsense micro, and the sum of ``hard_denominator`` for hard micro. Missing or
    undelivered plans count as failures.
    """
    if len(reports) != len(tasks):
        raise ConfigError("reports", f"{len(reports)} reports", f"one report per task ({len(tasks)})")
    pairs = list(zip(reports, tasks, strict=True))
    by_level: dict[str, list] = {}
    by_days: dict[int, list] = {}
    for r, q in pairs:
        by_level.setdefault(q.level or "unknown", []).append((r, q))
        by_days.setdefault(q.days, []).append((r, q))
    evaluators = {r.evaluator for r in reports}
    return Metrics(
        **_metric_set(pairs).model_dump(),
        evaluator=evaluators.pop() if len(evaluators) == 1 else None,
        by_level={k: _metric_set(v) for k, v in sorted(by_level.items(), key=lambda kv: _level_order(kv[0]))},
        by_days={k: _metric_set(v) for k, v in sorted(by_days.items())},
    )


def _level_order(level: str) -> int:
    return {"easy": 0, "medium": 1, "hard": 2}.get(level, 3)


def _metric_set(pairs: list[tuple[EvaluationReport, TravelTask]]) -> MetricSet:
    n = len(pairs)
    delivered = sum(r.delivered for r, _ in pairs)
    c_passed = sum(r.commonsense_passed for r, _ in pairs if r.delivered)
    h_passed = sum(r.hard_passed for r, _ in pairs)
    h_den = sum(hard_denominator(q) for _, q in pairs)
    # Upstream counts the macro flags only for plans whose hard box ran; a plan without one
    # has already failed is_not_absent or the sandbox check, so this changes nothing.
    c_macro = sum(r.commonsense_pass for r, _ in pairs if r.hard is not None)
    h_macro = sum(r.hard_pass for r, _ in pairs)
    final = sum(r.final_pass for r, _ in pairs)
    errors = sum(r.delivered and r.error is not None for r, _ in pairs)
    c_den = len(COMMONSENSE) * n
    return MetricSet(
        n_tasks=n, delivery_rate=_ratio(delivered, n),
        commonsense_micro=_ratio(c_passed, c_den), commonsense_macro=_ratio(c_macro, n),
        hard_micro=_ratio(h_passed, h_den), hard_macro=_ratio(h_macro, n), final_pass_rate=_ratio(final, n),
        delivered=delivered, commonsense_passed=c_passed, commonsense_denominator=c_den,
        hard_passed=h_passed, hard_denominator=h_den, commonsense_macro_count=c_macro,
        hard_macro_count=h_macro, final_pass_count=final, errors=errors,
    )


def _ratio(a: int, b: int) -> float:
    return a / b if b else 0.0


alias("MetricSet attribute", "n_queries", "n_tasks")
__getattr__ = module_aliases(__name__, {"EVALUATIONS": "EVALUATORS"})
