"""EM, F1 and normalization agree with the SQuAD v1.1 definition; ROUGE-L's LCS is exact."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgym.envs.searchqa.scoring import (answer_in_text, exact_match, lexical_longform_score, normalize_answer,
                                            rouge_l, substring_match, token_f1)
from agentgym.envs.searchqa.scoring import _lcs_length

# Hand-worked from the SQuAD v1.1 rules: lower -> strip ASCII punctuation -> drop a/an/the -> squeeze spaces.
NORMALIZED = {
    "The Eiffel Tower": "eiffel tower",
    "  an   Apple, a day! ": "apple day",
    "U.S.": "us",
    "1,000": "1000",
    "Theodore the Great": "theodore great",  # "the" only as a whole word
    "A-ha": "aha",
    "“Curly” quotes – dash": "“curly” quotes – dash",  # unicode punctuation is kept
    "ÉCOLE Normale": "école normale",
    "": "",
}


@pytest.mark.parametrize("text", list(NORMALIZED))
def test_normalization_follows_squad(text):
    assert normalize_answer(text) == NORMALIZED[text]


def test_exact_match_takes_the_best_gold_answer():
    assert exact_match("the Chief of Protocol.", ["Chief of Protocol"]) == 1.0
    assert exact_match("Stanley Hall", ["G. Stanley Hall", "Stanley Hall"]) == 1.0
    assert exact_match("Stanley", ["G. Stanley Hall"]) == 0.0
    assert exact_match("Paris", "paris") == 1.0


def test_substring_match_is_cover_em():
    assert substring_match("It was Chief of Protocol, I think", ["Chief of Protocol"]) == 1.0
    assert substring_match("Protocol", ["Chief of Protocol"]) == 0.0
    assert substring_match("anything", ["the"]) == 0.0  # a gold answer that normalizes to nothing never matches


def test_token_f1_by_hand():
    # pred tokens: [chief, protocol, office]; gold: [chief, of, protocol] -> overlap 2
    score = token_f1("the Chief Protocol office", ["Chief of Protocol"])
    assert score.precision == pytest.approx(2 / 3) and score.recall == pytest.approx(2 / 3)
    assert score.f1 == pytest.approx(2 / 3)
    assert token_f1("Paris Paris", ["Paris"]).precision == pytest.approx(0.5)  # multiset overlap
    assert token_f1("nothing shared", ["Chief"]).f1 == 0.0


def test_yes_no_get_no_partial_credit():
    assert token_f1("yes", ["no"]).f1 == 0.0
    assert token_f1("no it is not", ["no"]).f1 == 0.0
    assert token_f1("yes", ["yes"]).f1 == 1.0


def test_answer_in_text_is_flashrag_retrieval_recall():
    assert answer_in_text(["Chief of Protocol"], "She served as the chief of protocol of the US.")
    assert not answer_in_text(["Chief of Protocol"], "She served as chief.")


def _lcs_table(a, b):
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
    return table[-1][-1]


@given(st.lists(st.sampled_from("abcde"), max_size=40), st.lists(st.sampled_from("abcde"), max_size=40))
def test_bit_parallel_lcs_matches_the_dynamic_program(a, b):
    assert _lcs_length(a, b) == _lcs_table(a, b)


def test_rouge_l_and_the_longform_fallback():
    ref = "Mawsynram in India holds the record for the most rain"
    assert rouge_l(ref, ref).f1 == pytest.approx(1.0)
    assert 0 < rouge_l("Mawsynram holds the record", ref).f1 < 1
    assert lexical_longform_score("q", "unrelated words entirely", [ref]) == 0.0
    good = lexical_longform_score("q", "The record is held by Mawsynram in India.", [ref])
    padded = lexical_longform_score("q", "The record is held by Mawsynram in India. " + "filler " * 200, [ref])
    assert good > padded > 0  # F1, not recall: pasting text does not pay


def test_the_lexical_fallback_takes_the_reward_inputs_names_and_still_the_old_ones():
    """Defect: ``lexical_longform_score(question, answer, references)`` named the task and the gold
    answers by retired words; the old keywords warn for one release and score the same."""
    from agentgym._deprecated import AgentGymDeprecationWarning

    gold = ["Mawsynram in India holds the record for rainfall."]
    new = lexical_longform_score(task_text="q", answer="Mawsynram holds the record", gold_answers=gold)
    with pytest.warns(AgentGymDeprecationWarning) as caught:
        assert lexical_longform_score(question="q", answer="Mawsynram holds the record", references=gold) == new
    assert {"'question' is deprecated, use 'task_text'", "'references' is deprecated, use 'gold_answers'"} \
        <= {str(w.message).split(" kwarg ")[1].split(" (")[0] for w in caught}
    with pytest.warns(AgentGymDeprecationWarning, match="'reference' is deprecated, use 'gold'"):
        assert rouge_l("Mawsynram holds it", reference=gold[0]) == rouge_l("Mawsynram holds it", gold=gold[0])
