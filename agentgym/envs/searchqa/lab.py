"""SearchQA's reward-lab kit (``SearchQAEnv.reward_lab``): a passing episode of the env's current
task, failure edits of its answer, invalid turns, and the probe suite.

The passing episode searches the question once, then answers with the first gold answer (its exact
match is 1). The probes each fail exact match, and start from that answer:

* ``padded``: the gold answer followed by filler words (substring match still finds it);
* ``list_hedge``: the gold answer among three other tasks' answers ("A, B, gold or C");
* ``two_answers``: ``<answer>wrong</answer><answer>gold</answer>`` in one turn (agentgym's formats
  refuse it, ``multiple_answers``; ``search-r1`` acts on the first and scores the last);
* ``question_copied``: the question itself as the answer;
* ``empty_answer``: ``<answer> </answer>``.

Long-form tasks have no exact match: their gold answer is a reference text, and the probes are
the same edits of it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentgym.envs.searchqa.env import SearchQAEnv
    from agentgym.rewards.lab.probes import ProbeCase

__all__ = ["passing_actions", "failure_edit", "invalid_action", "PROBES", "EDITS"]

_FILLER = "according to the passages I found, which I read carefully before answering this question"


def passing_actions(env: SearchQAEnv) -> list[str] | None:
    """One search of the question, then the first gold answer, in ``env``'s action format."""
    task = env.task
    if not task.golden_answers or not task.golden_answers[0].strip():
        return None
    return [_search(env, task.text), _answer(env, task.golden_answers[0])]


def _search(env: SearchQAEnv, query: str) -> str:
    if env.action_format == "json":
        return "<tool_call>" + json.dumps({"name": "search", "arguments": {"query": query}}) + "</tool_call>"
    return f"<think>I should look this up.</think><search>{query}</search>"


def _answer(env: SearchQAEnv, text: str) -> str:
    return f"<think>The passages say so.</think><answer>{text}</answer>"


def _other_answers(env: SearchQAEnv, count: int, rng: random.Random | None = None) -> list[str]:
    """Gold answers of other tasks: plausible wrong answers (the same ones for a task without ``rng``)."""
    tasks, own = env.tasks, env.task
    if rng is None:
        start = (env.tasks.index(own) if own in tasks else 0) + 1
        picked = [tasks[(start + k) % len(tasks)] for k in range(min(count * 3, len(tasks)))]
    else:
        picked = rng.sample(tasks, min(count * 3, len(tasks)))
    golds = {a.lower() for a in own.golden_answers}
    others = [t.golden_answers[0] for t in picked if t.golden_answers and t.golden_answers[0].lower() not in golds]
    return (others or ["none of these"])[:count]


# -- failure edits (the perturbed agent) --------------------------------------------------------
def _wrong_entity(gold: str, env: SearchQAEnv, rng: random.Random) -> str:
    return _other_answers(env, 1, rng)[0]


def _partial(gold: str, env: SearchQAEnv, rng: random.Random) -> str:
    words = gold.split()
    return " ".join(words[:-1]) if len(words) > 1 else gold[: max(1, len(gold) // 2)]


def _typo(gold: str, env: SearchQAEnv, rng: random.Random) -> str:
    if len(gold) < 3:
        return gold + "x"
    i = rng.randrange(1, len(gold) - 1)
    return gold[:i] + gold[i + 1] + gold[i] + gold[i + 2:] if gold[i] != gold[i + 1] else gold[:i] + "q" + gold[i + 1:]


def _padded(gold: str, env: SearchQAEnv, rng: random.Random) -> str:
    return f"{gold} {_FILLER}"


def _unsure(gold: str, env: SearchQAEnv, rng: random.Random) -> str:
    return "I could not find it"


EDITS: dict[str, Callable[[str, Any, random.Random], str]] = {
    "wrong_entity": _wrong_entity, "partial": _partial, "typo": _typo, "padded": _padded, "unsure": _unsure,
}
"""The failure edits of an answer (each fails exact match; ``padded`` still passes substring match)."""


def failure_edit(env: SearchQAEnv, actions: list[str], rng: random.Random) -> list[str]:
    """``actions`` with the final answer replaced by one failure edit of it."""
    gold = env.task.golden_answers[0] if env.task.golden_answers else ""
    edit = EDITS[rng.choice(sorted(EDITS))]
    return actions[:-1] + [_answer(env, edit(gold, env, rng))]


def invalid_action(env: SearchQAEnv, rng: random.Random) -> str:
    """A turn the env cannot use: an unclosed tag, prose without a tag, or an empty search."""
    return rng.choice(["<search>who is it", "I think I know this one.", "<search> </search>"])


# -- probes -------------------------------------------------------------------------------------
def _with_answer(case: ProbeCase, text: str) -> list[str]:
    return case.passing[:-1] + [_answer(case.env, text)]


def _padded_probe(case: ProbeCase) -> list[str] | None:
    return _with_answer(case, f"{case.answer} {_FILLER}")


def _list_hedge(case: ProbeCase) -> list[str] | None:
    a, b, c = (_other_answers(case.env, 3) + ["none", "nothing"])[:3]
    return _with_answer(case, f"{a}, {b}, {case.answer} or {c}")


def _two_answers(case: ProbeCase) -> list[str] | None:
    wrong = _other_answers(case.env, 1)[0]
    return case.passing[:-1] + [f"<answer>{wrong}</answer><answer>{case.answer}</answer>"]


def _question_copied(case: ProbeCase) -> list[str] | None:
    return _with_answer(case, case.task_text) if case.task_text else None


def _empty_answer(case: ProbeCase) -> list[str] | None:
    return case.passing[:-1] + ["<answer> </answer>"]


PROBES: dict[str, Callable[[Any], list[str] | None]] = {
    "padded": _padded_probe, "list_hedge": _list_hedge, "two_answers": _two_answers,
    "question_copied": _question_copied, "empty_answer": _empty_answer,
}
"""The built-in probes: ``case -> actions`` (None when the task has nothing to probe)."""
