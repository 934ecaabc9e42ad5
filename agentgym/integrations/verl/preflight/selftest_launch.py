"""``agentgym verl selftest``, part 3 (``--launch``): the bundled recipes through verl's real launcher.

``agentgym train prs_vspo`` and ``agentgym train planner_r1`` run as a user runs them (the CLI execs
verl's ``main_ppo``) with tiny overrides: the tiny model, a few prepared rows, one GPU asked for, Ray
and TransferQueue sized for 2 CPUs. Everything before the GPUs runs for real: Hydra composes the
recipe, Ray starts, the ``agentgym`` plugin registers, TransferQueue starts, verl builds its datasets
with the model's tokenizer, computes the run length and builds the recipe's replay buffer. The run
must stop exactly where verl asks Ray for GPUs ("Total available GPUs 0 ...") and at no earlier
error. GPUs are hidden from the child (``CUDA_VISIBLE_DEVICES=``), so a GPU machine stops there too.
The child's Ray is local to it (``RAY_ADDRESS`` unset) and ends with it; it runs in the selftest's
temporary folder, so Hydra's ``outputs/`` lands there.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["run_launch_check", "GPU_BOUNDARY"]

GPU_BOUNDARY = "ValueError: Total available GPUs 0 is less than total desired GPUs"
_TIMEOUT = 300  # seconds per recipe; a launch that hangs is a failure, not a wait


def _overrides(recipe: str, model_dir: Path, data: Path) -> list[str]:
    return [f"data.train_files={data}", f"data.val_files={data}", f"actor_rollout_ref.model.path={model_dir}",
            "data.train_batch_size=2", "actor_rollout_ref.actor.ppo_mini_batch_size=2", "trainer.nnodes=1",
            "trainer.n_gpus_per_node=1", "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
            "ray_kwargs.ray_init.num_cpus=2", "+ray_kwargs.ray_init.num_gpus=0", "data.dataloader_num_workers=0",
            "transfer_queue.backend.SimpleStorage.num_data_storage_units=1", "trainer.logger=[console]"]


def _data(folder: Path) -> dict[str, Path]:
    from agentgym.integrations.verl.prepare import prepare_rows, write_parquet

    return {
        "prs_vspo": write_parquet(prepare_rows("SearchQA-v0", split="train", limit=4), folder / "sq.parquet"),
        "planner_r1": write_parquet(prepare_rows("TravelPlanner-v0", split="train", limit=4,
                                                 env_kwargs={"action_format": "json"}), folder / "tp.parquet"),
    }


def _final_error(output: str) -> str | None:
    """The exception the launch ended with: the last ``SomeError: ...`` line at the start of a line."""
    for line in reversed(output.splitlines()):
        head = line.split(":", 1)[0].strip()
        if head.endswith(("Error", "Exception", "Aborted", "Interrupt")) and " " not in head:
            return line.strip()
    return None


def launch_one(recipe: str, model_dir: Path, data: Path, workdir: Path) -> dict[str, Any]:
    """Run ``agentgym train RECIPE`` to the GPU boundary; raises ``AssertionError`` on any other end."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update({"CUDA_VISIBLE_DEVICES": "", "HYDRA_FULL_ERROR": "1", "TOKENIZERS_PARALLELISM": "false"})
    if env.get("PYTHONPATH"):  # the child runs elsewhere: keep a relative PYTHONPATH pointing where it did
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    command = [sys.executable, "-m", "agentgym.cli", "train", recipe, *_overrides(recipe, model_dir, data)]
    started = time.perf_counter()
    try:
        # in the selftest's temporary folder: Hydra writes its outputs/ folder there, not in the user's
        done = subprocess.run(command, capture_output=True, text=True, timeout=_TIMEOUT, env=env, cwd=workdir)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"agentgym train {recipe} did not reach GPU allocation within {_TIMEOUT}s") from exc
    seconds = time.perf_counter() - started
    output = done.stdout + done.stderr
    error = _final_error(output)
    if done.returncode == 0 or error is None or not error.startswith(GPU_BOUNDARY):
        tail = "\n".join(output.splitlines()[-25:])
        raise AssertionError(f"agentgym train {recipe} ended before GPU allocation (exit {done.returncode}, "
                             f"{error or 'no error line'}):\n{tail}")
    steps = [line.rsplit(":", 1)[-1].strip() for line in output.splitlines() if "Total training steps:" in line]
    return {"seconds": seconds, "error": error, "total_training_steps": float(steps[-1]) if steps else -1.0}


def run_launch_check(model_dir: Path, folder: Path, *, echo: Any = print) -> dict[str, float]:
    """Part 3 of the selftest: both recipes, one after the other (each starts its own Ray)."""
    figures: dict[str, float] = {}
    for recipe, data in _data(folder).items():
        got = launch_one(recipe, model_dir, data, folder)
        figures[f"{recipe}/seconds"] = got["seconds"]
        figures[f"{recipe}/total_training_steps"] = got["total_training_steps"]
        echo(f"launch {recipe}: verl main_ppo composed the recipe, started Ray + TransferQueue, built the datasets "
             f"({got['total_training_steps']:.0f} training steps) and the replay buffer, then stopped at "
             f"\"{got['error'][len('ValueError: '):]}\" in {got['seconds']:.0f}s")
    echo("launch path OK up to GPU allocation")
    return figures
