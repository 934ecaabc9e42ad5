"""Answer metrics for search-augmented QA: SQuAD normalization, EM, substring EM, token F1, ROUGE-L.

The normalization is the SQuAD v1.1 / HotpotQA one that Search-R1 and FlashRAG share: lowercase,
drop ASCII punctuation, drop the articles *a*, *an*, *the*, collapse whitespace, in that order.
Every metric takes a prediction and a list of gold answers and keeps the best match.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from agentgym._deprecated import renamed_kwargs

__all__ = [
    "normalize_answer",
    "exact_match",
    "substring_match",
    "token_f1",
    "F1Score",
    "answer_in_text",
    "rouge_l",
    "lexical_longform_score",
]

_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
# HotpotQA's rule: these answers get no partial credit against anything but themselves.
_SPECIAL = frozenset({"yes", "no", "noanswer"})


class F1Score(NamedTuple):
    f1: float
    precision: float
    recall: float


def normalize_answer(text: str) -> str:
    """Lowercase, remove ASCII punctuation, remove articles, collapse whitespace."""
    text = text.lower().translate(_PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _golds(golden: str | Iterable[str]) -> list[str]:
    return [golden] if isinstance(golden, str) else list(golden)


def exact_match(prediction: str, golden: str | Iterable[str]) -> float:
    """1.0 when the normalized prediction equals a normalized gold answer, else 0.0."""
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in _golds(golden)))


def substring_match(prediction: str, golden: str | Iterable[str], *, skip_empty_golds: bool = True) -> float:
    """Cover EM: 1.0 when a normalized gold answer occurs inside the normalized prediction.

    A gold answer that normalizes to nothing (``"the"``, ``"?"``) is skipped, as it would match
    any prediction; ``skip_empty_golds=False`` keeps it, as Search-R1's ``qa_subem`` does.
    """
    pred = normalize_answer(prediction)
    golds = (normalize_answer(g) for g in _golds(golden))
    return float(any(g in pred for g in golds if g or not skip_empty_golds))


def token_f1(prediction: str, golden: str | Iterable[str]) -> F1Score:
    """Token-level F1 (and its precision and recall), the maximum of each over the gold answers."""
    best = F1Score(0.0, 0.0, 0.0)
    pred = normalize_answer(prediction)
    for gold in map(normalize_answer, _golds(golden)):
        score = _f1_pair(pred, gold)
        best = F1Score(max(best.f1, score.f1), max(best.precision, score.precision), max(best.recall, score.recall))
    return best


def _f1_pair(pred: str, gold: str) -> F1Score:
    if (pred in _SPECIAL or gold in _SPECIAL) and pred != gold:
        return F1Score(0.0, 0.0, 0.0)
    pred_tokens, gold_tokens = pred.split(), gold.split()
    overlap = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if overlap == 0:
        return F1Score(0.0, 0.0, 0.0)
    precision, recall = overlap / len(pred_tokens), overlap / len(gold_tokens)
    return F1Score(2 * precision * recall / (precision + recall), precision, recall)


def answer_in_text(golden: str | Iterable[str], text: str) -> bool:
    """True when a normalized gold answer occurs in the normalized text (FlashRAG's retrieval recall)."""
    haystack = normalize_answer(text)
    return any(g and g in haystack for g in map(normalize_answer, _golds(golden)))


def _lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    # Bit-parallel LCS (Allison-Dix / Hyyro): one big-int update per token of b, so a
    # long answer against a long reference costs microseconds, not a quadratic table.
    if not a or not b:
        return 0
    masks: dict[str, int] = {}
    for i, token in enumerate(a):
        masks[token] = masks.get(token, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for token in b:
        u = v & masks.get(token, 0)
        v = ((v + u) | (v - u)) & full
    return len(a) - v.bit_count()


@renamed_kwargs({"reference": "gold"})
def rouge_l(prediction: str, gold: str) -> F1Score:
    """ROUGE-L over SQuAD-normalized tokens: LCS-based F1, precision and recall (``gold``: ROUGE's reference)."""
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    lcs = _lcs_length(ref, pred)
    if lcs == 0:
        return F1Score(0.0, 0.0, 0.0)
    precision, recall = lcs / len(pred), lcs / len(ref)
    return F1Score(2 * precision * recall / (precision + recall), precision, recall)


@renamed_kwargs({"question": "task_text", "references": "gold_answers"})
def lexical_longform_score(task_text: str, answer: str, gold_answers: Sequence[str]) -> float:
    """The long-form fallback when no judge is configured: the best ROUGE-L F1 over the gold answers.

    F1 rather than recall, so pasting every retrieved passage does not score well. It has the
    judge hook's signature; ``task_text`` is unused.
    """
    del task_text
    return max((rouge_l(answer, gold).f1 for gold in gold_answers), default=0.0)
