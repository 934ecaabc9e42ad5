"""CPU harness for the verl agent loop: a real BPE tokenizer built here, a fake LLM server with
verl's ``generate`` signature, and the loop constructed the way verl's worker constructs it."""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict
from typing import Any

from omegaconf import OmegaConf

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
LLAMA3_TEMPLATE = (
    "<|begin_of_text|>{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
    "{{ m['content'] }}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
"""Llama 3's family: role headers, ``<|eot_id|>`` ends a turn with nothing after it."""
SPECIALS = ["<|pad|>", "<|im_start|>", "<|im_end|>"]
_FAMILIES = {"chatml": (CHAT_TEMPLATE, SPECIALS, "<|im_end|>"),
             "llama3": (LLAMA3_TEMPLATE, ["<|pad|>", "<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                                          "<|eot_id|>", "<|end_of_text|>"], "<|eot_id|>")}
_CORPUS = [
    "CitySearch[Texas] FlightSearch[New York, Boston, 2022-03-01] Finish[] GiveUp[] <answer></answer>",
    "<search> capital of France </search> <information> Doc 1(Title: Paris) </information>",
    "user assistant system tool The plan could not be read. Plan received; it passes every constraint.",
]


def make_tokenizer(family: str = "chatml") -> Any:
    """A byte-level BPE (lossless on any text) with a chat template of ``family`` (``chatml``, Qwen2.5's;
    ``llama3``), trained in memory."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    template, specials, eos = _FAMILIES[family]
    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(_CORPUS * 20, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="<|pad|>", eos_token=eos, bos_token=None)
    tokenizer.chat_template = template
    return tokenizer


class FakeServer:
    """Stands in for verl's ``LLMServerClient`` over vLLM (which needs a GPU): same ``generate``
    signature, scripted or random replies. ``script(request_id, turn)`` returns the reply text;
    ``None`` means random tokens. As vLLM does: a reply is cut at its first stop string
    (``stop`` with ``include_stop_str_in_output``), which ends it with no end-of-turn token after it;
    a reply without one ends with the EOS; every token has a log-prob; ``stop_reason`` is verl's
    ``completed``."""

    def __init__(self, tokenizer: Any, script: Any = None, *, seed: int = 0, random_length: int = 12) -> None:
        self.tokenizer, self.script = tokenizer, script
        self.rng = random.Random(seed)
        self.random_length = random_length
        self.turns: dict[str, int] = defaultdict(int)
        self.calls: list[dict[str, Any]] = []

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any],
                       image_data: Any = None, video_data: Any = None, audio_data: Any = None,
                       mm_processor_kwargs: Any = None, **kwargs: Any) -> Any:
        from verl.workers.rollout.replica import TokenOutput

        turn = self.turns[request_id]
        self.turns[request_id] += 1
        text = self.script(request_id, turn) if self.script else None
        if text is None:
            ids = [self.rng.randrange(len(SPECIALS), self.tokenizer.vocab_size) for _ in range(self.random_length)]
        else:
            ids = _as_vllm_ends(self.tokenizer, text, sampling_params)
        ids = ids[: sampling_params.get("max_tokens", len(ids))]
        self.calls.append({"request_id": request_id, "prompt_ids": list(prompt_ids), "output": ids,
                           "sampling_params": dict(sampling_params)})
        await asyncio.sleep(0)
        return TokenOutput(token_ids=ids, log_probs=[-0.5] * len(ids), num_preempted=0, stop_reason="completed",
                           extra_fields={"min_global_steps": 1, "max_global_steps": 1})


def _as_vllm_ends(tokenizer: Any, text: str, sampling_params: dict[str, Any]) -> list[int]:
    """The reply's tokens as vLLM returns them: through the first stop string (kept, no EOS after
    it) when the request has stop strings, else through the end-of-turn token."""
    stops = sampling_params.get("stop") or []
    found = [(text.find(s), s) for s in stops if text.find(s) >= 0]
    if found:
        at, stop = min(found)
        return tokenizer.encode(text[:at + len(stop)], add_special_tokens=False)
    return tokenizer.encode(text, add_special_tokens=False) + [tokenizer.eos_token_id]


def trainer_config(*, response_length: int = 4096, prompt_length: int = 4096, max_assistant_turns: int | None = None,
                   max_user_turns: int | None = None, full_determinism: bool = False,
                   agentgym: dict[str, Any] | None = None, rollout_name: str | None = None) -> Any:
    """The slice of verl's config the agent loop reads."""
    return OmegaConf.create({
        "actor_rollout_ref": {"rollout": {
            **({"name": rollout_name} if rollout_name else {}),
            "prompt_length": prompt_length, "response_length": response_length, "full_determinism": full_determinism,
            "multi_turn": {"max_assistant_turns": max_assistant_turns, "max_user_turns": max_user_turns}}},
        "data": {"apply_chat_template_kwargs": {}},
        "trainer": {"total_training_steps": None},
        **({"agentgym": agentgym} if agentgym is not None else {}),
    })


def make_loop(tokenizer: Any, server: Any, config: Any) -> Any:
    """Instantiate the registered ``agentgym`` loop as verl's worker does (hydra, registry entry)."""
    import hydra
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap, _agent_loop_registry
    from verl.utils.dataset.rl_dataset import RLHFDataset

    return hydra.utils.instantiate(
        _agent_loop_registry["agentgym"], trainer_config=DictConfigWrap(config), server_manager=server,
        tokenizer=tokenizer, processor=None, hf_model_type=None, dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(config.data), tools=ToolListWrap([]))


def run_rows(tokenizer: Any, server: Any, config: Any, rows: list[dict[str, Any]], *, n: int = 1,
             global_steps: int | None = None) -> list[Any]:
    """Run every row ``n`` times concurrently (a new loop object each, as verl does; ``priority`` is
    the trajectory's place in the batch, as verl's worker numbers them)."""
    sampling = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}

    async def one(row: dict[str, Any], priority: int) -> Any:
        loop = make_loop(tokenizer, server, config)
        kwargs = {"raw_prompt": row["prompt"], "extra_info": row["extra_info"], "index": row["extra_info"]["index"],
                  "data_source": row["data_source"], "reward_model": row["reward_model"],
                  "agent_name": row["agent_name"], "priority": priority}
        if global_steps is not None:
            kwargs["global_steps"] = global_steps
        return await loop.run(sampling, **kwargs)

    async def all_rows() -> list[Any]:
        jobs = [row for row in rows for _ in range(n)]
        return await asyncio.gather(*(one(row, i) for i, row in enumerate(jobs)))

    return asyncio.run(all_rows())


class MemoryTQ:
    """TransferQueue's kv API in memory: rows per key, tags per key, as verl's code calls them.
    (The real TransferQueue on Ray is exercised by ``agentgym verl selftest``, part 2.)"""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, dict]] = {"train": {}, "val": {}}
        self.tags: dict[str, dict[str, dict]] = {"train": {}, "val": {}}

    def kv_list(self, partition_id=None):
        return {pid: dict(tags) for pid, tags in self.tags.items() if partition_id in (None, pid)}

    def kv_batch_get(self, keys, partition_id, select_fields=None):
        from verl.utils.tensordict_utils import list_of_dict_to_tensordict

        rows = [self.rows[partition_id][k] for k in keys]
        if select_fields is not None:
            rows = [{f: r[f] for f in select_fields} for r in rows]
        return list_of_dict_to_tensordict(rows)

    def kv_batch_put(self, keys, partition_id, fields=None, tags=None):
        for i, key in enumerate(keys):
            if fields is not None:
                row = self.rows[partition_id].setdefault(key, {})
                row.update({name: _item(fields.get(name), i) for name in fields.keys()})
            if tags is not None:
                self.tags[partition_id].setdefault(key, {}).update(tags[i])

    def kv_clear(self, keys, partition_id):
        for key in [keys] if isinstance(keys, str) else keys:
            self.rows[partition_id].pop(key, None)
            self.tags[partition_id].pop(key, None)

    # -- what the agent-loop workers would have written ----------------------------------------
    def add_group(self, uid: str, rewards: list[float], step: int = 1, *, masked: list[bool] | None = None,
                  extra: list[dict] | None = None, status: str = "finished") -> None:
        """One prompt's group; ``masked[i]``: trajectory i failed (loss mask all zero, as the loop writes it)."""
        import torch

        self.tags["train"][uid] = {"is_prompt": True, "status": status, "global_steps": step}
        for session, reward in enumerate(rewards):
            length = 3 + session
            scores = torch.zeros(length)
            scores[-1] = reward
            key = f"{uid}_{session}_0"
            off = bool(masked and masked[session])
            info = {"outcome": float(reward >= 1.0), "score": reward, "env_failed": float(off), "masked": float(off)}
            fields = extra[session] if extra else {"reward_extra_info": info, "agentgym": {
                "error": "RemoteTimeout: env call timed out" if off else None, "fatal": None}}
            self.rows["train"][key] = {
                "uid": uid, "responses": torch.arange(length), "rm_scores": scores,
                "response_mask": (torch.zeros if off else torch.ones)(length, dtype=torch.int64),
                "extra_fields": fields}
            self.tags["train"][key] = {"status": "success", "response_len": length, "global_steps": step}

    def add_outputs(self, uid: str, outputs: list[Any], step: int = 1) -> None:
        """A group from real ``AgentLoopOutput``s (the fields the replay buffers read)."""
        import torch

        self.tags["train"][uid] = {"is_prompt": True, "status": "finished", "global_steps": step}
        for session, out in enumerate(outputs):
            scores = torch.zeros(len(out.response_ids))
            scores[-1] = float(out.reward_score or 0.0)
            key = f"{uid}_{session}_0"
            self.rows["train"][key] = {
                "uid": uid, "responses": torch.tensor(out.response_ids), "rm_scores": scores,
                "response_mask": torch.tensor(out.response_mask, dtype=torch.int64),
                "extra_fields": dict(out.extra_fields)}
            self.tags["train"][key] = {"status": "success", "response_len": len(out.response_ids),
                                       "global_steps": step}


def _item(value, i):
    import torch

    if hasattr(value, "tolist") and not isinstance(value, torch.Tensor):
        return value.tolist()[i]
    return value[i]


def patch_tq(monkeypatch: Any) -> MemoryTQ:
    import transfer_queue as tq

    memory = MemoryTQ()
    for name in ("kv_list", "kv_batch_get", "kv_batch_put", "kv_clear"):
        monkeypatch.setattr(tq, name, getattr(memory, name))
    return memory


def make_buffer(cls_name: str = "VSPOReplayBuffer", *, vspo: Any = None, agentgym: Any = None,
                refill_fn: Any = None, mode: str = "sync") -> Any:
    from agentgym.integrations.verl import sampler

    kwargs = {"vspo": vspo or {}, "agentgym": agentgym or {}}
    return getattr(sampler, cls_name)(
        trainer_mode=mode, trainer_config=OmegaConf.create({}), max_off_policy_threshold=8,
        max_off_policy_strategy="drop", sampler_kwargs=OmegaConf.create(kwargs), poll_interval=0.0,
        refill_fn=refill_fn or (lambda n: n))
