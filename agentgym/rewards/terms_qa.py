"""QA terms: exact match, substring match, token F1 (SQuAD normalization) and length-aware BLEU.

Each scores the submitted answer against the reference answers (the best over them) and
abstains when the episode has no gold answers. The metrics are the search-QA env's own
(``agentgym.envs.searchqa.scoring``), so the reward and the env's evaluation agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from agentgym.rewards._base import Positive, TermSpec
from agentgym.rewards._registry import Abstain, abstain, term
from agentgym.rewards.bleu import LengthPenalty, length_aware_bleu

__all__ = ["ExactMatch", "SubEM", "TokenF1", "LengthAwareBleu"]

_NO_GOLD = "the episode has no gold answers"


class _QATerm(TermSpec):
    guarded = True


class ExactMatch(_QATerm):
    """1.0 iff the normalized answer equals a normalized reference."""

    kind: Literal["exact_match"] = "exact_match"


@term(ExactMatch)
def exact_match(answer: str | None, gold_answers: Sequence[str]) -> float | Abstain:
    from agentgym.envs.searchqa.scoring import exact_match as em

    if not gold_answers:
        return abstain(_NO_GOLD)
    return 0.0 if answer is None else em(answer, gold_answers)


class SubEM(_QATerm):
    """1.0 iff a normalized reference occurs inside the normalized answer ("cover EM")."""

    kind: Literal["sub_em"] = "sub_em"


@term(SubEM)
def sub_em(answer: str | None, gold_answers: Sequence[str]) -> float | Abstain:
    from agentgym.envs.searchqa.scoring import substring_match

    if not gold_answers:
        return abstain(_NO_GOLD)
    return 0.0 if answer is None else substring_match(answer, gold_answers)


class TokenF1(_QATerm):
    """Token-level F1 between the normalized answer and the best reference."""

    kind: Literal["token_f1"] = "token_f1"


@term(TokenF1)
def token_f1(answer: str | None, gold_answers: Sequence[str]) -> float | Abstain:
    from agentgym.envs.searchqa.scoring import token_f1 as f1

    if not gold_answers:
        return abstain(_NO_GOLD)
    return 0.0 if answer is None else f1(answer, gold_answers).f1


class LengthAwareBleu(_QATerm):
    """Length-aware BLEU (see ``agentgym.rewards.bleu``): 1.0 for a correct short answer."""

    kind: Literal["la_bleu"] = "la_bleu"
    max_order: int = Field(default=4, ge=1, le=4, strict=True)
    """Highest n-gram order (capped by both lengths)."""
    floor: Positive = 0.1
    """Stand-in match count for an order with no match (sacrebleu's floor smoothing)."""
    length_penalty: LengthPenalty = "two_sided"
    """``two_sided`` penalizes missing and padded content alike; ``brevity`` is BLEU's own."""


@term(LengthAwareBleu)
def la_bleu(answer: str | None, gold_answers: Sequence[str], config: LengthAwareBleu) -> float | Abstain:
    if not gold_answers:
        return abstain(_NO_GOLD)
    if answer is None:
        return 0.0
    return length_aware_bleu(answer, gold_answers, max_order=config.max_order, floor=config.floor,
                             length_penalty=config.length_penalty)
