"""``agentgym train`` with a TRL recipe, as a user runs it: what a run keeps on disk, resuming, what
it prints, and a dry run that fails exactly where the run would.

Real TRL 1.16 ``GRPOTrainer`` runs on CPU (2 steps of 1 prompt x 4 episodes) over the tiny Qwen2
and word-level tokenizer of ``model.path: null``, driven through the CLI in-process. One task, so
that a resumed run's data order is the uninterrupted run's (TRL's sampler draws later epochs'
order afresh on resume) and the two can be compared exactly.
"""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest
import yaml
from typer.testing import CliRunner

pytest.importorskip("trl")

from agentgym.cli import app  # noqa: E402
from agentgym.errors import ConfigError  # noqa: E402
from agentgym.integrations.trl.train import TrlRecipe, load_model, load_recipe, load_tokenizer, train  # noqa: E402

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
runner = CliRunner()
SMALL = ["tasks.count=1", "grpo.per_device_train_batch_size=4", "grpo.num_generations=4", "grpo.max_steps=2",
         "grpo.save_steps=1", "grpo.save_total_limit=2"]
STEP_LINE = re.compile(r"^step +(\d+)/(\d+)  reward ")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """``agentgym train trl_searchqa`` for 2 steps, a checkpoint after each."""
    folder = tmp_path_factory.mktemp("trl-run") / "run"
    overrides = [*SMALL, f"grpo.output_dir={folder}"]
    result = runner.invoke(app, ["train", "trl_searchqa", *overrides])
    assert result.exit_code == 0, result.output
    return folder, overrides, result.output


def _steps(folder):
    return json.loads((folder / "history.json").read_text())["steps"]


def test_a_run_keeps_its_model_tokenizer_history_and_recipe(trained):
    """Defect: every recipe said save_strategy "no" and train() saved nothing."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, overrides, output = trained
    assert f"saved in {folder}" in output
    model, tokenizer = AutoModelForCausalLM.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)
    recipe = load_recipe("trl_searchqa", overrides)
    assert tokenizer.get_vocab() == load_tokenizer(recipe).get_vocab()
    initial = load_model(recipe, tokenizer)
    assert not torch.equal(model.model.embed_tokens.weight, initial.model.embed_tokens.weight)  # trained weights
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "Question: where is Skei?"}],
                                           add_generation_prompt=True, return_tensors="pt", return_dict=True)
    out = model.generate(**prompt, max_new_tokens=4, do_sample=False)
    assert out.shape[1] > prompt["input_ids"].shape[1] and isinstance(tokenizer.decode(out[0]), str)

    steps = _steps(folder)
    assert [s["step"] for s in steps] == [1, 2] and [s["training_step"] for s in steps] == [0, 1]
    for entry in steps:
        assert 0.0 <= entry["reward"] <= 2.0 and set(entry["terms"]) == {"format", "tool_call_validity", "exact_match"}
        assert "loss" in entry["trl"] and "agentgym/outcome" in entry["trl"]  # TRL's metrics, always kept
        assert abs(sum(entry["actions"].values()) - 1.0) < 1e-9
    assert TrlRecipe.model_validate(yaml.safe_load((folder / "recipe.yaml").read_text())) == recipe
    assert sorted(p.name for p in folder.glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-2"]


def test_the_run_prints_agentgyms_step_lines_only_and_counts_steps_one_way(trained):
    """Defects: TRL's ~1,000-character metrics dict after every step line (31 of 62 lines); step
    lines 1-based, the summary 0-based."""
    _, _, output = trained
    lines = output.strip().splitlines()
    assert not any("'loss'" in line or "grad_norm" in line or "it/s]" in line for line in lines), output
    steps = [STEP_LINE.match(line).groups() for line in lines if STEP_LINE.match(line)]
    assert steps == [("1", "2"), ("2", "2")]
    summary = next(line for line in lines if "mean reward" in line)
    assert re.search(r"at step 1 -> [\d.]+ at step 2 ", summary), summary
    assert len(lines) <= 8 and max(map(len, lines)) < 200, output


def test_resume_continues_a_stopped_run_from_its_last_checkpoint(trained, tmp_path):
    """A run stopped after its first checkpoint, resumed: only step 2 is trained, and it is the
    uninterrupted run's step 2 (weights, optimizer, RNG and the history come from checkpoint-1)."""
    from safetensors.torch import load_file

    folder, overrides, _ = trained
    stopped = tmp_path / "run"
    shutil.copytree(folder, stopped)
    shutil.rmtree(stopped / "checkpoint-2")
    (stopped / "model.safetensors").unlink()
    resumed = [*SMALL, f"grpo.output_dir={stopped}"]
    result = runner.invoke(app, ["train", "trl_searchqa", *resumed, "--resume", "--verbose"])
    assert result.exit_code == 0, result.output
    assert [STEP_LINE.match(line).group(1) for line in result.output.splitlines() if STEP_LINE.match(line)] == ["2"]
    assert "'loss'" in result.output  # --verbose: TRL's own metrics too
    whole, again = _steps(folder), _steps(stopped)
    assert [s["step"] for s in again] == [1, 2]
    assert again[0] == whole[0] and again[1]["actions"] == whole[1]["actions"]
    for metric in ("loss", "grad_norm", "learning_rate"):  # the same batch, weights, optimizer and schedule
        assert again[1]["trl"][metric] == pytest.approx(whole[1]["trl"][metric], rel=1e-6, abs=1e-9), metric
    final, expected = load_file(stopped / "model.safetensors"), load_file(folder / "model.safetensors")
    assert final.keys() == expected.keys()
    assert all((final[k] - expected[k]).abs().max() < 1e-6 for k in final)


def test_resume_without_a_checkpoint_is_one_line_before_anything_loads(tmp_path, monkeypatch):
    monkeypatch.setattr("agentgym.integrations.trl.tiny.tiny_qwen2", _no_weights)
    result = runner.invoke(app, ["train", "trl_searchqa", f"grpo.output_dir={tmp_path}", "--resume"])
    assert result.exit_code == 2 and "--resume=" in result.output and "checkpoint-N" in result.output
    dry = runner.invoke(app, ["train", "trl_searchqa", f"grpo.output_dir={tmp_path}", "--resume", "--dry-run"])
    assert dry.exit_code == 1 and "problem: resume: --resume=" in dry.output


# -- the dry run tells the truth, and the run fails where the dry run does -----------------------
def _no_weights(*args, **kwargs):
    raise AssertionError("model weights were loaded")


def _dry(*args):
    return runner.invoke(app, ["train", *args, "--dry-run"])


def test_the_planner_r1_recipe_passes_its_dry_run_as_shipped():
    """Defect: `total_steps=None is not allowed`, although the recipe sets grpo.max_steps: 300."""
    result = _dry("trl_planner_r1")
    assert result.exit_code == 0, result.output
    assert "total_steps = 300" in result.output and result.output.strip().endswith("trl_planner_r1: ready to train")


def test_a_grpo_field_of_the_wrong_type_fails_the_dry_run():
    """Defect: ``grpo.max_steps=abc --dry-run`` said "ready to train"."""
    result = _dry("trl_searchqa", "grpo.max_steps=abc")
    assert result.exit_code == 1 and "grpo.max_steps='abc' is not allowed; expected int" in result.output


@pytest.fixture(scope="module")
def bpe_model(tmp_path_factory):
    """A local model folder whose byte-level BPE splits ``<search>`` into several tokens."""
    from agentgym.integrations.verl.preflight.selftest import build_tiny_model

    folder = tmp_path_factory.mktemp("bpe-model")
    build_tiny_model(folder, ["Question: where is Skei? Answer with a search."] * 20)
    return folder


def test_a_tokenizer_that_splits_the_constraints_tags_fails_the_dry_run_and_the_run_with_the_fix(
        bpe_model, monkeypatch):
    """Defect: the dry run said "ready"; the run failed after 137 s, the fix only in a YAML comment."""
    result = _dry("trl_searchqa", f"model.path={bpe_model}")
    assert result.exit_code == 1
    problem = next(line for line in result.output.splitlines() if line.startswith("problem:"))
    assert "'<search>'" in problem and "rollout.constraint=null" in problem
    assert _dry("trl_searchqa", f"model.path={bpe_model}", "rollout.constraint=null").exit_code == 0

    monkeypatch.setattr("transformers.AutoModelForCausalLM.from_pretrained", _no_weights)
    with pytest.raises(ConfigError, match=r"^rollout\.constraint\.tags='<search>'.*rollout\.constraint=null"):
        train("trl_searchqa", [f"model.path={bpe_model}"], echo=lambda line: None)


def test_an_override_typo_fails_the_run_in_one_line_before_any_model_loads(monkeypatch):
    """Defect: ``grpo.max_step=5`` ended after 101 s in a 51-line traceback from GRPOConfig."""
    monkeypatch.setattr("agentgym.integrations.trl.tiny.tiny_qwen2", _no_weights)
    result = runner.invoke(app, ["train", "trl_searchqa", "grpo.max_step=5"])
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [
        "error: grpo.max_step=5 is not allowed; expected a trl.GRPOConfig field: did you mean grpo.max_steps?"]
    typo = runner.invoke(app, ["train", "trl_searchqa", "model.hiden_size=32"])
    assert typo.exit_code == 2 and "did you mean model.hidden_size?" in typo.output


def test_a_missing_model_folder_is_agentgyms_message_not_the_hubs(monkeypatch):
    """Defect: ``model.path=/nonexistent`` gave huggingface_hub's "Repo id must be in the form"."""
    monkeypatch.setattr("transformers.AutoModelForCausalLM.from_pretrained", _no_weights)
    for args in (["model.path=/nonexistent"], ["model.path=/nonexistent", "--dry-run"]):
        result = runner.invoke(app, ["train", "trl_searchqa", *args])
        assert result.exit_code in (1, 2), result.output
        assert "model.path='/nonexistent'" in result.output and "no such folder" in result.output
        assert "Repo id" not in result.output
