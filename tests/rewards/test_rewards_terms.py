"""Built-in terms on hand-made episodes: generic, QA, length-aware BLEU, plan schema, guards."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym import ConfigError, ErrorCode, StepInfo, ToolCall, ToolResult
from agentgym.envs.searchqa import scoring
from agentgym.envs.travelplanner.plan import parse_plan
from agentgym.rewards import Episode, build_shaper, length_aware_bleu
from agentgym.rewards.terms_travelplanner import plan_schema_error


def tool(turn, error=None):
    return StepInfo(turn=turn, action="tool", tool_call=ToolCall(name="search"),
                    tool_result=ToolResult(content="rows", error=error))


def invalid(turn):
    from agentgym import ActionError

    return StepInfo(turn=turn, action="invalid", error=ActionError(code=ErrorCode.UNPARSEABLE_ACTION, message="?"))


def answered(turn, answer=None):
    """The step that submitted ``answer``, as the env records it."""
    return StepInfo(turn=turn, action="answer", terminated_reason="answer", answer=answer)


def breakdown(terms, episode, **spec):
    return build_shaper({"terms": terms, **spec}).shape(episode)


def raw(kind, episode, **fields):
    return breakdown([{"kind": kind, "weight": 1.0, **fields}], episode).terms[fields.get("name", kind)]


# -- generic ---------------------------------------------------------------------------------
def test_format_needs_every_turn_readable_an_answer_and_balanced_tags():
    good = Episode([tool(1), answered(2)], actions=["<think>a</think>x", "<answer>y</answer>"])
    assert raw("format", good).raw == 1.0
    assert raw("format", Episode([invalid(1), answered(2)], actions=["?", "<answer>y</answer>"])).raw == 0.0
    truncated = Episode([tool(1)], actions=["x"])
    assert raw("format", truncated).raw == 0.0
    assert raw("format", truncated, require_answer=False).raw == 1.0
    unbalanced = Episode([tool(1), answered(2)], actions=["<think>a", "<answer>y</answer>"])
    assert raw("format", unbalanced).raw == 1.0
    assert raw("format", unbalanced, balanced_tags=["think"]).raw == 0.0


def test_tool_call_validity_and_tool_error_rate():
    episode = Episode([tool(1), tool(2, ErrorCode.INVALID_ARGUMENT), invalid(3), tool(4), answered(5)])
    assert raw("tool_call_validity", episode).raw == 0.75
    assert raw("tool_error_rate", episode).raw == pytest.approx(1 / 3)
    no_tools = raw("tool_call_validity", Episode([answered(1)]))
    assert no_tools.abstained and no_tools.reason == "no tool calls were attempted"
    assert raw("tool_error_rate", Episode([invalid(1)])).abstained


def test_turns_and_answer_length():
    episode = Episode([tool(1), tool(2), answered(3, "two  words")], actions=["a", "b", "<answer> two  words </answer>"])
    assert raw("num_turns", episode).raw == 3.0
    assert raw("answer_length", episode).raw == 2.0
    assert raw("answer_length", episode, unit="chars").raw == len("two  words")
    assert raw("answer_length", Episode([tool(1)], actions=["a"])).abstained


def test_penalties_subtract_with_a_nonnegative_weight():
    episode = Episode([tool(1), tool(2), answered(3, "x")], actions=["a", "b", "<answer>x</answer>"], outcome=1.0)
    result = breakdown([{"kind": "outcome", "weight": 1.0}, {"kind": "num_turns", "weight": 0.1, "penalty": True}],
                       episode)
    assert result.total == pytest.approx(0.7)
    assert result.terms["num_turns"].contribution == pytest.approx(-0.3)


# -- QA ----------------------------------------------------------------------------------------
def qa_episode(answer, references=("Paris",), final=None):
    final = final if final is not None else f"<think>hm</think><answer>{answer}</answer>"
    return Episode([answered(1, answer)], actions=[final], task_text="Capital of France?", gold_answers=references)


@pytest.mark.parametrize("answer", ["Paris", "the paris.", "Paris, France", "Lyon", "It is Paris"])
def test_qa_terms_agree_with_the_env_scoring(answer):
    episode = qa_episode(answer)
    assert raw("exact_match", episode).raw == scoring.exact_match(answer, ["Paris"])
    assert raw("sub_em", episode).raw == scoring.substring_match(answer, ["Paris"])
    assert raw("token_f1", episode).raw == pytest.approx(scoring.token_f1(answer, ["Paris"]).f1)


def test_qa_terms_abstain_without_references_and_score_no_answer_zero():
    assert raw("exact_match", qa_episode("Paris", references=())).abstained
    no_answer = Episode([tool(1)], actions=["<search>x</search>"], gold_answers=["Paris"])
    result = breakdown([{"kind": "exact_match", "weight": 1.0}], no_answer, guards={"non_empty_answer": False})
    assert result.terms["exact_match"].raw == 0.0 and not result.terms["exact_match"].abstained


words = st.lists(st.sampled_from(["paris", "france", "city", "lights", "river", "seine", "north"]),
                 min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(ref=words, cand=words)
def test_la_bleu_is_a_score_in_unit_range_that_is_one_only_for_the_reference(ref, cand):
    value = length_aware_bleu(" ".join(cand), " ".join(ref))
    assert 0.0 <= value <= 1.0
    assert (value == 1.0) == (cand == ref)


@settings(max_examples=200, deadline=None)
@given(ref=st.lists(st.sampled_from(["new", "york", "city", "paris"]), min_size=1, max_size=3),
       pad=st.lists(st.sampled_from(["big", "apple", "usa"]), min_size=1, max_size=3))
def test_la_bleu_gives_a_short_correct_answer_full_marks_and_penalizes_padding_and_gaps(ref, pad):
    answer = " ".join(ref)
    assert length_aware_bleu(answer.upper() + "!", answer) == 1.0
    assert length_aware_bleu(answer + " " + " ".join(pad), answer) < 1.0
    if len(ref) > 1:
        assert length_aware_bleu(" ".join(ref[:-1]), answer) < 1.0
    assert length_aware_bleu(answer, ["wrong", answer]) == 1.0  # best over references


@settings(max_examples=100, deadline=None)
@given(ref=st.lists(st.sampled_from(["a1", "b2", "c3", "d4", "e5"]), min_size=4, max_size=9), data=st.data())
def test_la_bleu_matches_sacrebleu_sentence_bleu_at_equal_lengths(ref, data):
    import sacrebleu

    cand = data.draw(st.permutations(ref))
    ours = length_aware_bleu(" ".join(cand), " ".join(ref))
    theirs = sacrebleu.sentence_bleu(" ".join(cand), [" ".join(ref)], smooth_method="floor", smooth_value=0.1,
                                     tokenize="none").score / 100
    assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-12)


def test_two_sided_length_term_is_stricter_than_brevity_on_padding():
    two_sided = length_aware_bleu("paris france europe", "paris")
    brevity = length_aware_bleu("paris france europe", "paris", length_penalty="brevity")
    assert two_sided < brevity == pytest.approx(1 / 3)
    assert length_aware_bleu("paris", "paris france", length_penalty="brevity") == \
        length_aware_bleu("paris", "paris france")  # missing content: the same penalty


# -- plan schema -------------------------------------------------------------------------------
DAY = {"days": 1, "current_city": "from A to B", "transportation": "Flight Number: F1, from A to B",
       "breakfast": "-", "attraction": "Museum, B;", "lunch": "Cafe, B", "dinner": "Bistro, B",
       "accommodation": "Inn, B"}


def plan(*days):
    return parse_plan(list(days))


def test_schema_accepts_the_official_day_list_with_trailing_padding():
    assert plan_schema_error(plan(DAY, {**DAY, "days": 2}), 2) is None
    assert plan_schema_error(plan(DAY, {**DAY, "days": 2}, {}, {}), 2) is None
    assert plan_schema_error(plan(DAY), None) is None


@pytest.mark.parametrize(("days", "expected"), [
    ((DAY,), "expected 2 day objects, got 1"),
    ((DAY, {}, {**DAY, "days": 2}), "expected 2 day objects, got 3"),
    (({**DAY, "days": 2}, DAY), "day 1 has days=2"),
    ((DAY, {**DAY, "days": 3}), "day 2 has days=3"),
    ((DAY, {**DAY, "days": True}), "day 2 has days=True"),
    ((DAY, {**DAY, "days": 2, "note": "x"}), "day 2 does not have exactly the keys"),
    ((DAY, {k: v for k, v in {**DAY, "days": 2}.items() if k != "lunch"}), "day 2 does not have exactly the keys"),
    ((DAY, {**DAY, "days": 2, "lunch": 5}), "day 2 has a value that is not a non-empty string"),
    ((DAY, {**DAY, "days": 2, "lunch": " "}), "day 2 has a value that is not a non-empty string"),
])
def test_schema_rejects_plans_off_the_official_schema(days, expected):
    assert plan_schema_error(plan(*days), 2).startswith(expected)


def test_schema_of_an_unreadable_answer_is_its_parse_failure():
    assert plan_schema_error(parse_plan("not a plan"), 3).startswith("the plan text is not a JSON")


# -- guards ------------------------------------------------------------------------------------
SPEC = [{"kind": "exact_match", "weight": 1.0}, {"kind": "format", "weight": 0.5}]


def test_several_answer_tags_earn_no_content_reward():
    hedged = qa_episode("Paris", final="<answer>Lyon</answer><answer>Paris</answer>")
    result = breakdown(SPEC, hedged)
    assert result.terms["exact_match"].raw == 0.0
    assert result.terms["exact_match"].reason == "guard: several <answer> tags in the final action"
    assert result.terms["format"].raw == 1.0  # guards only touch content terms
    assert breakdown(SPEC, hedged, guards={"single_answer": False}).terms["exact_match"].raw == 1.0


def test_an_empty_answer_earns_no_content_reward():
    empty = Episode([answered(1, "")], actions=["<answer> </answer>"], gold_answers=[""], task_text="q")
    assert breakdown(SPEC, empty).terms["exact_match"].reason == "guard: the answer is empty"


def test_an_answer_copied_from_the_prompt_earns_no_content_reward():
    example = "The Eiffel Tower stands on the Champ de Mars in Paris, France."
    prompt = f"Answer like this example: <answer>{example}</answer>"
    copied_text = example.lower().replace(' in ', '  in ')
    copied = Episode([answered(1, copied_text)], actions=[f"<answer>{copied_text}</answer>"],
                     prompt=prompt, gold_answers=[example], task_text="q")
    result = breakdown(SPEC, copied)
    assert result.terms["exact_match"].raw == 0.0
    assert result.terms["exact_match"].reason == "guard: the answer is copied from the prompt"
    assert breakdown(SPEC, copied, guards={"min_copy_chars": 99}).terms["exact_match"].raw == 1.0
    short = Episode([answered(1, "Paris")], actions=["<answer>Paris</answer>"], prompt="Is it Paris or Lyon?",
                    gold_answers=["Paris"], task_text="q")
    assert breakdown(SPEC, short).terms["exact_match"].raw == 1.0  # short answers are never "copies"


def test_custom_terms_opt_into_the_guards():
    hedged = qa_episode("Paris", final="<answer>Lyon</answer><answer>Paris</answer>")
    term = {"kind": "custom", "function": "reward_fixture_terms:answer_chars", "weight": 1.0}
    assert breakdown([term], hedged).terms["answer_chars"].raw == 5.0
    assert breakdown([{**term, "content": True}], hedged).terms["answer_chars"].raw == 0.0


def test_custom_term_that_cannot_be_imported_is_a_config_error():
    with pytest.raises(ConfigError, match=r"^terms\[0\]\.function='nowhere:fn' is not allowed; expected an importable"):
        build_shaper({"terms": [{"kind": "custom", "function": "nowhere:fn", "weight": 1.0}]})


# -- PRS short preset and offline episodes -----------------------------------------------------
@pytest.mark.parametrize(("final", "answer", "expected"), [
    ("<think>easy</think><answer>Paris</answer>", "Paris", 1.0),                   # formatted and exact
    ("<think>hm</think><answer>Paris, France</answer>", "Paris, France",
     0.2 + 0.8 * length_aware_bleu("Paris, France", "Paris")),
    ("<think>hm</think><answer>Lyon</answer>", "Lyon", 0.2),                      # formatted, wrong
    ("<think>no closing tag<answer>Paris</answer>", "Paris", 0.0),                # right, but malformed: no content pay
])
def test_prs_short_pays_format_then_gated_answer_quality(final, answer, expected):
    result = build_shaper("prs/short").shape(qa_episode(answer, final=final))
    assert result.total == pytest.approx(expected)
    assert result.terms["exact_match"].contribution == 0.0  # logged only


def test_episodes_read_back_from_info_dicts():
    infos = [StepInfo(turn=0).to_info(), {**tool(1).to_info(), "episode": {"r": 1}},
             answered(2, "Paris").to_info()]
    episode = Episode.from_infos(infos, actions=["<search>q</search>", "<answer>Paris</answer>"],
                                 gold_answers=["Paris"])
    assert [s.action for s in episode.steps] == ["tool", "answer"]
    assert episode.answer == "Paris" and episode.outcome == 0.0
    assert build_shaper("prs/short").shape(episode).total == 1.0


@settings(max_examples=100, deadline=None)
@given(ref=st.lists(st.sampled_from(["paris", "seine"]), min_size=1, max_size=4),
       cand=st.lists(st.sampled_from(["lyon", "rhone", "city"]), min_size=1, max_size=4))
def test_la_bleu_gives_nothing_to_an_answer_with_no_word_in_common(ref, cand):
    assert length_aware_bleu(" ".join(cand), " ".join(ref)) == 0.0


@pytest.mark.parametrize("text", [json.dumps([DAY]), f"```json\n{json.dumps([DAY])}\n```", repr([DAY]),
                                  f"Here it is: {json.dumps([DAY])}"])
def test_the_schema_term_reads_the_plan_shapes_the_env_accepts(text):
    episode = Episode([answered(1)], actions=[f"Finish[{text}]"], answer=text, task={"days": 1})
    assert raw("schema", episode).raw == 1.0
    assert raw("schema", Episode([answered(1)], actions=["x"], answer=text, task={"days": 2})).raw == 0.0


SUMMARY_TERMS = {"commonsense_micro": 7 / 8, "hard_micro": 0.5, "commonsense_macro": 0.0, "hard_macro": 0.0,
                 "final_pass": 0.0}


def _report():
    from agentgym.envs.travelplanner.evaluation import COMMONSENSE, HARD

    verdicts = {name: {"passed": name != COMMONSENSE[0], "reason": ""} for name in COMMONSENSE}
    hard = {name: {"passed": None if i > 1 else i == 0, "reason": ""} for i, name in enumerate(HARD)}
    return {"evaluation": "strict", "delivered": True, "commonsense": verdicts, "hard": hard,
            "commonsense_pass": False, "hard_pass": False, "final_pass": False, "commonsense_passed": 7,
            "hard_passed": 1, "hard_applicable": 2, "commonsense_micro": 7 / 8, "hard_micro": 0.5}


def test_travelplanner_terms_read_one_typed_report_per_episode(monkeypatch):
    from agentgym.envs.travelplanner.evaluation import EvaluationReport

    reads = []
    original = EvaluationReport.model_validate.__func__
    monkeypatch.setattr(EvaluationReport, "model_validate",
                        classmethod(lambda cls, *a, **k: reads.append(1) or original(cls, *a, **k)))
    episode = Episode([StepInfo(turn=1, action="answer", terminated_reason="answer", report=_report())],
                      actions=["Finish[[]]"], answer="[]")
    terms = [{"kind": k, "weight": 1.0} for k in SUMMARY_TERMS]
    result = breakdown(terms + [{"kind": "constraint", "constraint": "valid_cost", "weight": 1.0}], episode)
    assert {k: t.raw for k, t in result.terms.items()} == {**SUMMARY_TERMS, "valid_cost": 1.0}
    assert len(reads) == 1  # six terms, one reading of the report


@pytest.mark.parametrize("kind", [*SUMMARY_TERMS, "constraint"])
def test_travelplanner_terms_abstain_on_a_report_that_is_not_travelplanner_s(kind):
    fields = {"constraint": "valid_cost"} if kind == "constraint" else {}
    episode = Episode([StepInfo(turn=1, action="answer", report={"em": 1.0})], actions=["x"], answer="x")
    value = breakdown([{"kind": kind, "weight": 1.0, **fields}], episode).terms
    assert next(iter(value.values())).reason == "the report is not a TravelPlanner evaluation report"


def test_the_generic_episode_knows_no_env_and_reads_registered_inputs_once():
    import ast
    import inspect

    import agentgym.rewards.episode as episode_module
    from agentgym.rewards._registry import READERS

    imported = [n.module or "" for n in ast.walk(ast.parse(inspect.getsource(episode_module)))
                if isinstance(n, ast.ImportFrom)]
    assert not [m for m in imported if "envs" in m]
    calls = []
    original = READERS["plan"]
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setitem(READERS, "plan", type(original)(lambda ep: calls.append(1) or original.read(ep), original.needs))
    try:
        episode = Episode([answered(1, "[]")], actions=["Finish[[]]"])
        assert episode.read("plan") is episode.read("plan") and calls == [1]
    finally:
        monkeypatch.undo()


def test_a_term_asking_for_question_and_references_gets_task_text_and_gold_answers_with_a_warning():
    from agentgym._deprecated import AgentGymDeprecationWarning

    spec = {"terms": [{"kind": "custom", "function": "reward_fixture_terms:old_input_names", "weight": 1.0}]}
    with pytest.warns(AgentGymDeprecationWarning) as caught:
        shaper = build_shaper(spec)
    said = " ".join(str(w.message) for w in caught)
    assert "'question'" in said and "use 'task_text'" in said and "use 'gold_answers'" in said
    episode = Episode([answered(1, "x")], actions=["<answer>x</answer>"], task_text="q", gold_answers=["gold"])
    assert shaper.shape(episode).total == 1.0


def test_episode_kwargs_and_attributes_of_0_1_still_work_with_a_warning():
    from agentgym._deprecated import AgentGymDeprecationWarning

    with pytest.warns(AgentGymDeprecationWarning) as caught:
        episode = Episode([answered(1, "Paris")], actions=["<answer>Paris</answer>"], question="q",
                          references=["Paris"])
    said = " ".join(str(w.message) for w in caught)
    assert "'question' is deprecated, use 'task_text'" in said and "'references' is deprecated, use 'gold_answers'" in said
    assert (episode.task_text, episode.gold_answers) == ("q", ("Paris",))
    with pytest.warns(AgentGymDeprecationWarning, match="Episode.references is deprecated"):
        assert episode.references == ("Paris",)
    with pytest.warns(AgentGymDeprecationWarning, match="Episode.question is deprecated"):
        assert episode.question == "q"
    with pytest.raises(ConfigError, match="only one of"):
        Episode([], question="q", task_text="q")
    with pytest.raises(TypeError, match="quesion"):
        Episode([], quesion="q")


def test_an_env_saying_question_and_references_in_its_reward_context_still_fits_with_a_warning():
    import gymnasium

    from agentgym._deprecated import AgentGymDeprecationWarning
    from agentgym.core.env import TextEnv
    from agentgym.core.types import StepInfo as Info
    from agentgym.rewards import ShapeReward

    class OldQA(TextEnv):
        reward_provides = frozenset({"question", "references"})

        def on_reset(self, options):
            return "Capital of France?", Info(turn=0)

        def on_step(self, action):
            return "done", 0.0, True, Info(turn=self.turn, action="answer", answer=action)

        def reward_context(self):
            return {"question": "Capital of France?", "references": ["Paris"]}

    with pytest.warns(AgentGymDeprecationWarning) as caught:
        env = ShapeReward(OldQA(), {"terms": [{"kind": "exact_match", "weight": 1.0}]})
    assert any("reward_provides 'question'" in str(w.message) for w in caught)
    env.reset(seed=0)
    with pytest.warns(AgentGymDeprecationWarning) as caught:
        _, reward, *_ = env.step("Paris")
    assert any("reward_context key 'references'" in str(w.message) for w in caught)
    assert reward == 1.0 and isinstance(env, gymnasium.Env)


def test_length_aware_bleu_takes_gold_answers_and_still_the_old_keyword():
    """Defect: its parameter was ``references`` (retired; the reward input is ``gold_answers``)."""
    from agentgym._deprecated import AgentGymDeprecationWarning

    new = length_aware_bleu("paris france", gold_answers=["paris"])
    with pytest.warns(AgentGymDeprecationWarning, match="'references' is deprecated, use 'gold_answers'"):
        assert length_aware_bleu("paris france", references=["paris"]) == new
