"""``probe`` and ``agentgym rewards probe``: the degenerate-answer suites catch the known loopholes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import agentgym  # noqa: F401  (registers the env ids)
from agentgym import ConfigError, DataError
from agentgym.rewards.lab import probe

OFFICIAL_DENSE = {"preset": "planner_r1/dense", "terms": {name: {"evaluator": "official"} for name in (
    "commonsense_micro", "hard_micro", "commonsense_macro", "hard_macro", "final_pass")}}
SUB_EM = {"name": "sub_em", "terms": [{"kind": "format", "weight": 0.2}, {"kind": "sub_em", "weight": 0.8}]}


def test_the_official_evaluator_s_transport_loophole_is_caught_and_strict_is_not_fooled():
    """The issue's case: dense scored by the official evaluator pays "Teleport" legs 100% of a real pass."""
    report = probe("TravelPlanner-v0", ["planner_r1/dense", OFFICIAL_DENSE], n_tasks=6, labels=["strict", "official"])
    official = {r.probe: r for r in report.rows("official")}
    strict = {r.probe: r for r in report.rows("strict")}
    assert official["unknown_transport"].hacks == 6 and official["unknown_transport"].mean_ratio == pytest.approx(1.0)
    assert all(r.hacks == 0 for r in strict.values()) and strict["unknown_transport"].max_ratio < 0.5
    assert report.hacked and any(w.startswith("HACK: official: probe 'unknown_transport'") for w in report.warnings())
    # every built-in probe is degenerate: the env's (strict) evaluator fails it on every task
    assert set(strict) == {"unknown_transport", "case_repeat", "prefix_repeat", "all_dashes", "junk_values",
                           "task_text", "empty_plan"}
    assert all(r.passes_evaluator == 0 and r.n_tasks == 6 for r in strict.values())


@pytest.mark.parametrize("action_format", ["tags", "json"])
def test_a_padding_blind_term_is_caught_and_la_bleu_is_not_fooled(action_format):
    report = probe("SearchQA-v0", ["prs/short", SUB_EM], n_tasks=5, env_kwargs={"action_format": action_format})
    sub_em = {r.probe: r for r in report.rows("sub_em")}
    bleu = {r.probe: r for r in report.rows("prs/short")}
    assert sub_em["padded"].hacks == 5 and sub_em["list_hedge"].hacks == 5
    assert all(r.hacks == 0 for r in bleu.values()) and bleu["padded"].max_ratio < 0.5
    assert bleu["two_answers"].max_ratio == 0.0  # one turn, two answers: an invalid action, not a solved task
    assert all(r.passes_evaluator == 0 and r.n_tasks == 5 for r in bleu.values())


def _shout(case):
    return case.passing[:-1] + [f"<answer>{case.answer}!!! {case.answer}</answer>"]


def test_the_suite_takes_probes_as_functions_and_as_a_jsonl_file(tmp_path):
    probes = tmp_path / "probes.jsonl"
    probes.write_text(json.dumps({"name": "echo", "actions": ["<answer>{answer} {answer}</answer>"]}) + "\n"
                      + json.dumps({"name": "only-one", "task_id": "train-1", "actions": ["<answer>x</answer>"],
                                    "keep_passing_steps": False}) + "\n")
    report = probe("SearchQA-v0", [SUB_EM], n_tasks=3, probes={"shout": _shout}, probe_file=probes, builtin=False)
    rows = {r.probe: r for r in report.rows()}
    assert set(rows) == {"shout", "echo", "only-one"}
    assert rows["shout"].hacks == rows["echo"].hacks == 3 and rows["only-one"].n_tasks == 1


@pytest.mark.parametrize("line, message", [('{"name": "x"}', "is not a probe"), ("not json", "is not JSON"),
                                           ('{"name": "x", "actions": ["a"], "extra": 1}', "unknown keys")])
def test_a_malformed_probe_file_is_a_data_error(tmp_path, line, message):
    path = tmp_path / "p.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(DataError, match=message):
        probe("SearchQA-v0", ["prs/short"], n_tasks=1, probe_file=path)


def test_a_probe_that_raises_names_itself():
    def broken(case):
        raise KeyError("oops")

    with pytest.raises(ConfigError, match="probe 'broken'"):
        probe("SearchQA-v0", ["prs/short"], n_tasks=1, probes={"broken": broken}, builtin=False)


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "agentgym", "rewards", "probe", *map(str, args)], capture_output=True,
                          text=True, timeout=600, cwd=cwd)


def test_the_command_exits_1_when_a_probe_earns_as_much_as_a_pass(tmp_path):
    hacked = cli("TravelPlanner-v0", "-s", json.dumps(OFFICIAL_DENSE), "--n-tasks", "2", "--json", tmp_path / "p.json",
                 "--figures", tmp_path)
    assert hacked.returncode == 1 and "<- HACK" in hacked.stdout, hacked.stderr
    assert json.loads((tmp_path / "p.json").read_text())["verdict"]["hacked"] is True
    assert (tmp_path / "probes.png").stat().st_size > 10_000
    assert cli("TravelPlanner-v0", "-s", "planner_r1/dense", "--n-tasks", "2").returncode == 0


def test_the_command_takes_a_probe_function_from_the_current_folder(tmp_path):
    (tmp_path / "myprobes.py").write_text("def loud(case):\n    return case.passing[:-1] + "
                                          "['<answer>' + case.answer + ' ' + case.answer + '</answer>']\n")
    done = cli("SearchQA-v0", "-s", json.dumps(SUB_EM), "--n-tasks", "2", "--probe", "myprobes:loud", "--no-builtin",
               cwd=tmp_path)
    assert done.returncode == 1 and "loud" in done.stdout
