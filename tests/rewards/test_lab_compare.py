"""``compare`` and ``agentgym rewards compare`` over run folders of groups: what a user gates a spec on."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

import agentgym  # noqa: F401  (registers the env ids)
from agentgym import ConfigError
from agentgym.rewards.lab import Rollouts, compare
from agentgym.rewards.lab.comparison import Threshold, parse_steps, parse_sweep
from agentgym.runner import RunConfig, run_eval

PERTURBED = {"kind": "perturbed"}


def groups(path, env_id="TravelPlanner-v0", tasks=6, samples=4, **env_kwargs):
    config = RunConfig(env_id=env_id, env_kwargs=env_kwargs, agent=PERTURBED, episodes=tasks * samples,
                       samples_per_task=samples, out=path, fsync=False, concurrency=2)
    assert run_eval(config).complete
    return path


@pytest.fixture(scope="module")
def travelplanner(tmp_path_factory):
    return groups(tmp_path_factory.mktemp("lab") / "tp")


@pytest.fixture(scope="module")
def longform(tmp_path_factory):
    return groups(tmp_path_factory.mktemp("lab") / "lf", "SearchQA-LongForm-v0", tasks=3, samples=3)


def test_the_curriculum_s_stages_are_the_dense_macro_and_sparse_signal(travelplanner):
    comparison = compare(Rollouts.load(travelplanner), ["planner_r1/sparse", "planner_r1/dense", "planner_r1/curriculum"],
                         steps=[0, 250, 450], total_steps=500)
    sparse, dense = comparison.result("planner_r1/sparse"), comparison.result("planner_r1/dense")
    assert sparse.steps == dense.steps == (0, 250, 450)  # unscheduled: shaped once, one result
    first, middle, last = (comparison.result("planner_r1/curriculum", s) for s in (0, 250, 450))
    assert (first.stage, middle.stage, last.stage) == ("dense", "macro", "sparse")
    assert first.stats.metrics() == dense.stats.metrics() and last.stats.metrics() == sparse.stats.metrics()
    # the sparse reward is the outcome: honest by construction, and never inverted
    assert sparse.stats.spearman == pytest.approx(1.0) and sparse.stats.inversions == 0
    assert dense.stats.zero_var <= sparse.stats.zero_var and dense.stats.within_std > sparse.stats.within_std
    assert comparison.rollouts == 24 and comparison.groups == 6


def test_thresholds_gate_a_spec_and_the_json_verdict_says_why(travelplanner):
    comparison = compare(Rollouts.load(travelplanner), ["planner_r1/sparse", "planner_r1/dense"])
    dense_flat = comparison.result("planner_r1/dense").stats.zero_var
    violations = comparison.violations([f"zero_var>{dense_flat}", "spearman<0.99"])
    assert any(v.startswith("planner_r1/dense @ 0: spearman") for v in violations)
    document = json.loads(comparison.to_json(["spearman<0.99"]))
    assert document["verdict"]["passed"] is False and document["verdict"]["violations"]
    assert {"zero_var", "zero_var_all_fail", "zero_var_all_pass", "within_std", "mean_abs_adv", "spearman", "kendall",
            "inversions", "partial_abstention", "failed", "abstained/final_pass"} <= document["results"][0]["metrics"].keys()
    assert json.loads(comparison.to_json(["zero_var>1.5"]))["verdict"]["passed"] is True


@pytest.mark.parametrize("text, message", [("zero_var>>1", "METRIC OP NUMBER"), ("zero_var", "METRIC OP NUMBER")])
def test_a_malformed_threshold_is_a_config_error(text, message):
    with pytest.raises(ConfigError, match=message):
        Threshold.parse(text)


def test_a_threshold_on_an_unknown_metric_names_the_metrics(travelplanner):
    comparison = compare(Rollouts.load(travelplanner), ["planner_r1/sparse"])
    with pytest.raises(ConfigError, match="zero_var"):
        comparison.violations(["zero_variance>0.5"])


def test_steps_and_sweeps_parse_and_refuse_nonsense():
    assert parse_steps("0,100,400") == [0, 100, 400] and parse_sweep("0:500:6") == [0, 100, 200, 300, 400, 500]
    assert parse_sweep("10:10:3") == [10] and parse_sweep("0:3:1") == [0]
    for bad in ("0:a:3", "5:1:2", "1:2"):
        with pytest.raises(ConfigError, match="START:STOP:COUNT|START <= STOP"):
            parse_sweep(bad)
    with pytest.raises(ConfigError, match="steps"):
        parse_steps("0,-1")


def test_a_schedule_in_fractions_needs_the_run_s_length(travelplanner):
    with pytest.raises(ConfigError, match="--total-steps"):
        compare(Rollouts.load(travelplanner), ["planner_r1/curriculum"], steps=[0])


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dead_judge() -> dict:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    return {"preset": "prs/long", "terms": {"llm_judge": {"base_url": url, "model": "m", "max_retries": 0, "timeout": 5}}}


def test_a_dead_judge_cannot_go_unnoticed(longform):
    """The issue's case: with the judge unreachable prs/long silently became 0.2 x format and
    breakdown.abstained stayed false, because format scored."""
    comparison = compare(Rollouts.load(longform), [_dead_judge()], labels=["prs/long, judge down"])
    stats = comparison.result("prs/long, judge down").stats
    # the judge is asked only where the format gate opens: every one of those rollouts failed, none passed for 0
    asked = stats.failed * stats.rollouts
    assert asked >= 3 and stats.partial_abstention == stats.failed
    assert stats.terms["llm_judge"].failures == {"judge_unreachable": round(asked)}
    assert comparison.failed and comparison.to_dict()["verdict"]["passed"] is False
    assert comparison.warnings()[0].startswith("prs/long, judge down @ 0: FAILED: term 'llm_judge' could not score")
    assert "FAILED" in comparison.text().splitlines()[0]


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "agentgym", "rewards", *map(str, args)], capture_output=True,
                          text=True, timeout=600, cwd=cwd)


def test_the_command_prints_the_table_writes_json_and_figures_and_exits_on_a_threshold(travelplanner, tmp_path):
    done = cli("compare", travelplanner, "-s", "planner_r1/sparse", "-s", "planner_r1/curriculum", "--sweep", "0:400:3",
               "--total-steps", "500", "--json", tmp_path / "out.json", "--figures", tmp_path, "--fail-if", "spearman<2")
    assert done.returncode == 1, done.stderr
    assert "planner_r1/curriculum @ 200 (macro)" in done.stdout and "threshold: planner_r1/sparse @ 0..400" in done.stdout
    document = json.loads((tmp_path / "out.json").read_text())
    assert [r["steps"] for r in document["results"]] == [[0, 200, 400], [0], [200], [400]]
    assert (tmp_path / "compare.png").stat().st_size > 10_000
    ok = cli("compare", travelplanner, "-s", "planner_r1/dense", "--fail-if", "zero_var>1", "--json", "-")
    assert ok.returncode == 0 and json.loads(ok.stdout)["verdict"]["passed"] is True


def test_the_command_exits_1_on_a_dead_judge_unless_failures_are_allowed(longform):
    spec = json.dumps(_dead_judge())
    failed = cli("compare", longform, "-s", spec)
    assert failed.returncode == 1 and "FAILED: term 'llm_judge'" in failed.stdout
    assert cli("compare", longform, "-s", spec, "--allow-failures").returncode == 0


def test_the_command_refuses_steps_and_sweep_together_and_unknown_sources(travelplanner, tmp_path):
    both = cli("compare", travelplanner, "-s", "planner_r1/dense", "--steps", "0", "--sweep", "0:1:2")
    assert both.returncode == 2 and "--steps or --sweep" in both.stderr
    (tmp_path / "x.csv").write_text("a,b\n")
    other = cli("compare", tmp_path / "x.csv", "-s", "planner_r1/dense")
    assert other.returncode == 1 and "agentgym run folder" in other.stderr and "verl rollout dump" in other.stderr


def test_compare_leaves_the_garbage_collector_as_it_found_it(travelplanner):
    import gc

    assert gc.isenabled()
    compare(Rollouts.load(travelplanner), ["planner_r1/sparse"])
    assert gc.isenabled()
    gc.disable()
    try:
        compare(Rollouts.load(travelplanner), ["planner_r1/sparse"])
        assert not gc.isenabled()
    finally:
        gc.enable()
