"""``agentgym verl prepare`` rows, the row/config parsing, and ``agentgym train <recipe> --dry-run``."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agentgym._deprecated import AgentGymDeprecationWarning
from agentgym.cli import app
from agentgym.errors import ConfigError
from agentgym.integrations.verl.prepare import prepare_rows, read_parquet, write_parquet
from agentgym.integrations.verl.config import AgentGymConfig, EnvTask
from agentgym.integrations.verl.train import compose_recipe

runner = CliRunner()


def prepare(tmp_path, env_id, *args):
    out = tmp_path / f"{env_id}.parquet"
    result = runner.invoke(app, ["verl", "prepare", env_id, "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    return out


def test_travelplanner_rows_have_verl_columns(tmp_path):
    out = prepare(tmp_path, "TravelPlanner-v0", "--split", "validation", "--limit", "3",
                  "--env-kwarg", "action_format=json", "--reward", "planner_r1/dense", "--system-prompt", "Plan well.")
    rows = read_parquet(out)
    assert len(rows) == 3
    row = rows[1]
    assert row["agent_name"] == "agentgym" and row["data_source"] == "TravelPlanner-v0"
    assert row["prompt"][0] == {"role": "system", "content": "Plan well."} and row["prompt"][1]["role"] == "user"
    assert "<tool_call>" in row["prompt"][1]["content"]  # json action format: the tool schemas are shown
    assert row["reward_model"] == {"style": "env", "ground_truth": row["extra_info"]["task_id"]}
    info = row["extra_info"]
    assert info["index"] == info["task_index"] == 1 and info["env_id"] == "TravelPlanner-v0"
    assert "query_index" not in info
    assert json.loads(info["env_kwargs"]) == {"action_format": "json", "tasks": "validation"}
    assert json.loads(info["reward"]) == "planner_r1/dense"
    task = EnvTask.from_extra_info(info)
    assert task.reset_options == {"task_index": 1} and task.reward == "planner_r1/dense"


def test_searchqa_rows_carry_the_gold_answers(tmp_path):
    out = prepare(tmp_path, "SearchQA-v0", "--split", "train", "--limit", "2", "--env-kwarg", "synthetic_size=small")
    rows = read_parquet(out)
    assert all(isinstance(r["reward_model"]["ground_truth"]["target"], list) and r["reward_model"]["ground_truth"]
               ["target"] for r in rows)  # Search-R1's and verl's qa_em read {"target": [...]}
    assert json.loads(rows[0]["extra_info"]["reward"]) is None


def test_task_files_become_absolute_paths(tmp_path, monkeypatch):
    import gymnasium

    import agentgym  # noqa: F401

    env = gymnasium.make("TravelPlanner-v0", tasks="train")
    tasks = tmp_path / "q.jsonl"
    tasks.write_text("\n".join(json.dumps(t.to_row()) for t in env.unwrapped.tasks[:2]) + "\n")
    monkeypatch.chdir(tmp_path)
    rows = prepare_rows("TravelPlanner-v0", tasks="q.jsonl")
    assert len(rows) == 2 and json.loads(rows[0]["extra_info"]["env_kwargs"])["tasks"] == str(tasks)


def test_bad_inputs_name_the_field(tmp_path):
    with pytest.raises(ConfigError, match="env_id"):
        prepare_rows("CartPole-v1")
    with pytest.raises(ConfigError, match="split"):
        prepare_rows("TravelPlanner-v0", split="train", tasks="x.jsonl")
    result = runner.invoke(app, ["verl", "prepare", "TravelPlanner-v0", "--out", str(tmp_path / "x.parquet"),
                                 "--env-kwarg", "oops"])
    assert result.exit_code != 0


def test_run_settings_override_rows():
    info = {"env_id": "TravelPlanner-v0", "env_kwargs": '{"tasks": "train", "max_turns": 5}',
            "task_index": 2, "reward": "null"}
    settings = AgentGymConfig(reward="planner_r1/sparse", env_kwargs={"action_format": "json"}, max_turns=12)
    task = EnvTask.from_extra_info(info, settings)
    assert task.env_kwargs == {"tasks": "train", "max_turns": 12, "action_format": "json"}
    assert task.reward == "planner_r1/sparse"
    with pytest.raises(ValueError):
        AgentGymConfig.model_validate({"observation_rol": "user"})
    with pytest.raises(ConfigError, match="task_index"):
        EnvTask.from_extra_info({**info, "task_index": "2"})


# -- retired spellings (0.1): each still works and warns -----------------------------------------
def _rows_file(tmp_path):
    import gymnasium

    import agentgym  # noqa: F401

    env = gymnasium.make("TravelPlanner-v0", tasks="train")
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps(t.to_row()) for t in env.unwrapped.tasks[:2]) + "\n")
    return path


def test_rows_written_by_0_1_with_query_index_still_play_their_task(tmp_path):
    new = prepare_rows("TravelPlanner-v0", split="train", limit=3)
    old = [{**r, "extra_info": {("query_index" if k == "task_index" else k): v for k, v in r["extra_info"].items()}}
           for r in new[1:]]
    # One parquet file of 0.1 and 0.2 rows: each row's missing key reads back as None.
    rows = read_parquet(write_parquet([new[0], *old], tmp_path / "mixed.parquet"))
    assert rows[0]["extra_info"]["query_index"] is None and rows[1]["extra_info"]["task_index"] is None
    assert EnvTask.from_extra_info(rows[0]["extra_info"]).reset_options == {"task_index": 0}  # no warning
    for i in (1, 2):
        with pytest.warns(AgentGymDeprecationWarning, match="'query_index' is deprecated, use 'task_index'"):
            assert EnvTask.from_extra_info(rows[i]["extra_info"]).reset_options == {"task_index": i}
    with pytest.raises(ConfigError, match=r"only one of 'query_index' \(deprecated\) and 'task_index'"):
        EnvTask.from_extra_info({**new[0]["extra_info"], "query_index": 1})


def test_prepare_rows_queries_kwarg_works_and_warns(tmp_path):
    path = _rows_file(tmp_path)
    with pytest.warns(AgentGymDeprecationWarning, match=r"prepare_rows\(\) kwarg 'queries'"):
        old = prepare_rows("TravelPlanner-v0", queries=path)
    assert old == prepare_rows("TravelPlanner-v0", tasks=path) and len(old) == 2
    with pytest.raises(ConfigError, match="only one of 'queries'"):
        prepare_rows("TravelPlanner-v0", queries=path, tasks=path)


def test_prepare_queries_flag_works_and_says_it_is_deprecated(tmp_path):
    path = _rows_file(tmp_path)
    new = runner.invoke(app, ["verl", "prepare", "TravelPlanner-v0", "--tasks", str(path), "--out",
                              str(tmp_path / "new.parquet")])
    old = runner.invoke(app, ["verl", "prepare", "TravelPlanner-v0", "--queries", str(path), "--out",
                              str(tmp_path / "old.parquet")])
    assert new.exit_code == old.exit_code == 0, new.output + old.output
    assert "deprecated" not in new.stderr and "--queries is now --tasks" in " ".join(old.stderr.split())
    assert read_parquet(tmp_path / "old.parquet") == read_parquet(tmp_path / "new.parquet")
    both = runner.invoke(app, ["verl", "prepare", "TravelPlanner-v0", "--queries", str(path), "--tasks", "train",
                               "--out", str(tmp_path / "x.parquet")])
    assert both.exit_code == 2 and "give only one" in both.output
    shown = runner.invoke(app, ["verl", "prepare", "--help"]).output
    assert "--tasks" in shown and "--queries" not in shown


def test_recipes_are_listed_and_printed():
    result = runner.invoke(app, ["verl", "recipes"])
    assert result.output.split() == ["grpo", "planner_r1", "prs_vspo", "planner_r1_async", "prs_vspo_async",
                                     "planner_r1_separate_async"]
    assert "VSPOReplayBuffer" in runner.invoke(app, ["verl", "recipes", "prs_vspo"]).output


# -- agentgym train --dry-run (needs verl) ------------------------------------------------------
@pytest.fixture(scope="module")
def data(tmp_path_factory):
    pytest.importorskip("verl")
    pytest.importorskip("transfer_queue")
    folder = tmp_path_factory.mktemp("verl-data")
    tp = folder / "tp.parquet"
    sq = folder / "sq.parquet"
    assert runner.invoke(app, ["verl", "prepare", "TravelPlanner-v0", "--split", "train", "--limit", "2",
                               "--out", str(tp)]).exit_code == 0
    assert runner.invoke(app, ["verl", "prepare", "SearchQA-v0", "--split", "train", "--limit", "2",
                               "--env-kwarg", "synthetic_size=small", "--out", str(sq)]).exit_code == 0
    return {"grpo": tp, "planner_r1": tp, "prs_vspo": sq, "planner_r1_async": tp, "prs_vspo_async": sq,
            "planner_r1_separate_async": tp}


SMALL = ["data.train_batch_size=2", "actor_rollout_ref.actor.ppo_mini_batch_size=2"]  # the 2-row files below


@pytest.mark.parametrize("recipe", ["grpo", "planner_r1", "prs_vspo", "planner_r1_async", "prs_vspo_async"])
def test_each_recipe_dry_run_plays_its_rows_with_a_reward_that_works(data, recipe):
    files = [f"data.train_files={data[recipe]}", f"data.val_files={data[recipe]}"]
    result = runner.invoke(app, ["train", recipe, *files, *SMALL, "--dry-run", "--verbose"])
    assert result.exit_code == 0, result.output
    assert f"{recipe}: ready to launch" in result.output.strip().splitlines()[-1]
    assert "default_agent_loop: agentgym" in result.output
    assert "2 train rows // data.train_batch_size=2 = 1 steps per epoch" in result.output
    played = [line for line in result.output.splitlines() if "played 2 row(s)" in line]
    assert len(played) == 2, result.output  # train and val files
    rewards = [float(r.split(" (")[0]) for r in played[0].split("reward ", 1)[1].split("), ")]
    assert len(rewards) == 2 and all(r > 0 for r in rewards), played  # the scripted episode earns its reward


@pytest.mark.parametrize("recipe,buffer", [("planner_r1_async", "AgentGymReplayBufferAsync"),
                                           ("prs_vspo_async", "VSPOReplayBufferAsync")])
def test_async_recipes_run_colocate_async_with_an_async_buffer(recipe, buffer):
    pytest.importorskip("verl")
    config = compose_recipe(recipe, SMALL)
    assert config.trainer.v1.trainer_mode == "colocate_async"
    assert config.trainer.v1.sampler.custom_sampler.name == buffer
    base = compose_recipe(recipe.removesuffix("_async"), SMALL)
    assert config.agentgym == base.agentgym and config.algorithm == base.algorithm  # only the trainer differs


def test_a_sync_buffer_in_an_async_trainer_is_a_dry_run_problem(data):
    files = [f"data.train_files={data['planner_r1']}", f"data.val_files={data['planner_r1']}"]
    result = runner.invoke(app, ["train", "planner_r1_async", *files, *SMALL,
                                 "trainer.v1.sampler.custom_sampler.name=AgentGymReplayBuffer", "--dry-run"])
    assert result.exit_code == 1
    assert ("problem: trainer.v1.sampler.custom_sampler.name=AgentGymReplayBuffer runs in sync, not "
            "trainer.v1.trainer_mode=colocate_async: use AgentGymReplayBufferAsync") in result.output


def test_separate_async_invariants_are_checked_by_the_dry_run(data):
    files = [f"data.train_files={data['planner_r1']}", f"data.val_files={data['planner_r1']}"]
    broken = runner.invoke(app, ["train", "planner_r1_separate_async", *files, *SMALL,
                                 "actor_rollout_ref.rollout.checkpoint_engine.backend=naive", "--dry-run"])
    assert broken.exit_code == 1
    assert ("problem: data.train_batch_size=2 must equal trainer.v1.separate_async.parameter_sync_step x "
            "actor_rollout_ref.actor.ppo_mini_batch_size = 4 x 2 = 8") in broken.output
    assert "problem: actor_rollout_ref.rollout.checkpoint_engine.backend=naive cannot send weights" in broken.output
    fixed = runner.invoke(app, ["train", "planner_r1_separate_async", *files, "data.train_batch_size=2",
                                "actor_rollout_ref.actor.ppo_mini_batch_size=1",
                                "trainer.v1.separate_async.parameter_sync_step=2", "--dry-run"])
    assert fixed.exit_code == 0 and "planner_r1_separate_async: ready to launch" in fixed.output, fixed.output


def test_dry_run_prints_the_resolved_config_only_with_verbose(data):
    files = [f"data.train_files={data['grpo']}", f"data.val_files={data['grpo']}"]
    short = runner.invoke(app, ["train", "grpo", *files, *SMALL, "--dry-run"])
    assert short.exit_code == 0 and "default_agent_loop" not in short.output
    lines = short.output.strip().splitlines()
    assert len(lines) < 40 and lines[-1] == "grpo: ready to launch" and "--verbose" in short.output
    full = runner.invoke(app, ["train", "grpo", *files, *SMALL, "--dry-run", "--verbose"])
    assert len(full.output.splitlines()) > 10 * len(lines) and full.output.strip().endswith("grpo: ready to launch")


def test_dry_run_refuses_a_dataset_smaller_than_one_batch(data):
    files = [f"data.train_files={data['grpo']}", f"data.val_files={data['grpo']}"]
    result = runner.invoke(app, ["train", "grpo", *files, "--dry-run"])  # 2 rows, train_batch_size 32
    assert result.exit_code == 1
    assert "problem: data.train_files has 2 rows, fewer than data.train_batch_size=32" in result.output
    val = runner.invoke(app, ["train", "grpo", *files, *SMALL, "data.val_batch_size=3", "--dry-run"])
    assert val.exit_code == 1 and "data.val_files has 2 rows, fewer than data.val_batch_size=3" in val.output


def _local_tokenizer(folder, texts):
    """A byte-level BPE tokenizer with a Qwen2.5-style chat template, trained here and saved like a model's."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from agentgym.integrations.verl.preflight.selftest import QWEN25_TEMPLATE, SPECIALS

    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer, bpe.decoder = pre_tokenizers.ByteLevel(add_prefix_space=False), decoders.ByteLevel()
    bpe.train_from_iterator(texts, trainer=trainers.BpeTrainer(
        vocab_size=600, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tokenizer.chat_template = QWEN25_TEMPLATE
    tokenizer.save_pretrained(folder)
    return tokenizer


def test_dry_run_counts_rows_after_verls_overlong_prompt_filter(data, tmp_path, monkeypatch):
    """With the model's tokenizer on disk, verl's own create_rl_dataset drops the prompts longer
    than data.max_prompt_length before the run length is computed: a limit below every prompt is
    0 steps, refused here instead of at launch on the GPUs."""
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    rows = read_parquet(data["planner_r1"])
    tokenizer = _local_tokenizer(tmp_path / "model", [m["content"] for r in rows for m in r["prompt"]] * 3)
    lengths = [len(tokenizer.apply_chat_template(list(r["prompt"]), add_generation_prompt=True, return_dict=False))
               for r in rows]
    files = [f"data.train_files={data['planner_r1']}", f"data.val_files={data['planner_r1']}"]
    args = ["train", "planner_r1", *files, *SMALL, f"actor_rollout_ref.model.path={tmp_path / 'model'}"]

    fits = runner.invoke(app, [*args, f"data.max_prompt_length={max(lengths)}", "--dry-run"])
    assert fits.exit_code == 0, fits.output
    assert f"data.max_prompt_length={max(lengths)} tokens" in fits.output
    assert "2 of 2 train rows, 2 of 2 val rows" in fits.output and "verl drops" not in fits.output

    too_short = runner.invoke(app, [*args, f"data.max_prompt_length={min(lengths) - 1}", "--dry-run"])
    assert too_short.exit_code == 1
    assert "0 of 2 train rows" in too_short.output and "verl drops a row whose prompt is longer" in too_short.output
    assert "problem: data.train_files has 0 rows, fewer than data.train_batch_size=2" in too_short.output

    hub_only = runner.invoke(app, ["train", "planner_r1", *files, *SMALL, "--dry-run"])  # Qwen/Qwen3-8B: not here
    assert hub_only.exit_code == 0 and "prompt lengths not checked" in hub_only.output


def test_dry_run_resolves_the_curriculum_against_verls_step_count(data):
    files = [f"data.train_files={data['planner_r1']}", f"data.val_files={data['planner_r1']}"]
    args = ["train", "planner_r1", *files, *SMALL, "agentgym.reward=planner_r1/curriculum"]
    ok = runner.invoke(app, [*args, "trainer.total_training_steps=500", "--dry-run"])
    assert ok.exit_code == 0, ok.output
    assert "reward stages (verl's global steps): dense 1-100, macro 101-400, sparse 401-500 of 500 steps" in ok.output
    assert "5 (step 1, stage dense), 3 (step 101, stage macro)" in ok.output  # rows played at the stage starts
    epochs = runner.invoke(app, [*args, "trainer.total_epochs=20", "--dry-run"])  # 1 step per epoch x 20
    assert epochs.exit_code == 0 and "dense 1-4, macro 5-16, sparse 17-20 of 20 steps" in epochs.output


def test_dry_run_refuses_an_unsatisfiable_curriculum(data):
    files = [f"data.train_files={data['planner_r1']}", f"data.val_files={data['planner_r1']}"]
    result = runner.invoke(app, ["train", "planner_r1", *files, *SMALL, "agentgym.reward=planner_r1/curriculum",
                                 "trainer.total_epochs=2", "--dry-run"])
    assert result.exit_code == 1
    assert "problem: agentgym.reward: stage 'dense' gets no training step" in result.output
    assert "problem: agentgym.reward: stage 'sparse' gets no training step" in result.output


def test_dry_run_plays_the_reward_so_a_missing_dependency_is_refused(data, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "sacrebleu.metrics.helpers", None)  # as if sacrebleu were not installed
    files = [f"data.train_files={data['prs_vspo']}", f"data.val_files={data['prs_vspo']}"]
    result = runner.invoke(app, ["train", "prs_vspo", *files, *SMALL, "--dry-run"])
    assert result.exit_code == 1
    assert "the scripted episode failed: DependencyNotInstalled" in result.output and "sacrebleu" in result.output


def test_dry_run_warns_about_keys_the_trainer_ignores(data):
    files = [f"data.train_files={data['prs_vspo']}", f"data.val_files={data['prs_vspo']}"]
    result = runner.invoke(app, ["train", "prs_vspo", *files, *SMALL,
                                 "actor_rollout_ref.rollout.multi_turn.enable=true",
                                 "data.return_raw_chat=false", "algorithm.norm_adv_by_std_in_grpo=false", "--dry-run"])
    assert result.exit_code == 0, result.output  # warnings, not problems
    warnings = [line for line in result.output.splitlines() if line.startswith("warning: ")]
    assert [w.split("=")[0] for w in warnings] == ["warning: actor_rollout_ref.rollout.multi_turn.enable",
                                                   "warning: data.return_raw_chat",
                                                   "warning: algorithm.norm_adv_by_std_in_grpo"]


def test_dry_run_shows_the_resolved_vspo_config(data):
    result = runner.invoke(app, ["train", "prs_vspo", f"data.train_files={data['prs_vspo']}",
                                 f"data.val_files={data['prs_vspo']}", *SMALL, "algorithm.vspo.clip=2.5", "--dry-run",
                                 "--verbose"])
    assert result.exit_code == 0, result.output
    resolved = result.output[: result.output.index("prs_vspo: ready")]
    assert resolved.count("clip: 2.5") == 2  # algorithm.vspo and the replay buffer's copy of it
    assert "adv_estimator: vspo" in resolved and "name: VSPOReplayBuffer" in resolved


def test_dry_run_reports_every_problem(data, tmp_path):
    bad_row = read_parquet(data["grpo"])[0]
    bad_row["extra_info"] = {**bad_row["extra_info"], "env_id": "NoSuchEnv-v0"}
    from agentgym.integrations.verl.prepare import write_parquet

    bad = write_parquet([bad_row], tmp_path / "bad.parquet")
    result = runner.invoke(app, ["train", "prs_vspo", f"data.train_files={bad}",
                                 f"data.val_files={tmp_path / 'missing.parquet'}", "algorithm.adv_estimator=nope",
                                 "data.gen_batch_size=8", "actor_rollout_ref.model.path=./no-model", "--dry-run"])
    assert result.exit_code == 1
    for needle in ("NoSuchEnv-v0", "missing.parquet does not exist", "adv_estimator='nope'",
                   "data.gen_batch_size=1", "no-model"):
        assert needle in result.output, needle
    unknown = runner.invoke(app, ["train", "grpo", "no.such.key=1", "--dry-run"])
    assert unknown.exit_code == 1 and "do not compose" in unknown.output
    missing = runner.invoke(app, ["train", "grpo", "--dry-run"])
    assert missing.exit_code == 1 and "data.train_files is not set" in missing.output
    assert runner.invoke(app, ["train", "ppo_from_scratch", "--dry-run"]).exit_code == 2


@pytest.mark.parametrize(("override", "needle"), [
    ("algorithm.adv_estimator=remax", "algorithm.adv_estimator='remax' is not one agentgym's loop supports"),
    ("trainer.v1.sampler.custom_sampler.name=ReplayBuffer", "agentgym's loop needs one of its replay buffers"),
    ("actor_rollout_ref.rollout.multi_turn.max_tool_response_length=1024", "agentgym.max_observation_chars"),
    ("reward.custom_reward_function.path=./score.py", "never called for agentgym rows"),
])
def test_dry_run_refuses_verl_options_the_agentgym_loop_would_drop(data, override, needle):
    """Each was accepted before and then silently did nothing, or trained on a corrupted signal."""
    files = [f"data.train_files={data['grpo']}", f"data.val_files={data['grpo']}"]
    result = runner.invoke(app, ["train", "grpo", *files, *SMALL, override, "--dry-run"])
    assert result.exit_code == 1 and needle in result.output, result.output


@pytest.mark.parametrize("estimator", ["gae", "reinforce_plus_plus", "rloo"])
def test_dry_run_accepts_every_estimator_the_loop_is_tested_under(data, estimator):
    files = [f"data.train_files={data['grpo']}", f"data.val_files={data['grpo']}"]
    critic = ["critic.enable=true"] if estimator == "gae" else []
    result = runner.invoke(app, ["train", "grpo", *files, *SMALL, f"algorithm.adv_estimator={estimator}", *critic,
                                 "--dry-run"])
    assert "is not one agentgym's loop supports" not in result.output, result.output


def test_a_misspelt_override_gets_did_you_mean_in_the_dry_run_and_before_a_launch(monkeypatch):
    """Defect: Hydra's advice to add the unknown key (``+trainer.total_epoch=3``), from verl's
    trainer after the launch, instead of the key meant."""
    launched = []
    monkeypatch.setattr("os.execv", lambda *args: launched.append(args))
    dry = runner.invoke(app, ["train", "grpo", "trainer.total_epoch=3", "--dry-run"])
    assert dry.exit_code == 1 and "did you mean trainer.total_epochs?" in dry.output and "+trainer" not in dry.output
    real = runner.invoke(app, ["train", "grpo", "trainer.total_epoch=3"])
    assert real.exit_code == 2 and not launched
    assert real.output.strip().splitlines() == ["error: override='trainer.total_epoch=3' is not allowed; expected "
                                                "a key of the verl config: did you mean trainer.total_epochs?"]
    far = runner.invoke(app, ["train", "grpo", "trainer.zzzqqq=1"])
    assert far.exit_code == 2 and "has no trainer.zzzqqq" in far.output and not launched
    runner.invoke(app, ["train", "grpo", "trainer.nnodes=2", "--cfg", "job"])  # Hydra's own flags pass through
    assert len(launched) == 1 and launched[0][1][-3:] == ["trainer.nnodes=2", "--cfg", "job"]


def test_launch_command_runs_verls_entry_point():
    from agentgym.integrations.verl.train import launch_command, recipe_dir

    with recipe_dir() as folder:
        command = launch_command("planner_r1", ["trainer.nnodes=4"], folder)
        assert (folder / "planner_r1.yaml").is_file()
    assert command[1:3] == ["-m", "verl.trainer.main_ppo"]
    assert command[-3:] == [f"--config-path={folder}", "--config-name=planner_r1", "trainer.nnodes=4"]


def test_without_verl_train_says_how_to_install(monkeypatch):
    import sys

    from agentgym.errors import DependencyNotInstalled

    monkeypatch.setitem(sys.modules, "transfer_queue", None)  # as if verl's core extras were missing
    result = runner.invoke(app, ["train", "grpo", "--dry-run"])
    # raised to the console script, which exits with EXIT_MISSING_EXTRA (tests/cli/test_cli_exits.py)
    assert isinstance(result.exception, DependencyNotInstalled)
    assert "pip install 'agentgym-rl[verl]'" in str(result.exception)


def test_verls_own_entry_point_composes_the_recipe(data):
    """``python -m verl.trainer.main_ppo --config-path=<recipes> --config-name=prs_vspo --cfg job``:
    Hydra in verl's real entry point prints the config it would train with, without running."""
    import subprocess

    from agentgym.integrations.verl.train import launch_command, recipe_dir

    files = [f"data.train_files={data['prs_vspo']}", f"data.val_files={data['prs_vspo']}"]
    with recipe_dir() as folder:
        command = launch_command("prs_vspo", [*files, "--cfg", "job"], folder)
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "adv_estimator: vspo" in result.stdout and "default_agent_loop: agentgym" in result.stdout
    assert "name: VSPOReplayBuffer" in result.stdout


def test_agentgym_and_its_cli_import_without_verl_or_torch():
    import subprocess
    import sys

    code = ("import sys, agentgym, agentgym.cli, agentgym.integrations.verl.prepare, agentgym.integrations.verl.vspo\n"
            "heavy = [m for m in ('verl', 'torch', 'ray', 'transformers', 'transfer_queue') if m in sys.modules]\n"
            "assert not heavy, heavy")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
