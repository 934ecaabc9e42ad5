"""Length-aware BLEU for short answers: a correct 1-3-token answer scores 1.0.

Plain sentence BLEU-4 gives 0 to a correct one-word answer (it has no 4-grams), and its
brevity penalty only punishes missing content, leaving padding to the precisions alone.
This variant, on SQuAD-normalized tokens (lowercase, no punctuation, no articles):

* n-gram order N = min(max_order, |candidate|, |reference|), uniform weights 1/N;
* p_n = clipped n-gram matches / candidate n-grams (sacrebleu's n-gram statistics); no
  word in common (p_1 = 0) scores 0, and a higher order with no match counts ``floor``
  matches (sacrebleu's ``floor`` smoothing), so a near miss keeps some credit;
* length term LP, with c = |candidate| and r = |reference|:

  - ``two_sided`` (default): LP = exp(1 - max(c, r) / min(c, r)): 1 when c = r, and it
    decays alike for missing content (c < r) and for padding (c > r);
  - ``brevity``: BLEU's own BP = exp(1 - r / c) when c < r, else 1;

* LA-BLEU = LP * exp(sum_n log(p_n) / N); 0 when either side is empty after normalization;
* with several references, the best score over them (1.0 on an exact match with any).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Literal

from agentgym._deprecated import renamed_kwargs
from agentgym.errors import DependencyNotInstalled

__all__ = ["length_aware_bleu", "LengthPenalty"]

LengthPenalty = Literal["two_sided", "brevity"]


@renamed_kwargs({"references": "gold_answers"})
def length_aware_bleu(candidate: str, gold_answers: str | Iterable[str], *, max_order: int = 4,
                      floor: float = 0.1, length_penalty: LengthPenalty = "two_sided") -> float:
    """The best length-aware BLEU of ``candidate`` over ``gold_answers`` (BLEU's references), in [0, 1]."""
    from agentgym.envs.searchqa.scoring import normalize_answer

    refs = [gold_answers] if isinstance(gold_answers, str) else list(gold_answers)
    cand = normalize_answer(candidate)
    return max((_score(cand, normalize_answer(r), max_order, floor, length_penalty) for r in refs), default=0.0)


def _score(cand: str, ref: str, max_order: int, floor: float, length_penalty: LengthPenalty) -> float:
    c, r = len(cand.split()), len(ref.split())
    if c == 0 or r == 0:
        return 0.0
    if cand == ref:
        return 1.0
    order = min(max_order, c, r)
    extract = _ngrams()
    cand_grams, _ = extract(cand, 1, order)
    ref_grams, _ = extract(ref, 1, order)
    matches = [0] * order
    for gram, count in cand_grams.items():
        matches[len(gram) - 1] += min(count, ref_grams.get(gram, 0))
    if matches[0] == 0:
        return 0.0
    log_sum = 0.0
    for n in range(1, order + 1):
        total = c - n + 1
        log_sum += math.log((matches[n - 1] or floor) / total)
    return _length_term(c, r, length_penalty) * math.exp(log_sum / order)


def _length_term(c: int, r: int, kind: LengthPenalty) -> float:
    if kind == "brevity":
        return 1.0 if c >= r else math.exp(1 - r / c)
    return math.exp(1 - max(c, r) / min(c, r))


def _ngrams():
    try:
        from sacrebleu.metrics.helpers import extract_all_word_ngrams
    except ImportError as exc:
        raise DependencyNotInstalled("the la_bleu reward term needs sacrebleu: pip install 'agentgym-rl[bleu]'") from exc
    return extract_all_word_ngrams
