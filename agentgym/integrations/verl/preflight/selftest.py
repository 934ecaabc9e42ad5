"""``agentgym verl selftest``: real verl 0.9.1 components on CPU, before any GPU hour is spent.

Part 1, rollout and update math: a tiny randomly initialised Qwen2 causal LM (built from a config,
no download) with a tokenizer trained here on the envs' own text and a Qwen2.5-style chat template,
so verl picks its Qwen Continuous Token builder. An in-process server with verl's ``generate``
signature samples from the model (teacher-forcing correct actions on some sessions, so rewards vary
within a group). verl's own ``AgentLoopWorker`` runs the ``agentgym`` agent loop over
TravelPlanner-v0 and SearchQA-v0 (embedded worlds) and post-processes the outputs. Checked: the
recomputed log-probs match the rollout's on trained tokens, the loss mask covers exactly the tokens
the model produced, verl's ``compute_advantage`` (grpo, vspo), its vanilla policy loss and
``low_var_kl`` through the real ``ActorConfig``, and one optimizer step with non-zero gradients.

Part 2, the real TransferQueue on a local Ray, and VSPO over it: ``selftest_tq``.
Part 2b, async training: partial rollouts and the async replay buffer: ``selftest_async``.
Part 3, the bundled recipes through verl's real launcher up to GPU allocation: ``selftest_launch``.
"""

from __future__ import annotations

import asyncio
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from agentgym.integrations.verl._guard import require_verl

__all__ = ["run_selftest", "QWEN25_TEMPLATE", "build_tiny_model"]

QWEN25_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if loop.first and message['role'] != 'system' %}"
    "{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
_LOGPROB_TOLERANCE = 1e-4


def build_tiny_model(folder: Path, corpus: list[str], *, seed: int = 0) -> Any:
    """A random Qwen2 model and a byte-level BPE tokenizer trained on ``corpus``, saved to ``folder``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=2048, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(corpus, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        bos_token=None)
    tokenizer.chat_template = QWEN25_TEMPLATE
    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32768,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                         tie_word_embeddings=True)
    model = Qwen2ForCausalLM(config).eval()
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return model, tokenizer


class TinyModelServer:
    """verl's ``LLMServerClient.generate`` signature over the tiny model: samples at temperature 1
    (the log-prob of each token under the model is returned), or, for a forced request, scores the
    scripted action instead of sampling (teacher forcing). A stand-in for vLLM/SGLang, which need a GPU."""

    def __init__(self, model: Any, tokenizer: Any, *, seed: int = 0) -> None:
        import torch

        self.model, self.tokenizer = model, tokenizer
        self.generator = torch.Generator().manual_seed(seed)
        self.scripts: dict[str, list[str]] = {}
        self.turns: dict[str, int] = {}
        self.produced: dict[str, list[int]] = {}
        self.calls: list[dict[str, Any]] = []

    def force(self, request_id: str, actions: list[str]) -> None:
        self.scripts[request_id] = list(actions)

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any],
                       image_data: Any = None, video_data: Any = None, audio_data: Any = None,
                       mm_processor_kwargs: Any = None, **kwargs: Any) -> Any:
        from verl.workers.rollout.replica import TokenOutput

        budget = int(sampling_params.get("max_tokens", 64))
        turn = self.turns.get(request_id, 0)
        self.turns[request_id] = turn + 1
        script = self.scripts.get(request_id)
        if script is not None:
            text = script[turn] if turn < len(script) else script[-1]
            forced = self.tokenizer.encode(text, add_special_tokens=False) + [self.tokenizer.eos_token_id]
            tokens, logprobs = self._score(prompt_ids, forced[:budget])
        else:
            tokens, logprobs = self._sample(prompt_ids, min(budget, 24))
        self.produced.setdefault(request_id, []).extend(tokens)
        self.calls.append({"request_id": request_id, "sampling_params": dict(sampling_params)})
        await asyncio.sleep(0)
        return TokenOutput(token_ids=tokens, log_probs=logprobs, num_preempted=0,
                           extra_fields={"min_global_steps": 0, "max_global_steps": 0})

    def _logits(self, ids: list[int]) -> Any:
        import torch

        with torch.no_grad():
            return self.model(torch.tensor([ids])).logits[0].float()

    def _score(self, prompt_ids: list[int], tokens: list[int]) -> tuple[list[int], list[float]]:
        import torch

        logits = self._logits(list(prompt_ids) + tokens)[len(prompt_ids) - 1: -1]
        logprobs = torch.log_softmax(logits, dim=-1).gather(-1, torch.tensor(tokens).unsqueeze(-1)).squeeze(-1)
        return tokens, logprobs.tolist()

    def _sample(self, prompt_ids: list[int], count: int) -> tuple[list[int], list[float]]:
        import torch

        tokens: list[int] = []
        logprobs: list[float] = []
        with torch.no_grad():  # one pass over the prompt, then one token at a time on the KV cache
            out = self.model(torch.tensor([list(prompt_ids)]), use_cache=True)
            for _ in range(count):
                scores = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
                token = int(torch.multinomial(scores.exp(), 1, generator=self.generator).item())
                tokens.append(token)
                logprobs.append(float(scores[token]))
                if token == self.tokenizer.eos_token_id:
                    break
                out = self.model(torch.tensor([[token]]), past_key_values=out.past_key_values, use_cache=True)
        return tokens, logprobs


def _rows_and_actions() -> tuple[list[dict[str, Any]], dict[int, list[str]]]:
    """Two TravelPlanner rows (json actions, dense reward) and two SearchQA rows, with correct actions."""
    import gymnasium

    from agentgym.envs.travelplanner.scripted import gold_plan_actions
    from agentgym.integrations.verl.preflight.dryrun import gold_answer
    from agentgym.integrations.verl.prepare import prepare_rows

    tp = prepare_rows("TravelPlanner-v0", split="train", limit=2, env_kwargs={"action_format": "json"},
                      reward="planner_r1/dense")
    sq = prepare_rows("SearchQA-v0", split="train", limit=2)
    env = gymnasium.make("TravelPlanner-v0", tasks="train", action_format="json")
    actions: dict[int, list[str]] = {}
    for i, row in enumerate(tp):
        task = env.unwrapped.tasks[row["extra_info"]["task_index"]]
        actions[i] = gold_plan_actions(task, "json", tools=False)
    for j, row in enumerate(sq):
        actions[len(tp) + j] = [f"<answer>{gold_answer(row)}</answer>"]
    env.close()
    return tp + sq, actions


def _config(model_dir: Path, n: int) -> Any:
    from agentgym.integrations.verl.train import compose_recipe

    return compose_recipe("grpo", [
        f"actor_rollout_ref.model.path={model_dir}", "actor_rollout_ref.rollout.name=vllm",
        f"actor_rollout_ref.rollout.n={n}", "actor_rollout_ref.rollout.calculate_log_probs=true",
        "actor_rollout_ref.model.use_remove_padding=false",
        "actor_rollout_ref.model.enable_gradient_checkpointing=false",
        "data.max_prompt_length=4096", "data.max_response_length=2048", "agentgym.max_turns=3",
        "agentgym.max_observation_chars=2000", "trainer.n_gpus_per_node=1",
        "actor_rollout_ref.rollout.tensor_model_parallel_size=1"])


def _batch(rows: list[dict[str, Any]], n: int) -> Any:
    import numpy as np
    from verl.protocol import DataProto

    repeated = [row for row in rows for _ in range(n)]
    non_tensors = {
        "raw_prompt": np.array([row["prompt"] for row in repeated], dtype=object),
        "extra_info": np.array([row["extra_info"] for row in repeated], dtype=object),
        "data_source": np.array([row["data_source"] for row in repeated], dtype=object),
        "reward_model": np.array([row["reward_model"] for row in repeated], dtype=object),
        "agent_name": np.array([row["agent_name"] for row in repeated], dtype=object),
        "index": np.array([row["extra_info"]["index"] for row in repeated], dtype=object),
        "uid": np.array([f"g{i // n}" for i in range(len(repeated))], dtype=object),
    }
    return DataProto.from_dict(non_tensors=non_tensors, meta_info={"global_steps": 1, "validate": False})


def _rollout(config: Any, server: TinyModelServer, rows: list[dict[str, Any]], actions: dict[int, list[str]],
             n: int) -> Any:
    """verl's AgentLoopWorker runs the agentgym loop on every row n times and post-processes."""
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker

    from agentgym.integrations.verl import agent_loop as loop_module

    worker = AgentLoopWorker(config, llm_client=server)
    forced_sessions = {i * n for i in range(len(rows))}  # the first session of every group plays correctly
    original = loop_module._Rollout.__init__
    counter = iter(range(10**9))

    def tagged(self: Any, *args: Any, **kwargs: Any) -> None:  # learn which session a request id belongs to
        original(self, *args, **kwargs)
        session = next(counter)
        if session in forced_sessions:
            server.force(self.request_id, actions[session // n])

    loop_module._Rollout.__init__ = tagged
    try:
        batch = _batch(rows, n)
        return _run_sequentially(worker, batch)
    finally:
        loop_module._Rollout.__init__ = original


def _run_sequentially(worker: Any, batch: Any) -> Any:
    # One generate_sequences call: verl starts the trajectories in batch order, so the sessions
    # forced above are the first of each group.
    return asyncio.run(worker.generate_sequences(batch))


def _check_rollout(model: Any, data: Any, server: TinyModelServer) -> dict[str, float]:
    import torch
    from verl.utils.torch_functional import logprobs_from_logits

    responses, mask = data.batch["responses"], data.batch["response_mask"]
    input_ids, attention = data.batch["input_ids"], data.batch["attention_mask"]
    position_ids = data.batch["position_ids"]
    with torch.no_grad():
        logits = model(input_ids=input_ids, attention_mask=attention, position_ids=position_ids).logits.float()
    width = responses.shape[1]
    recomputed = logprobs_from_logits(logits[:, -width - 1: -1], responses)
    rollout = data.batch["rollout_log_probs"]
    trained = mask.bool()
    gap = float((recomputed - rollout).abs()[trained].max()) if trained.any() else math.inf
    if not gap <= _LOGPROB_TOLERANCE:
        raise AssertionError(f"recomputed log-probs differ from the rollout's by {gap:.2e} on trained tokens")
    produced = sorted(tuple(t) for t in server.produced.values())
    in_batch = sorted(tuple(responses[i][mask[i].bool()].tolist()) for i in range(len(responses)))
    if produced != in_batch:
        raise AssertionError("the loss mask does not cover exactly the tokens the model produced")
    return {"max_logprob_gap": gap, "trained_tokens": float(trained.sum()), "masked_tokens": float((~trained).sum()
            - (attention[:, -width:] == 0).sum())}


def _check_update(model: Any, data: Any, config: Any, n: int) -> dict[str, float]:
    import torch
    from verl.trainer.config import AlgoConfig
    from verl.trainer.ppo.core_algos import agg_loss, get_policy_loss_fn, kl_penalty
    from verl.trainer.ppo.ray_trainer import compute_advantage
    from verl.utils.config import omega_conf_to_dataclass
    from verl.utils.torch_functional import logprobs_from_logits

    from agentgym.integrations.verl import estimator  # noqa: F401  (registers vspo)

    mask = data.batch["response_mask"]
    scores = data.batch["rm_scores"]
    data.batch["token_level_rewards"] = scores
    figures: dict[str, float] = {"reward_std": float(scores.sum(-1).std())}
    for name in ("grpo", "vspo"):
        algo = omega_conf_to_dataclass(config.algorithm, AlgoConfig) if name == "grpo" else config.algorithm
        out = compute_advantage(data, adv_estimator=name, num_repeat=n, config=algo)
        figures[f"{name}_max_abs_advantage"] = float(out.batch["advantages"].abs().max())
    if figures["grpo_max_abs_advantage"] == 0.0:
        raise AssertionError("every GRPO advantage is zero: the rewards did not vary within any group")
    actor = omega_conf_to_dataclass(config.actor_rollout_ref.actor)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    width = data.batch["responses"].shape[1]
    logits = model(input_ids=data.batch["input_ids"], attention_mask=data.batch["attention_mask"],
                   position_ids=data.batch["position_ids"]).logits.float()
    log_prob = logprobs_from_logits(logits[:, -width - 1: -1], data.batch["responses"])
    old = data.batch["rollout_log_probs"]
    loss_fn = get_policy_loss_fn(actor.policy_loss.loss_mode)
    pg_loss, _ = loss_fn(old_log_prob=old, log_prob=log_prob, advantages=data.batch["advantages"],
                         response_mask=mask, loss_agg_mode=actor.loss_agg_mode, config=actor)
    kl = agg_loss(kl_penalty(log_prob, old.detach(), "low_var_kl"), mask, actor.loss_agg_mode)
    loss = pg_loss + 0.001 * kl
    optimizer.zero_grad()
    loss.backward()
    grad = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in model.parameters() if p.grad is not None))
    if not grad > 0.0:
        raise AssertionError("the policy loss produced no gradient")
    optimizer.step()
    model.eval()
    figures.update({"policy_loss": float(pg_loss), "low_var_kl": float(kl), "grad_norm": grad})
    return figures


def run_selftest(*, n: int = 2, launch: bool = True, echo: Any = print) -> dict[str, float]:
    """Run the three parts; returns the figures, raises ``AssertionError`` naming the first failure."""
    require_verl()
    from agentgym.integrations.verl.preflight.selftest_launch import run_launch_check
    from agentgym.integrations.verl.preflight.selftest_tq import run_transfer_queue_check

    started = time.perf_counter()
    rows, actions = _rows_and_actions()
    corpus = [m["content"] for row in rows for m in row["prompt"]] + [a for acts in actions.values() for a in acts]
    with tempfile.TemporaryDirectory(prefix="agentgym-selftest-") as folder:
        model_dir = Path(folder) / "tiny-qwen2"
        model, tokenizer = build_tiny_model(model_dir, corpus * 3)
        figures = _rollout_and_update(model, tokenizer, model_dir, rows, actions, n, echo)
        figures["part1_seconds"] = time.perf_counter() - started
        echo(f"part 1 (rollout and update math) OK in {figures['part1_seconds']:.1f}s")
        part2 = run_transfer_queue_check(model_dir, model, TinyModelServer(model, tokenizer, seed=1), n=n, echo=echo)
        figures.update({f"tq/{k}": v for k, v in part2.items()})
        echo(f"part 2 (TransferQueue and VSPO) OK in {part2['seconds']:.1f}s")
        from agentgym.integrations.verl.preflight.selftest_async import run_async_check

        figures.update({f"async/{k}": v for k, v in run_async_check(model_dir, tokenizer, n=n, echo=echo).items()})
        echo(f"part 2b (partial rollouts and the async buffer) OK in {figures['async/seconds']:.1f}s")
        if launch:
            part3_started = time.perf_counter()
            figures.update({f"launch/{k}": v for k, v in run_launch_check(model_dir, Path(folder), echo=echo).items()})
            figures["part3_seconds"] = time.perf_counter() - part3_started
            echo(f"part 3 (launch) OK in {figures['part3_seconds']:.1f}s")
        else:
            echo("part 3 (launch) skipped (--no-launch)")
    figures["seconds"] = time.perf_counter() - started
    echo(f"selftest OK in {figures['seconds']:.1f}s")
    return figures


def _rollout_and_update(model: Any, tokenizer: Any, model_dir: Path, rows: list[dict[str, Any]],
                        actions: dict[int, list[str]], n: int, echo: Any) -> dict[str, float]:
    """Part 1 over each env: verl's AgentLoopWorker rollout, then the update math."""
    config = _config(model_dir, n)
    figures: dict[str, float] = {}
    for env_id in ("TravelPlanner-v0", "SearchQA-v0"):  # one batch per env: their reward keys differ
        picked = [i for i, row in enumerate(rows) if row["data_source"] == env_id]
        server = TinyModelServer(model, tokenizer)
        data = _rollout(config, server, [rows[i] for i in picked], {k: actions[i] for k, i in enumerate(picked)}, n)
        got = _check_rollout(model, data, server)
        echo(f"{env_id} rollout: {len(picked)} rows x {n} sessions through verl's AgentLoopWorker (Qwen CT "
             f"builder); log-prob gap {got['max_logprob_gap']:.1e} on {got['trained_tokens']:.0f} trained "
             f"tokens; loss mask = the model's tokens only")
        got.update(_check_update(model, data, config, n))
        echo(f"{env_id} update: grpo |A|max {got['grpo_max_abs_advantage']:.3f}, vspo |A|max "
             f"{got['vspo_max_abs_advantage']:.3f}, policy loss {got['policy_loss']:.4f}, low_var_kl "
             f"{got['low_var_kl']:.2e}, grad norm {got['grad_norm']:.3e} (one AdamW step)")
        figures.update({f"{env_id}/{k}": v for k, v in got.items()})
    return figures
