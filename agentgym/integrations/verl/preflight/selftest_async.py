"""``agentgym verl selftest``, async part: partial rollouts and the async replay buffer, on CPU.

verl's own partial-rollout client, ``FullyAsyncLLMServerClient`` (after an abort it resends the
prompt plus the tokens so far with the caller's sampling params and stop strings, and reports
``min/max_global_steps``), runs over ``ScriptedServer``, a stand-in for vLLM (which needs a GPU):
it plays scripted SearchQA turns with vLLM's stop-string rule (a stop string counts only in the
text the request itself generated) and answers ``stop_reason="aborted"`` once per turn, two tokens
before the end of the turn's action, as a weight update would (its weight version then goes up).

1. The ``agentgym`` loop plays the same rows over the aborting client and over the uninterrupted
   server: tokens, loss mask, log-probs and reward must be identical. The abort splits the
   action's closing tag, so the resumed request runs past the action; the loop must cut it at the
   first action outside ``<think>``, exactly where the uninterrupted server stopped.
2. On a local Ray with the real TransferQueue, verl's ``AgentLoopWorkerTQ`` writes the groups and
   the ``prs_vspo_async`` recipe's buffer (``VSPOReplayBufferAsync``, built by verl's
   ``PPOTrainer._build_replay_buffer``) samples two steps. Step 1: the zero-variance groups are
   evicted, exactly as many fresh prompts submitted, their slots filled by copies. Step 3: the
   groups more than ``max_off_policy_threshold`` versions old are evicted and exactly as many
   prompts submitted; the step trains on fresh groups only. The counts are printed.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym.integrations.verl._guard import require_verl

require_verl()

from verl.workers.rollout.llm_server import FullyAsyncLLMServerClient, LLMServerClient  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

from agentgym.integrations.stops import first_action_end, tokens_through  # noqa: E402

__all__ = ["ScriptedServer", "PartialRolloutClient", "run_async_check"]

_WRONG = "nobody knows"
_STOPS = ("</search>", "</answer>")


@dataclass
class _Turn:
    number: int
    tokens: list[int]
    abort_at: int
    cursor: int = 0
    expected_prompt: int = 0
    aborted: bool = False


@dataclass
class _Plans:
    """Each question's final answers, one per session in the order the sessions start."""

    answers: dict[str, list[str]]
    started: dict[str, int] = field(default_factory=dict)

    def next_answer(self, prompt: str) -> str:
        question = next((q for q in self.answers if q in prompt), None)
        if question is None:
            return _WRONG
        k = self.started.get(question, 0)
        self.started[question] = k + 1
        return self.answers[question][k % len(self.answers[question])]


class ScriptedServer(LLMServerClient):
    """verl's ``generate`` over scripted turns (a stand-in for vLLM, which needs a GPU): turn 0 muses
    about an answer inside ``<think>``, searches and invents an ``<information>`` block; turn 1
    answers (the plan's answer for that session) and adds a word. ``abort=True``: each turn's
    request that reaches two tokens before the action's end stops there as ``"aborted"``."""

    def __init__(self, config: Any, *, tokenizer: Any, plans: dict[str, list[str]], abort: bool,
                 load_balancer_handle: Any = None) -> None:
        super().__init__(config=config, load_balancer_handle=load_balancer_handle)
        self.tokenizer, self.plans, self.abort = tokenizer, _Plans(plans), abort
        self.version, self.aborts, self.requests, self.ran_past = 0, 0, 0, 0
        self._turns: dict[str, _Turn] = {}
        self._answers: dict[str, str] = {}

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any],
                       **kwargs: Any) -> TokenOutput:
        self.requests += 1
        turn = self._turn(request_id, prompt_ids)
        stops = [s for s in sampling_params.get("stop") or () if s]
        limit = min(len(turn.tokens), turn.cursor + int(sampling_params.get("max_tokens") or len(turn.tokens)))
        new: list[int] = []
        reason = "length"
        while turn.cursor < limit:
            if self.abort and not turn.aborted and turn.cursor == turn.abort_at:
                turn.aborted, reason = True, "aborted"
                break
            new.append(turn.tokens[turn.cursor])
            turn.cursor += 1
            if any(s in self.tokenizer.decode(new) for s in stops):
                reason = "stop"
                break
            if new[-1] == self.tokenizer.eos_token_id:  # past the action: the abort split its closing tag
                reason, self.ran_past = "stop", self.ran_past + (turn.aborted and turn.abort_at < len(turn.tokens))
                break
        turn.expected_prompt = len(prompt_ids) + len(new)
        output = TokenOutput(token_ids=new, log_probs=[-0.01 * (1 + (turn.cursor - len(new) + i) % 13)
                                                       for i in range(len(new))],
                             stop_reason=reason, num_preempted=0, extra_fields={"global_steps": self.version})
        if reason == "aborted":
            self.aborts += 1
            self.version += 1  # the weights were updated while the request was paused
        return output

    def _turn(self, request_id: str, prompt_ids: list[int]) -> _Turn:
        turn = self._turns.get(request_id)
        if turn is not None and len(prompt_ids) == turn.expected_prompt:
            return turn  # a resume: the prompt plus everything generated so far
        number = 0 if turn is None else turn.number + 1
        if number == 0:
            self._answers[request_id] = self.plans.next_answer(self.tokenizer.decode(prompt_ids))
        text = _script(number, self._answers[request_id], self.tokenizer.decode(prompt_ids))
        tokens = [*self.tokenizer.encode(text, add_special_tokens=False), self.tokenizer.eos_token_id]
        end = first_action_end(text, _STOPS)
        abort_at = tokens_through(tokens, self.tokenizer.decode, end) - 2 if end else len(tokens)
        self._turns[request_id] = _Turn(number, tokens, abort_at)
        return self._turns[request_id]


def _script(turn: int, answer: str, prompt: str) -> str:
    if turn == 0:
        question = prompt.rsplit("Question:", 1)[-1].split("<|im_end|>")[0].strip()[:80]
        return (f"<think>Is it <answer>{_WRONG}</answer>? Better check.</think>\n<search>{question}</search>\n"
                "<information>a passage I made up</information>")
    return f"<answer>{answer}</answer> That is all."


class PartialRolloutClient(FullyAsyncLLMServerClient, ScriptedServer):
    """verl's partial-rollout client over the scripted server: its resume loop is verl's own."""


# -- 1. the resumed turn is cut as the uninterrupted one ---------------------------------------------
def _make_loop(config: Any, tokenizer: Any, server: Any) -> Any:
    import hydra
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap, _agent_loop_registry
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from agentgym.integrations.verl import plugin  # noqa: F401  (registers the loop)

    return hydra.utils.instantiate(
        _agent_loop_registry["agentgym"], trainer_config=DictConfigWrap(config), server_manager=server,
        tokenizer=tokenizer, processor=None, hf_model_type=None, dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(config.data), tools=ToolListWrap([]))


def _play_rows(config: Any, tokenizer: Any, server: Any, rows: list[dict[str, Any]], n: int) -> list[Any]:
    sampling = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}

    async def one(row: dict[str, Any]) -> Any:
        return await _make_loop(config, tokenizer, server).run(
            sampling, raw_prompt=row["prompt"], extra_info=row["extra_info"], index=row["extra_info"]["index"],
            data_source=row["data_source"], reward_model=row["reward_model"], agent_name=row["agent_name"],
            global_steps=1)

    async def sessions() -> list[Any]:  # one after another: the sessions' answers follow their order
        return [await one(row) for row in rows for _ in range(n)]

    return asyncio.run(sessions())


def _check_partial_rollouts(config: Any, tokenizer: Any, rows: list[dict[str, Any]], plans: dict[str, list[str]],
                            n: int) -> dict[str, float]:
    plain = ScriptedServer(config, tokenizer=tokenizer, plans=plans, abort=False)
    aborting = PartialRolloutClient(config=config, tokenizer=tokenizer, plans=plans, abort=True)
    expected = _play_rows(config, tokenizer, plain, rows, n)
    resumed = _play_rows(config, tokenizer, aborting, rows, n)
    for i, (a, b) in enumerate(zip(expected, resumed, strict=True)):
        summary = a.extra_fields["agentgym"]
        if summary["stop_reason"] != "terminated":
            raise AssertionError(f"session {i} ended by {summary['stop_reason']}, not its answer ({summary['error']})")
        for name in ("response_ids", "response_mask", "response_logprobs", "reward_score", "num_turns"):
            if getattr(a, name) != getattr(b, name):
                raise AssertionError(f"session {i}: {name} differs once turns are aborted and resumed")
        span = b.extra_fields["max_global_steps"] - b.extra_fields["min_global_steps"]
        if span < 1:
            raise AssertionError(f"session {i}: the resumed trajectory reports one weight version ({span=})")
    if aborting.aborts < 2 * len(expected) or aborting.ran_past < len(expected):
        raise AssertionError(f"{aborting.aborts} aborts, {aborting.ran_past} resumed requests past the action, "
                             f"for {len(expected)} two-turn sessions: the abort no longer splits the closing tag")
    return {"sessions": float(len(expected)), "aborts": float(aborting.aborts), "ran_past": float(aborting.ran_past)}


# -- 2. the async buffer on the real TransferQueue ----------------------------------------------------
class _Rollouts:
    """Prompts submitted to verl's TQ worker (in this process) as ``PPOTrainer`` submits them."""

    def __init__(self, config: Any, client: Any, rows: list[dict[str, Any]], loop: asyncio.AbstractEventLoop) -> None:
        from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopWorkerTQ

        self.worker = AgentLoopWorkerTQ.__ray_actor_class__(config, llm_client=client)
        self.rows, self.loop, self.step = list(rows), loop, 1
        self.submitted: dict[str, int] = {}  # uid: the step it was submitted in
        self.refills: list[int] = []

    def submit(self, count: int) -> list[str]:
        import transfer_queue as tq

        from agentgym.integrations.verl.preflight.selftest_tq import _batch
        from verl.utils import tensordict_utils as tu

        rows, self.rows = self.rows[:count], self.rows[count:]
        uids = [f"async{uuid.uuid4().hex[:8]}" for _ in rows]
        tq.kv_batch_put(keys=uids, partition_id="train",
                        tags=[{"is_prompt": True, "status": "pending", "global_steps": self.step} for _ in uids])
        batch = _batch(rows, uids)
        tu.assign_non_tensor_data(batch, "global_steps", self.step)
        asyncio.run_coroutine_threadsafe(self.worker.generate_sequences(batch), self.loop).result()
        self.submitted.update(dict.fromkeys(uids, self.step))
        return uids

    def refill(self, count: int) -> int:
        """The trainer's ``refill_fn``: exactly ``count`` fresh prompts, called from the buffer's thread."""
        self.refills.append(count)
        self.submit(count)
        return count

    async def drain(self) -> None:
        while self.worker.background_tasks:
            await asyncio.gather(*list(self.worker.background_tasks), return_exceptions=True)


def _buffer(config: Any, refill: Any) -> Any:
    from verl.trainer.ppo.v1.trainer_colocate_async import PPOTrainerColocateAsync

    trainer = object.__new__(PPOTrainerColocateAsync)  # only what _build_replay_buffer reads: no workers
    trainer.config, trainer.trainer_mode = config, "colocate_async"
    trainer._add_prompts_to_generate = refill
    buffer = trainer._build_replay_buffer()
    buffer.poll_interval = 0.05
    return buffer


async def _two_steps(config: Any, client: Any, rows: list[dict[str, Any]]) -> dict[str, Any]:
    rollouts = _Rollouts(config, client, rows, asyncio.get_running_loop())
    buffer = _buffer(config, rollouts.refill)
    first = await asyncio.to_thread(rollouts.submit, 3)  # varied, all wrong, all right
    await rollouts.drain()
    batch1, metrics1 = await asyncio.to_thread(buffer.sample, 1, "train", 3)
    late = await asyncio.to_thread(rollouts.submit, 1)  # drawn at step 1, finished after it was sampled
    await rollouts.drain()
    rollouts.step = 3
    refilled = len(rollouts.refills)
    batch3, metrics3 = await asyncio.to_thread(buffer.sample, 3, "train", 2)
    await rollouts.drain()
    return {"first": first, "late": late, "rollouts": rollouts, "refilled_before_step3": refilled,
            "steps": [(batch1, metrics1), (batch3, metrics3)]}


def _check_steps(run: dict[str, Any]) -> dict[str, float]:
    from agentgym.integrations.verl.vspo import copy_index

    (batch1, m1), (batch3, m3) = run["steps"]
    rollouts, first = run["rollouts"], run["first"]
    groups1 = [key.split("_")[0] for key in batch1.keys]
    if {g.split("~")[0] for g in groups1} != {first[0]} or sum(copy_index(g) > 0 for g in set(groups1)) != 2:
        raise AssertionError(f"step 1 should train on {first[0]} and two copies of it, got {sorted(set(groups1))}")
    if m1.get("vspo/evicted_groups") != 2 or rollouts.refills[:1] != [2]:
        raise AssertionError(f"step 1: {m1.get('vspo/evicted_groups')} zero-variance groups evicted, "
                             f"refills {rollouts.refills[:1]} (expected 2 and [2])")
    spans = [tag["max_global_steps"] - tag["min_global_steps"] for tag in batch1.tags]
    if min(spans) < 1:
        raise AssertionError(f"step 1's trajectories do not report their weight versions ({spans=})")
    stale = int(m3.get("training/off_policy/evicted_samples", 0))
    expected_stale = 1 + 2  # the late group and step 1's two refills, all drawn at step 1
    if stale != expected_stale or rollouts.refills[run["refilled_before_step3"]:] != [expected_stale]:
        raise AssertionError(f"step 3: {stale} stale groups evicted, refills {rollouts.refills} "
                             f"(expected {expected_stale} and [..., {expected_stale}])")
    trained = {key.split("_")[0] for key in batch3.keys}
    if any(rollouts.submitted.get(uid) != 3 for uid in trained):
        raise AssertionError(f"step 3 trains on groups drawn before it: {sorted(trained)}")
    if m3.get("agentgym/schedule_lag/max") != 0.0:
        raise AssertionError(f"step 3's schedule lag is {m3.get('agentgym/schedule_lag/max')}, expected 0")
    return {"zero_variance_evicted": float(m1["vspo/evicted_groups"]), "copies": float(m1["vspo/copies"]),
            "stale_evicted": float(stale), "refilled": float(sum(rollouts.refills)),
            "refill_calls": float(len(rollouts.refills))}


def _plans(rows: list[dict[str, Any]], n: int) -> dict[str, list[str]]:
    from agentgym.integrations.verl.preflight.dryrun import gold_answer

    gold = [gold_answer(row) or "" for row in rows]
    kinds = [[gold[0]] + [_WRONG] * (n - 1), [_WRONG] * n, [gold[2]] * n]  # varied, all wrong, all right
    kinds += [[gold[i]] + [_WRONG] * (n - 1) for i in range(3, len(rows))]  # the late group and the refills
    return {row["extra_info"]["question"]: answers for row, answers in zip(rows, kinds, strict=True)}


def _config(model_dir: Path, n: int) -> Any:
    from agentgym.integrations.verl.train import compose_recipe

    return compose_recipe("prs_vspo_async", [
        f"actor_rollout_ref.model.path={model_dir}", "actor_rollout_ref.rollout.name=vllm",
        f"actor_rollout_ref.rollout.n={n}", "actor_rollout_ref.rollout.calculate_log_probs=true",
        "data.train_batch_size=3", "data.max_prompt_length=4096", "data.max_response_length=1024",
        # agentgym's protocol: its turn cut skips actions inside <think>, which the scripted turns exercise
        # (Search-R1's reads tags in thoughts as actions: the first turn's musing would be its answer).
        "agentgym.env_kwargs.protocol=agentgym",
        "agentgym.max_turns=2", "agentgym.max_observation_chars=1000", "trainer.n_gpus_per_node=1",
        "trainer.v1.sampler.max_off_policy_threshold=2", "actor_rollout_ref.rollout.tensor_model_parallel_size=1"])


def run_async_check(model_dir: Path, tokenizer: Any, *, n: int = 2, echo: Any = print) -> dict[str, float]:
    """The async part (module docstring); Ray is always shut down here."""
    import ray
    import transfer_queue as tq
    from omegaconf import OmegaConf

    from agentgym.integrations.verl.prepare import prepare_rows

    started = time.perf_counter()
    rows = prepare_rows("SearchQA-v0", split="train", limit=9)  # 3 groups, a late one, 5 refills
    config, plans = _config(model_dir, n), _plans(rows, n)
    figures = _check_partial_rollouts(config, tokenizer, rows[:2], plans, n)
    echo(f"partial rollouts: {int(figures['sessions'])} SearchQA sessions through verl's "
         f"FullyAsyncLLMServerClient, {int(figures['aborts'])} turns aborted inside the action's closing tag and "
         f"resumed, {int(figures['ran_past'])} resumed requests ran past the action; tokens, loss mask, "
         f"log-probs and rewards identical to the uninterrupted run (the loop cut them at their first action)")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        tq.init(OmegaConf.create({"backend": {"SimpleStorage": {"num_data_storage_units": 1}}}))
        client = PartialRolloutClient(config=config, tokenizer=tokenizer, plans=_plans(rows, n), abort=True)
        figures.update(_check_steps(asyncio.run(_two_steps(config, client, rows))))
    finally:
        try:
            tq.close()
        finally:
            ray.shutdown()
    figures["seconds"] = time.perf_counter() - started
    echo(f"async buffer (VSPOReplayBufferAsync on the real TransferQueue, colocate_async): step 1 evicted "
         f"{int(figures['zero_variance_evicted'])} zero-variance groups and filled their slots with "
         f"{int(figures['copies'])} copies; step 3 evicted {int(figures['stale_evicted'])} groups older than "
         f"max_off_policy_threshold=2; {int(figures['refilled'])} prompts refilled in "
         f"{int(figures['refill_calls'])} calls, exactly one per eviction; Ray shut down")
    return figures
