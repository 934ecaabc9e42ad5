"""A new env needs one class and one registration line; then it is served, bounded, prepared for
verl and played by TRL, with no list of envs anywhere else to add it to.

``CapitalEnv`` is a third-party env as its author would write it: dict tasks, a tag answer, its
turn cut and client kwargs declared on the class.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium
import pytest

from agentgym.core import StepInfo, TextEnv, TurnCut
from agentgym.core.tasks import pick_task
from agentgym.errors import ConfigError

ENV_ID = "ThirdParty/Capital-v0"
TASKS = [{"id": f"c-{i}", "text": country, "answer": city} for i, (country, city) in
         enumerate([("France", "Paris"), ("Peru", "Lima"), ("Kenya", "Nairobi"), ("Japan", "Tokyo")])]


def _task(row: Any) -> dict[str, Any]:
    if isinstance(row, Mapping) and {"text", "answer"} <= set(row):
        return {"id": "inline", **row}
    raise ConfigError("task", row, "a dict with 'text' and 'answer'")


class CapitalEnv(TextEnv):
    """Name a country's capital as ``<answer>city</answer>``."""

    turn_cut = TurnCut(stops=("</answer>",))
    client_kwargs = ("tasks",)

    def __init__(self, *, tasks: str | list | None = None, max_turns: int = 2, render_mode: str | None = None) -> None:
        super().__init__(max_turns=max_turns, max_action_chars=500, render_mode=render_mode)
        if isinstance(tasks, str):  # a JSONL file: what `agentgym verl prepare --tasks` hands over
            tasks = [json.loads(line) for line in Path(tasks).read_text(encoding="utf-8").splitlines()]
        self.tasks = [_task(row) for row in (TASKS if tasks is None else tasks)]
        self._ids = {task["id"]: i for i, task in enumerate(self.tasks)}

    def on_reset(self, options: dict[str, Any]) -> tuple[str, StepInfo]:
        self.task = pick_task(options, self.tasks, self._ids, self.np_random, _task)
        return f"The capital of {self.task['text']}? Reply <answer>city</answer>.", self._info(0)

    def on_step(self, action: str) -> tuple[str, float, bool, StepInfo]:
        _, tag, rest = action.partition("<answer>")
        if not tag:
            return self.transition("Reply <answer>city</answer>.", info=self._info(self.turn, action="invalid"))
        answer = rest.partition("</answer>")[0].strip()
        solved = float(answer == self.task["answer"])
        return self.termination("Done.", solved, info=self._info(self.turn, action="answer", answer=answer,
                                                                 terminated_reason="answer"))

    def _info(self, turn: int, **fields: Any) -> StepInfo:
        return StepInfo(turn=turn, task_id=self.task["id"], **fields)


gymnasium.register(ENV_ID, entry_point=CapitalEnv)


@pytest.fixture(scope="module")
def server():
    pytest.importorskip("uvicorn", reason="serving needs uvicorn (pip install 'agentgym-rl[server]')")
    from agentgym.server import ServerConfig, create_app
    from agentgym.server.live_server import LiveServer

    # Threads: the worker processes would import this test module by a name pytest chose.
    config = ServerConfig(tokens=("t",), env_ids=(ENV_ID,), env_calls="threads")
    with LiveServer(create_app(config)) as live:
        yield live


def test_it_is_served_with_its_turn_cut_and_client_kwargs(server):
    from agentgym.remote import RemoteEnv

    env = RemoteEnv(server.url, ENV_ID, token="t", env_kwargs={"tasks": TASKS[:2], "max_turns": 3})
    try:
        assert env.turn_cut == CapitalEnv.turn_cut and env.description.turn_cut == CapitalEnv.turn_cut
        observation, info = env.reset(options={"task_id": "c-1"})
        assert "Peru" in observation and info["task_id"] == "c-1"
        assert env.step("<answer>Lima</answer>")[1:3] == (1.0, True)
    finally:
        env.close()


@pytest.mark.parametrize("env_kwargs, options, field", [
    ({"data_dir": "/etc"}, None, "data_dir"),  # not among its client_kwargs: the operator's
    ({"tasks": [{"text": "x" * 20_000, "answer": "y"}]}, None, "tasks"),  # a string past the limit
    ({}, {"task": {"text": "France", "answer": "P" * 70_000}}, "options.task"),  # past one task's bytes
    ({}, {"task": {"a": {"b": {"c": {"d": {"e": {"f": {"g": 1}}}}}}}}, "options.task"),  # too deep
    ({}, {"seed_dir": "/etc"}, "options.seed_dir"),  # not among its reset_options
])
def test_its_clients_are_bounded_like_a_bundled_env_s(server, env_kwargs, options, field):
    from agentgym.remote import RemoteEnv

    with pytest.raises(ConfigError) as refused:
        env = RemoteEnv(server.url, ENV_ID, token="t", env_kwargs=env_kwargs)
        try:
            env.reset(options=options)
        finally:
            env.close()
    assert refused.value.field == field


def test_it_is_prepared_for_verl_from_a_task_file(tmp_path):
    from agentgym.integrations.verl.prepare import prepare_rows

    path = tmp_path / "capitals.jsonl"
    path.write_text("".join(json.dumps(task) + "\n" for task in TASKS), encoding="utf-8")
    rows = prepare_rows(f"{__name__}:{ENV_ID}", tasks=str(path))  # a Ray worker imports the module first
    assert [row["extra_info"]["task_id"] for row in rows] == [task["id"] for task in TASKS]
    extra = rows[2]["extra_info"]  # the agent loop rebuilds the env from the row alone
    env = gymnasium.make(extra["env_id"], **json.loads(extra["env_kwargs"]))
    assert env.reset(options={"task_index": extra["task_index"]})[0] == rows[2]["prompt"][-1]["content"]
    from agentgym.integrations.verl.config import EnvTask

    task = EnvTask.from_extra_info(extra)  # what the agent loop reads from each row, on a Ray worker
    assert (task.env_id, task.reset_options) == (f"{__name__}:{ENV_ID}", {"task_index": 2})
    assert task.make().reset(options=task.reset_options)[0] == rows[2]["prompt"][-1]["content"]


def test_it_is_played_by_trls_grpo_trainer(tmp_path):
    pytest.importorskip("trl")
    from agentgym.integrations.trl.train import TrlRecipe, build_run

    recipe = TrlRecipe.model_validate({
        "env": {"id": ENV_ID}, "tasks": {"count": 4}, "rollout": {"max_turns": 2, "response_length": 24},
        "model": {"hidden_size": 16, "layers": 1}, "grpo": {"use_cpu": True, "report_to": [], "seed": 0}})
    trainer, rollout = build_run(recipe, grpo={"output_dir": str(tmp_path), "per_device_train_batch_size": 4,
                                               "num_generations": 2, "max_completion_length": 24, "max_steps": 1,
                                               "disable_tqdm": True, "save_strategy": "no"})
    prompts = [trainer.train_dataset[i // 2]["prompt"] for i in range(4)]
    out = rollout(prompts, trainer)
    assert [episode["env_id"] for episode in out["episode"]] == [ENV_ID] * 4
    for ids, mask in zip(out["completion_ids"], out["env_mask"]):
        assert len(ids) == len(mask) and 1 in mask
    trainer.train()  # TRL's own loss and optimizer step over the env's rollouts
    assert trainer.state.global_step == 1
