"""Every source of rollouts round-trips through ``Rollouts.load``, and the record stays bounded.

The sources are written by the code that writes them for users: ``agentgym run``'s own loop, verl
0.9.1's own ``_write_generations`` (the function behind ``trainer.rollout_data_dir``), and
``rollout_record`` lines as the TRL rollout's ``log_dir`` holds them.
"""

from __future__ import annotations

import json

import gymnasium
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentgym  # noqa: F401  (registers the env ids)
from agentgym import DataError
from agentgym.agents.scripted import PerturbedAgent
from agentgym.rewards.lab import MAX_INFO_BYTES, Rollout, Rollouts, bound_infos, rollout_record
from agentgym.rewards.lab.readers import VERL_COLUMN
from agentgym.runner import RunConfig, run_eval

PERTURBED = {"kind": "perturbed"}


def played(env_id="SearchQA-v0", seed=0, task=0, **env_kwargs):
    """One perturbed episode of task ``task``: (prompt, actions, infos)."""
    env = gymnasium.make(env_id, **env_kwargs)
    agent = PerturbedAgent(env)
    prompt, info = env.reset(options={"task_index": task})
    agent.reset(seed=seed)
    actions, infos = [], []
    observation, done = prompt, False
    while not done:
        action = agent.act(observation, info)
        observation, _, terminated, truncated, info = env.step(action)
        actions.append(action)
        infos.append(info)
        done = terminated or truncated
    return prompt, actions, infos


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("lab") / "run"
    config = RunConfig(env_id="TravelPlanner-v0", agent=PERTURBED, episodes=6, samples_per_task=3, out=out, fsync=False)
    assert run_eval(config).complete
    return out


def test_a_run_folder_reads_back_its_groups_prompts_and_infos(run_folder):
    rollouts = Rollouts.load(run_folder)
    assert [(r.group, r.sample) for r in rollouts] == [("0", 0), ("0", 1), ("0", 2), ("1", 0), ("1", 1), ("1", 2)]
    assert [len(v) for v in rollouts.groups().values()] == [3, 3]
    env = gymnasium.make("TravelPlanner-v0")
    first, _ = env.reset(options={"task_index": 1})
    assert rollouts[3].prompt == first and rollouts[3].task_id == "train-1" and rollouts[3].env_id == "TravelPlanner-v0"
    assert all(len(r.infos) == len(r.actions) and r.infos[-1]["action"] in ("answer", "give_up") for r in rollouts)
    assert Rollouts.load(run_folder / "results.jsonl")[:] [3].infos == rollouts[3].infos


def test_rollout_records_round_trip_as_the_trl_log_writes_them(tmp_path):
    records = [rollout_record(*played(seed=s), group="step3-0", sample=s, env_id="SearchQA-v0", training_step=3,
                              total=0.5) for s in range(3)]
    log = tmp_path / "rollouts.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    for source in (log, tmp_path):
        rollouts = Rollouts.load(source)
        assert [r.to_record() for r in rollouts] == [Rollout.from_record(r).to_record() for r in records]
        assert list(rollouts.groups()) == [(0, "step3-0")] and rollouts[2].training_step == 3


def _verl_writers():
    pytest.importorskip("verl", reason="verl is not installed")
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer
    from verl.trainer.ppo.v1.trainer_base import PPOTrainer

    return {"legacy": RayPPOTrainer._write_generations, "v1": PPOTrainer._write_generations}


@pytest.mark.parametrize("trainer", ["legacy", "v1"])
def test_a_verl_rollout_dump_written_by_verl_reads_back(tmp_path, trainer):
    """verl's own writer: ``{step}.jsonl`` with input/output/gts/score/step and each reward_extra_info column."""
    write = _verl_writers()[trainer]
    for step in (9, 10):
        records = [rollout_record(*played(seed=s, task=step), group=f"uid-{step}", sample=s, env_id="SearchQA-v0",
                                  training_step=step) for s in range(2)]
        extra = {VERL_COLUMN: [json.dumps(r) for r in records], "score": [0.0, 1.0], "outcome": [0.0, 1.0]}
        write(["prompt text"] * 2, ["response text"] * 2, [None, None], [0.0, 1.0], extra, str(tmp_path), step)
    rollouts = Rollouts.load(tmp_path)
    assert [r.training_step for r in rollouts] == [9, 9, 10, 10]  # 10.jsonl after 9.jsonl
    assert [r.group for r in rollouts] == ["uid-9", "uid-9", "uid-10", "uid-10"]
    assert Rollouts.load(tmp_path / "10.jsonl")[1].infos == rollouts[3].infos


def test_a_verl_dump_without_the_record_column_says_what_writes_it(tmp_path):
    write = _verl_writers()["v1"]
    write(["p"], ["o"], [None], [1.0], {"uid": ["a_0_0"]}, str(tmp_path), 1)  # V1's training dump: no extra info
    with pytest.raises(DataError, match=f"without the '{VERL_COLUMN}' column.*reward_extra_info"):
        Rollouts.load(tmp_path)


@pytest.mark.parametrize("content, message", [
    ("a,b\n1,2\n", "is not JSON"),
    ('{"question": "q", "answer": "a"}\n', "is not a rollout: its keys"),
    ('{"format": "agentgym.rollout/1", "prompt": "p"}\n', "group: Field required"),
    ('[1, 2]\n', "is not a JSON object"),
])
def test_anything_else_is_a_data_error_naming_the_formats(tmp_path, content, message):
    path = tmp_path / "other.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataError, match=message) as caught:
        Rollouts.load(path)
    if "keys" in message or "JSON" in message:
        assert "agentgym run folder" in str(caught.value) and "verl rollout dump" in str(caught.value)


def test_missing_and_empty_sources_are_data_errors(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        Rollouts.load(tmp_path / "nope")
    with pytest.raises(DataError, match="folder without rollouts"):
        Rollouts.load(tmp_path)
    with pytest.raises(DataError, match="no rollouts given"):
        Rollouts.load()


def test_a_results_line_of_an_older_release_says_why_it_cannot_be_reshaped(tmp_path):
    (tmp_path / "results.jsonl").write_text(json.dumps({"episode": 0, "seed": 0, "total_reward": 1.0, "turns": 1,
                                                        "terminated": True, "truncated": False}) + "\n")
    with pytest.raises(DataError, match="no prompt and step infos"):
        Rollouts.load(tmp_path)


def test_a_torn_last_line_is_skipped(tmp_path):
    record = json.dumps(rollout_record("p", ["a"], [{"turn": 1, "action": "answer"}], group="g"))
    (tmp_path / "log.jsonl").write_text(record + "\n" + record[:40], encoding="utf-8")
    assert len(Rollouts.load(tmp_path / "log.jsonl")) == 1


def test_rollouts_of_two_paths_never_share_a_group(tmp_path, run_folder):
    rollouts = Rollouts.load(run_folder, run_folder)
    assert len(rollouts.groups()) == 4 and rollouts.group_name(0) == "0:0" and rollouts.group_name(6) == "1:0"


# -- the bound on infos ------------------------------------------------------------------------------
def test_infos_within_the_bound_are_kept_whole_and_a_leading_reset_info_is_dropped():
    prompt, actions, infos = played()
    record = rollout_record(prompt, actions, [{"turn": 0, "action": "reset"}, *infos], group=0)
    assert record["infos"] == infos and record["clipped"] is False and record["group"] == "0"
    assert record["task_id"] == infos[-1]["task_id"]


def test_infos_over_the_bound_are_cut_and_flagged_keeping_the_final_step():
    step = {"turn": 1, "action": "tool", "tool_result": {"content": "x" * 5000, "n_rows": 3, "error": None},
            "extra": {"passage_ids": ["p"] * 500}, "error": None}
    final = {"turn": 200, "action": "answer", "answer": "Paris", "report": {"em": 1.0}, "task_id": "t"}
    kept, clipped = bound_infos([dict(step, turn=i) for i in range(1, 200)] + [final])
    size = sum(len(json.dumps(i).encode()) + 1 for i in kept)
    assert clipped and size <= MAX_INFO_BYTES and kept[-1] == final
    assert kept[0]["tool_result"] == {"content": "", "n_rows": 3, "error": None}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.integers(1, 60), text=st.integers(0, 20_000), answer=st.integers(0, 400_000))
def test_the_infos_of_a_record_never_exceed_the_bound(steps, text, answer):
    infos = [{"turn": i, "action": "tool", "tool_result": {"content": "é" * text, "n_rows": 1, "error": None},
              "extra": {"query": "q" * text}} for i in range(steps)]
    infos.append({"turn": steps, "action": "answer", "answer": "a" * answer, "report": {"score": 1.0}})
    kept, clipped = bound_infos(infos)
    assert sum(len(json.dumps(i, ensure_ascii=False).encode()) + 1 for i in kept) <= MAX_INFO_BYTES
    assert kept[-1]["action"] == "answer" and clipped == (kept != infos)


def test_a_malformed_info_is_a_data_error_naming_the_rollout_when_it_is_shaped(tmp_path):
    from agentgym.rewards.lab import compare

    record = rollout_record("p", ["<answer>x</answer>"], [{"turn": "first", "action": "answer"}], group="g",
                            task_id=None, env_id="SearchQA-v0")
    (tmp_path / "log.jsonl").write_text(json.dumps(record) + "\n" + json.dumps({**record, "sample": 1}) + "\n")
    with pytest.raises(DataError, match=r"rollout None/g/0 .*log\.jsonl:1\): infos\[0\] is not a step's info dict"):
        compare(Rollouts.load(tmp_path), ["prs/short"])
