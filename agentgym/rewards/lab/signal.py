"""What one batch of grouped rewards gives GRPO: the statistics ``compare`` reports and trainers log.

A trainer calls :func:`group_metrics` once per training step with one row per rollout::

    metrics = group_metrics((uid, score, breakdown.outcome, breakdown) for ...)   # a flat dict of floats
    # {"agentgym/reward/zero_var": 0.08, "agentgym/reward/within_std": 0.9, "agentgym/reward/spearman": 0.8,
    #  "agentgym/reward/abstained/llm_judge": 1.0, "agentgym/reward/failed/llm_judge": 1.0, ...}

Every figure is over the groups of two or more rollouts (a lone rollout has no baseline):

* ``zero_var``: share of groups whose totals are all equal (GRPO gives them zero advantage), split
  into ``zero_var_all_fail`` (no rollout solved the task) and ``zero_var_all_pass`` (every one did);
* ``within_std``: mean over groups of the totals' standard deviation (Bessel-corrected, as
  ``torch.std`` in verl's and TRL's GRPO); ``mean_abs_adv``: mean |advantage| under GRPO's
  normalisation, ``(total - group mean) / (group std + 1e-6)`` (verl's epsilon);
* ``spearman``, ``kendall``: rank correlation (tau-b) of total with outcome inside each group where
  both vary, averaged over those groups (NaN when there is none);
* ``inversions``: share of the pairs of a group whose outcomes differ in which the better outcome
  is paid less (a pass paid below a fail); ``worst`` keeps the widest of them;
* ``pass_rate`` (outcome >= 1), ``mean_total``;
* ``partial_abstention``: share of rollouts where a term abstained while others scored, so the
  total silently lacks that term (``RewardBreakdown.abstained`` is false); ``failed``: share of
  rollouts in which something outside the model failed (``RewardBreakdown.failures``: a dead judge);
* per term: ``abstained/<term>``, ``failed/<term>`` (shares of rollouts), ``contribution/<term>``
  (mean contribution where the term is in force) and ``term_var/<term>`` (mean within-group
  variance of its contribution: what it adds to the signal).
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from agentgym.rewards.lab.ranks import kendall, spearman
from agentgym.rewards.shaper import RewardBreakdown

__all__ = ["SignalRow", "GroupStats", "TermStats", "Inversion", "group_stats", "group_metrics", "METRIC_PREFIX",
           "EPSILON", "TOLERANCE"]

METRIC_PREFIX = "agentgym/reward"
"""The one namespace of the live figures, in verl's and TRL's training logs alike."""
EPSILON = 1e-6
"""Added to a group's std in GRPO's normalisation (verl's ``compute_grpo_outcome_advantage``)."""
TOLERANCE = 1e-9
"""Totals closer than this count as equal (a zero-variance group)."""


class SignalRow(NamedTuple):
    """One rollout: its group, the reward paid, the unshaped outcome and (optionally) how it was made."""

    group: Hashable
    total: float
    outcome: float
    breakdown: RewardBreakdown | Mapping[str, Any] | None = None
    """The breakdown (or the dict ``info["reward"]`` holds): adds the per-term figures."""
    sample: Any = None
    """The rollout's index in its group (named in ``worst`` inversions)."""
    task_id: str | None = None


@dataclass(frozen=True)
class Inversion:
    """A pair of one group in which the better outcome was paid less."""

    task_id: str | None
    group: Hashable
    better_sample: Any
    worse_sample: Any
    better_total: float
    worse_total: float
    better_outcome: float
    worse_outcome: float

    @property
    def gap(self) -> float:
        return self.worse_total - self.better_total

    def to_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "group": str(self.group), "better_sample": self.better_sample,
                "worse_sample": self.worse_sample, "better_total": self.better_total, "worse_total": self.worse_total,
                "better_outcome": self.better_outcome, "worse_outcome": self.worse_outcome}


@dataclass(frozen=True)
class TermStats:
    """One term's part in the batch."""

    contribution: float
    """Mean contribution over the rollouts where the term is in force (NaN when never)."""
    term_var: float
    """Mean within-group variance of its contribution."""
    abstained: float
    """Share of rollouts in which it abstained."""
    partial: float
    """Share of rollouts in which it abstained while another term scored (partial abstention)."""
    failed: float
    """Share of rollouts in which it could not score because something outside the model failed."""
    failures: dict[str, int] = field(default_factory=dict)
    """``{failure reason: rollouts}``."""
    reason: str | None = None
    """Its most common reason for abstaining."""


@dataclass(frozen=True)
class GroupStats:
    """The statistics of one batch of grouped rewards (see the module docstring for each figure)."""

    rollouts: int
    groups: int
    singletons: int
    zero_var: float
    zero_var_all_fail: float
    zero_var_all_pass: float
    within_std: float
    mean_abs_adv: float
    spearman: float
    kendall: float
    ranked_groups: int
    """Groups where both the total and the outcome vary (the rank correlations' groups)."""
    pairs: int
    """Pairs of one group whose outcomes differ."""
    inversions: int
    ties: int
    """Pairs whose outcomes differ but whose totals are equal."""
    pass_rate: float
    mean_total: float
    partial_abstention: float
    failed: float
    terms: dict[str, TermStats]
    worst: tuple[Inversion, ...] = ()

    def metrics(self) -> dict[str, float]:
        """The figures as a flat dict of floats (names as in the module docstring)."""
        out = {"rollouts": float(self.rollouts), "groups": float(self.groups), "zero_var": self.zero_var,
               "zero_var_all_fail": self.zero_var_all_fail, "zero_var_all_pass": self.zero_var_all_pass,
               "within_std": self.within_std, "mean_abs_adv": self.mean_abs_adv, "spearman": self.spearman,
               "kendall": self.kendall, "inversions": self.inversions / self.pairs if self.pairs else math.nan,
               "pass_rate": self.pass_rate, "mean_total": self.mean_total,
               "partial_abstention": self.partial_abstention, "failed": self.failed}
        for name, term in self.terms.items():
            out.update({f"abstained/{name}": term.abstained, f"failed/{name}": term.failed,
                        f"contribution/{name}": term.contribution, f"term_var/{name}": term.term_var})
        return out

    def warnings(self) -> list[str]:
        """What must not go unnoticed: failures first (a dead judge), then partial abstention."""
        out = []
        for name, term in self.terms.items():
            if term.failed > 0:
                reasons = ", ".join(f"{reason} x{n}" for reason, n in term.failures.items())
                out.append(f"FAILED: term {name!r} could not score {term.failed:.0%} of rollouts ({reasons}): "
                           "something outside the model failed, and those totals are made of the other terms only")
        for name, term in self.terms.items():
            if term.partial > 0 and term.failed < term.partial:
                out.append(f"PARTIAL ABSTENTION: term {name!r} abstained in {term.partial:.0%} of rollouts while "
                           f"other terms scored ({term.reason or 'no reason given'}): those totals lack it")
        return out


def group_metrics(rows: Iterable[SignalRow | tuple[Any, ...]], *, prefix: str = METRIC_PREFIX) -> dict[str, float]:
    """The batch's figures as a flat dict of floats under ``prefix``, for a trainer's logger (one call per
    training step). Each row is ``(group id, total, outcome, breakdown)`` (the breakdown may be the dict
    ``info["reward"]`` holds, or None); undefined figures are NaN."""
    return {f"{prefix}/{name}": value for name, value in group_stats(rows).metrics().items()}


def group_stats(rows: Iterable[SignalRow | tuple[Any, ...]], *, worst: int = 5) -> GroupStats:
    """The statistics of one batch; ``worst`` widest inversions are kept."""
    by_group: dict[Hashable, list[SignalRow]] = {}
    term_names: dict[str, None] = {}
    for raw in rows:
        row = raw if isinstance(raw, SignalRow) else SignalRow(*raw)
        if row.breakdown is not None and not isinstance(row.breakdown, RewardBreakdown):
            row = row._replace(breakdown=RewardBreakdown.from_dict(row.breakdown))
        if row.breakdown is not None:
            term_names.update(dict.fromkeys(row.breakdown.terms))
        by_group.setdefault(row.group, []).append(row)
    acc = _Accumulator(list(term_names), worst)
    for group, members in by_group.items():
        acc.add(group, members)
    return acc.result()


class _Accumulator:
    def __init__(self, terms: list[str], worst: int) -> None:
        self.terms, self.keep = terms, worst
        self.rollouts = self.groups = self.singletons = 0
        self.flat = self.flat_fail = self.flat_pass = 0
        self.std_sum = self.adv_sum = 0.0
        self.grouped_rollouts = 0
        self.rho_sum = self.tau_sum = 0.0
        self.ranked = self.pairs = self.inverted = self.ties = 0
        self.passes = 0
        self.total_sum = 0.0
        self.partial = self.failed = 0
        self.worst: list[tuple[float, int, Inversion]] = []
        self.seen = 0  # orders equal gaps by when they were found
        self.term = {name: _TermAccumulator() for name in terms}

    def add(self, group: Hashable, rows: list[SignalRow]) -> None:
        totals = [float(r.total) for r in rows]
        outcomes = [float(r.outcome) for r in rows]
        n = len(rows)
        self.rollouts += n
        self.total_sum += sum(totals)
        self.passes += sum(o >= 1.0 - TOLERANCE for o in outcomes)
        for r in rows:
            self._rollout_terms(r)
        for name in self.terms:
            self.term[name].add_group([_contribution(r, name) for r in rows])
        if n < 2:
            self.singletons += 1
            return
        self.groups += 1
        self.grouped_rollouts += n
        mean = sum(totals) / n
        std = math.sqrt(sum((t - mean) ** 2 for t in totals) / (n - 1))
        self.std_sum += std
        self.adv_sum += sum(abs(t - mean) for t in totals) / (std + EPSILON)
        if max(totals) - min(totals) <= TOLERANCE:
            self.flat += 1
            self.flat_fail += all(o < 1.0 - TOLERANCE for o in outcomes)
            self.flat_pass += all(o >= 1.0 - TOLERANCE for o in outcomes)
        outcome_varies = max(outcomes) - min(outcomes) > TOLERANCE
        if outcome_varies and max(totals) - min(totals) > TOLERANCE:
            self.ranked += 1
            self.rho_sum += spearman(totals, outcomes)
            self.tau_sum += kendall(totals, outcomes)
        if outcome_varies:
            self._pairs(group, rows, totals, outcomes)

    def _pairs(self, group: Hashable, rows: list[SignalRow], totals: list[float], outcomes: list[float]) -> None:
        for i in range(len(rows)):
            for j in range(len(rows)):
                if outcomes[i] - outcomes[j] <= TOLERANCE:
                    continue  # i is not the better of the pair
                self.pairs += 1
                gap = totals[j] - totals[i]
                if abs(gap) <= TOLERANCE:
                    self.ties += 1
                elif gap > 0:
                    self.inverted += 1
                    if self.keep:
                        better, worse = rows[i], rows[j]
                        self.seen += 1
                        item = (gap, -self.seen, Inversion(better.task_id, group, _sample(better, i),
                                                                 _sample(worse, j), totals[i], totals[j],
                                                                 outcomes[i], outcomes[j]))
                        if len(self.worst) < self.keep:
                            heapq.heappush(self.worst, item)
                        elif gap > self.worst[0][0]:
                            heapq.heapreplace(self.worst, item)

    def _rollout_terms(self, row: SignalRow) -> None:
        breakdown = row.breakdown
        if breakdown is None:
            return
        abstained = [name for name, t in breakdown.terms.items() if t.abstained]
        valued = any(t.raw is not None for t in breakdown.terms.values())
        self.failed += any(t.failure is not None for t in breakdown.terms.values())
        self.partial += bool(abstained) and valued
        for name, t in breakdown.terms.items():
            self.term[name].add_rollout(t, partial=t.abstained and valued)

    def result(self) -> GroupStats:
        groups = self.groups
        share = (lambda k: k / groups) if groups else (lambda k: math.nan)
        worst = tuple(item[2] for item in sorted(self.worst, key=lambda item: (-item[0], -item[1])))
        return GroupStats(
            rollouts=self.rollouts, groups=groups, singletons=self.singletons, zero_var=share(self.flat),
            zero_var_all_fail=share(self.flat_fail), zero_var_all_pass=share(self.flat_pass),
            within_std=share(self.std_sum), mean_abs_adv=self.adv_sum / self.grouped_rollouts
            if self.grouped_rollouts else math.nan,
            spearman=self.rho_sum / self.ranked if self.ranked else math.nan,
            kendall=self.tau_sum / self.ranked if self.ranked else math.nan, ranked_groups=self.ranked,
            pairs=self.pairs, inversions=self.inverted, ties=self.ties,
            pass_rate=self.passes / self.rollouts if self.rollouts else math.nan,
            mean_total=self.total_sum / self.rollouts if self.rollouts else math.nan,
            partial_abstention=self.partial / self.rollouts if self.rollouts else math.nan,
            failed=self.failed / self.rollouts if self.rollouts else math.nan,
            terms={name: acc.result(self.rollouts) for name, acc in self.term.items()}, worst=worst)


class _TermAccumulator:
    def __init__(self) -> None:
        self.active = self.abstained = self.partial = self.failed = 0
        self.contribution = self.var_sum = 0.0
        self.var_groups = 0
        self.failures: Counter[str] = Counter()
        self.reasons: Counter[str] = Counter()

    def add_rollout(self, t: Any, *, partial: bool) -> None:
        if t.weight == 0 and not t.abstained and t.raw is None and (t.reason or "").startswith("inactive"):
            return
        self.active += 1
        self.contribution += t.contribution
        if t.abstained:
            self.abstained += 1
            self.partial += partial
            self.reasons[t.reason or ""] += 1
        if t.failure is not None:
            self.failed += 1
            self.failures[t.failure] += 1

    def add_group(self, contributions: list[float | None]) -> None:
        values = [c for c in contributions if c is not None]
        if len(values) < 2:
            return
        mean = sum(values) / len(values)
        self.var_sum += sum((v - mean) ** 2 for v in values) / (len(values) - 1)
        self.var_groups += 1

    def result(self, rollouts: int) -> TermStats:
        per = (lambda k: k / rollouts) if rollouts else (lambda k: math.nan)
        return TermStats(contribution=self.contribution / self.active if self.active else math.nan,
                         term_var=self.var_sum / self.var_groups if self.var_groups else math.nan,
                         abstained=per(self.abstained), partial=per(self.partial), failed=per(self.failed),
                         failures=dict(self.failures),
                         reason=self.reasons.most_common(1)[0][0] if self.reasons else None)


def _contribution(row: SignalRow, name: str) -> float | None:
    term = row.breakdown.terms.get(name) if row.breakdown is not None else None
    return None if term is None else term.contribution


def _sample(row: SignalRow, index: int) -> Any:
    return row.sample if row.sample is not None else index
