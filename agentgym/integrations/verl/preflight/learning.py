"""A tiny model learns SearchQA-v0 through verl's own rollout and update math, on CPU.

The path is the selftest's (``selftest``): a random 2-layer Qwen2 built from a config, with a
byte-level BPE tokenizer trained here on the env's text and a Qwen2.5-style chat template; an
in-process server with verl's ``generate`` signature stands in for vLLM/SGLang (they need a GPU);
verl's own ``AgentLoopWorker.generate_sequences`` drives the ``agentgym`` agent loop
(``AgentGymAgentLoop``) over SearchQA-v0's embedded world. Each step then takes the rewards as
verl's trainer does (the agent loop's ``rm_scores``: the reward on the last response token), runs
verl's ``compute_advantage`` (``grpo``, ``reinforce_plus_plus``, or ``vspo`` after the VSPO replay
buffer's batch plan) and the actor's update: verl's policy loss through the real ``ActorConfig`` of
the ``grpo`` recipe, over its PPO epochs and mini-batches, gradient clipping and AdamW, on the same
model. REINFORCE++ is per token: its returns run back from where the reward sits and skip tokens
outside the loss mask, so a reward placed on an untrained token would reach nothing.

**Constrained sampling.** A random model never writes a well-formed ``<search>``, so the stand-in
server samples only the tokens valid at each position of a tags action, from the model's own
distribution renormalised over them: ``<search>`` or ``<answer>``, then one or two words of the
last message (the question, or the passage just retrieved), then the closing tag, where the turn
ends as vLLM's stop strings end it. It returns the model's unconstrained log-probs, which the
actor recomputes. On a GPU this would be a vLLM logits processor; the agent loop runs unchanged.
No SFT warm start. What is learnt is the model's choice among valid tokens: search, then answer.

**The rewards.** ``SEARCH_REWARD`` (the learning tests'): 1 when the episode searched and then
answered, else 0; binary, so a group whose trajectories all did the same has zero variance, which
is what VSPO replaces. ``LEARNING_REWARD``: 0.5 x valid searches (``tool_call_validity``, gated on
``format``: paid only when the episode ends with an answer) + 0.2 x ``format`` + 1.0 x
``exact_match``. Without the search term answering at once is the best policy; without the gate,
searching on every turn is a trap the tiny model falls into, since its two turns look alike to it.
"""

from __future__ import annotations

import asyncio
import math
import re
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym._toolbox import require_choice
from agentgym.integrations.verl._guard import require_verl
from agentgym.integrations.verl.preflight.selftest import TinyModelServer, build_tiny_model

__all__ = ["SEARCH_REWARD", "LEARNING_REWARD", "ESTIMATORS", "ENV_KWARGS", "Curve", "ConstrainedServer", "run_learning", "policy_loss",
           "rollout_batch", "LearningSetup", "make_setup", "format_curves"]

SEARCH_REWARD = {"terms": [{"kind": "tool_call_validity", "weight": 1.0, "gate": {"term": "format"}},
                            {"kind": "format", "weight": 0.0}, {"kind": "exact_match", "weight": 0.0}]}
"""1 when the episode searched (every search valid) and then answered, else 0: a binary reward,
so a group of trajectories that all did the same has zero variance (format and exact match are
logged, not paid)."""
LEARNING_REWARD = {"terms": [{"kind": "tool_call_validity", "weight": 0.5, "gate": {"term": "format"}},
                             {"kind": "format", "weight": 0.2}, {"kind": "exact_match", "weight": 1.0}]}
ENV_KWARGS = {"synthetic_size": "small", "top_k": 1, "passage_chars": 160, "max_searches": 2}
"""The small embedded world; one short passage per search keeps sequences under 300 tokens."""
MAX_TURNS = 2
"""Model turns per episode: search, then answer."""
ESTIMATORS = ("grpo", "vspo", "reinforce_plus_plus")
"""verl's GRPO, agentgym's VSPO (after the VSPO batch plan), and verl's REINFORCE++: a per-token
estimator, whose returns lose a reward that sits on a token outside the loss mask."""
_WORD = re.compile(r"[A-Za-z0-9]+")  # no backtracking: one character class, linear
_HEADER = "<|im_start|>"


class _Trie:
    """Token sequences as a trie: the tokens valid after a prefix, and whether the prefix is complete."""

    def __init__(self, sequences: Sequence[Sequence[int]] = ()) -> None:
        self.children: dict[int, _Trie] = {}
        self.complete = False
        for sequence in sequences:
            node = self
            for token in sequence:
                node = node.children.setdefault(token, _Trie())
            node.complete = True


@dataclass
class _Action:
    """One constrained turn: an opening tag, 1 to ``max_words`` words, the matching closing tag."""

    tags: dict[tuple[int, ...], list[int]]  # opening tag tokens -> closing tag tokens
    words: _Trie
    max_words: int
    phase: str = "open"
    node: _Trie = field(init=False)
    opened: list[int] = field(default_factory=list)
    closing: list[int] = field(default_factory=list)
    words_done: int = 0

    def __post_init__(self) -> None:
        self.node = _Trie(list(self.tags))

    @property
    def done(self) -> bool:
        return self.phase == "done"

    def valid(self) -> list[int]:
        if self.phase == "close":
            return self.closing[:1]
        valid = list(self.node.children)
        if self.phase == "word" and (self.node.complete or not self.words.children):
            if self.node is not self.words and self.words_done + 1 < self.max_words:
                valid += [t for t in self.words.children if t not in valid]
            valid.append(self.closing[0])
        return valid

    def advance(self, token: int) -> None:
        if self.phase == "close":
            self.closing = self.closing[1:]
            self.phase = "close" if self.closing else "done"
        elif self.phase == "open":
            self.node = self.node.children[token]
            self.opened.append(token)
            if self.node.complete:
                self.phase, self.node, self.closing = "word", self.words, list(self.tags[tuple(self.opened)])
        elif token in self.node.children:  # the word goes on (or the first word starts)
            self.node = self.node.children[token]
        elif token in self.words.children:  # a word ended, the next one starts
            self.words_done += 1
            self.node = self.words.children[token]
        else:  # the closing tag starts
            self.closing = self.closing[1:]
            self.phase = "close" if self.closing else "done"


class ConstrainedServer(TinyModelServer):
    """The selftest's stand-in server, sampling only the tokens valid in a tags action (module docstring).

    An action is ``<search>`` or ``<answer>``, then 1 to ``max_words`` words of the last line of the
    last chat message, then its closing tag, where the turn ends as vLLM's stop strings end it."""

    def __init__(self, model: Any, tokenizer: Any, *, seed: int = 0, max_words: int = 2) -> None:
        super().__init__(model, tokenizer, seed=seed)
        self.max_words = max_words
        self.spans: dict[str, list[tuple[int, int]]] = {}
        """Per request, in order: (where in the token sequence, how many tokens) of each turn served."""
        self.tags = {tuple(self._encode(f"<{tag}>")): self._encode(f" </{tag}>") for tag in ("search", "answer")}

    async def generate(self, request_id: str, *, prompt_ids: list[int], **kwargs: Any) -> Any:
        output = await super().generate(request_id, prompt_ids=prompt_ids, **kwargs)
        self.spans.setdefault(request_id, []).append((len(prompt_ids), len(output.token_ids)))
        return output

    def forget(self) -> None:
        """Drop what was recorded of earlier requests."""
        self.scripts, self.turns, self.produced, self.spans = {}, {}, {}, {}
        self.calls = []

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def _sample(self, prompt_ids: list[int], count: int) -> tuple[list[int], list[float]]:
        import torch

        words = sorted(set(_WORD.findall(_last_line(self.tokenizer.decode(prompt_ids)))))
        action = _Action(self.tags, _Trie([self._encode(f" {w}") for w in words]), self.max_words)
        tokens: list[int] = []
        pending: list[int] = list(prompt_ids)  # fed to the model at the next draw (forced tokens wait here)
        cache = None
        with torch.no_grad():
            while len(tokens) < count and not action.done:
                valid = action.valid()
                if len(valid) > 1:
                    out = self.model(torch.tensor([pending]), past_key_values=cache, use_cache=True)
                    cache, pending = out.past_key_values, []
                    scores = out.logits[0, -1].float()[valid]
                    valid = [valid[int(torch.multinomial(scores.softmax(-1), 1, generator=self.generator))]]
                action.advance(valid[0])
                tokens.append(valid[0])
                pending.append(valid[0])
        # the model's own log-probs of every token, as the actor recomputes them
        return self._score(list(prompt_ids), tokens) if tokens else ([], [])


def _last_line(chat: str) -> str:
    """The last line of the last message before the assistant's (the question, or the passages)."""
    messages = chat.split(_HEADER)
    message = messages[-2] if len(messages) > 2 else messages[-1]
    return message.replace("<|im_end|>", "").strip().rsplit("\n", 1)[-1]


@dataclass
class Curve:
    """Per-step figures of one run, read from what verl logs of the step's batch (before its update):
    the mean reward, the share of episodes that searched and then answered, the exact-match rate,
    each reward term's mean, and how much of the batch carries a learning signal."""

    estimator: str
    seed: int
    shuffled: bool = False
    reward: list[float] = field(default_factory=list)
    search_then_answer: list[float] = field(default_factory=list)
    exact_match: list[float] = field(default_factory=list)
    zero_variance: list[float] = field(default_factory=list)
    """Share of the step's groups whose rewards are all equal (``agentgym.rewards.zero_variance_share``)."""
    gradient_share: list[float] = field(default_factory=list)
    """Share of the trajectories trained on (after VSPO's batch plan) with a non-zero advantage."""
    terms: dict[str, list[float]] = field(default_factory=dict)
    """Per reward term, the mean of its logged raw value (``term/<name>``) per step."""
    seconds: float = 0.0
    """CPU seconds of the run (``time.process_time``), the setup excluded when it was passed in."""

    def series(self, key: str) -> list[float]:
        """A figure per step: an attribute (``reward``, ``zero_variance``...) or ``term/<name>``."""
        return self.terms[key[5:]] if key.startswith("term/") else getattr(self, key)

    def start(self, key: str = "reward", window: int = 3) -> float:
        values = self.series(key)
        return sum(values[:window]) / min(window, len(values))

    def end(self, key: str = "reward", window: int = 3) -> float:
        values = self.series(key)
        return sum(values[-window:]) / min(window, len(values))

    def gain(self, key: str = "reward", window: int = 3) -> float:
        return self.end(key, window) - self.start(key, window)


@dataclass
class LearningSetup:
    """The tiny model, its stand-in server, verl's worker over the agent loop, and the training rows."""

    model: Any
    tokenizer: Any
    server: ConstrainedServer
    worker: Any
    config: Any
    rows: list[dict[str, Any]]
    n: int
    initial: dict[str, Any] = field(default_factory=dict)

    def restart(self, seed: int) -> None:
        """Back to the initial weights, with the server's draws seeded by ``seed``: runs that share
        a setup start from the same model (building one costs seconds; restarting, milliseconds)."""
        import torch

        self.model.load_state_dict(self.initial)
        self.model.eval()
        self.server.generator = torch.Generator().manual_seed(seed)
        self.server.forget()


def make_setup(folder: Path, *, seed: int = 0, n: int = 8, tasks: int = 16, reward: Any = None,
               total_steps: int | None = None) -> LearningSetup:
    """Build everything a run needs in ``folder`` (the model and tokenizer are saved there for verl);
    ``reward`` is the rows' reward spec (default ``LEARNING_REWARD``). ``total_steps`` is the run
    length a scheduled reward is shaped by, written where verl's trainer writes it (the actor's
    ``optim.total_training_steps``), for the agent loop to read."""
    require_verl()
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker

    from agentgym.integrations.verl import agent_loop  # noqa: F401  (registers the agentgym loop)
    from agentgym.integrations.verl.prepare import prepare_rows

    rows = prepare_rows("SearchQA-v0", split="train", limit=tasks, env_kwargs=ENV_KWARGS,
                        reward=LEARNING_REWARD if reward is None else reward)
    model_dir = folder / "tiny-qwen2"
    model, tokenizer = build_tiny_model(model_dir, _corpus(rows), seed=seed)
    server = ConstrainedServer(model, tokenizer, seed=seed)
    config = _config(model_dir, n, total_steps)
    initial = {key: value.clone() for key, value in model.state_dict().items()}
    return LearningSetup(model, tokenizer, server, AgentLoopWorker(config, llm_client=server), config, rows, n,
                         initial)


def _corpus(rows: list[dict[str, Any]]) -> list[str]:
    """The env's own text for the tokenizer: prompts, the passages a search returns, both actions."""
    import gymnasium

    env = gymnasium.make("SearchQA-v0", tasks="train", **ENV_KWARGS)
    texts = [m["content"] for row in rows for m in row["prompt"]]
    try:
        for row in rows:
            env.reset(options={"task_index": row["extra_info"]["task_index"]})
            question = row["extra_info"]["question"]
            texts += [env.step(f"<search> {question} </search>")[0], f"<search> {question} </search>",
                      f"<answer> {row['reward_model']['ground_truth']['target'][0]} </answer>"]
    finally:
        env.close()
    return texts * 3


def _config(model_dir: Path, n: int, total_steps: int | None = None) -> Any:
    from agentgym.integrations.verl.train import compose_recipe

    length = [f"actor_rollout_ref.actor.optim.total_training_steps={total_steps}"] if total_steps else []
    return compose_recipe("grpo", [
        f"actor_rollout_ref.model.path={model_dir}", "actor_rollout_ref.rollout.name=vllm",
        f"actor_rollout_ref.rollout.n={n}", "actor_rollout_ref.rollout.calculate_log_probs=true",
        "actor_rollout_ref.model.use_remove_padding=false", "data.max_prompt_length=256",
        "data.max_response_length=256", f"agentgym.max_turns={MAX_TURNS}", "trainer.n_gpus_per_node=1",
        "actor_rollout_ref.rollout.tensor_model_parallel_size=1", "actor_rollout_ref.actor.ppo_mini_batch_size=2",
        "actor_rollout_ref.actor.ppo_epochs=2", *length])


def rollout_batch(setup: LearningSetup, rows: list[dict[str, Any]], step: int) -> Any:
    """``n`` trajectories per row through verl's ``AgentLoopWorker.generate_sequences``, one call per
    trajectory so that the server's draws come in a fixed order (a run is reproducible). Each row
    carries verl's global step (``step + 1``), which the agent loop reads as the schedule clock."""
    import numpy as np
    from verl.protocol import DataProto

    outputs = []
    for g, row in enumerate(rows):
        for _ in range(setup.n):
            non_tensors = {key: np.array([row[key]], dtype=object)
                           for key in ("extra_info", "data_source", "reward_model", "agent_name")}
            non_tensors["raw_prompt"] = np.array([row["prompt"]], dtype=object)
            non_tensors["index"] = np.array([row["extra_info"]["index"]], dtype=object)
            non_tensors["uid"] = np.array([f"s{step}g{g}"], dtype=object)
            # the row's own field, as verl's V1 trainer hands it to the agent loop (the schedule clock)
            non_tensors["global_steps"] = np.array([step + 1], dtype=object)
            batch = DataProto.from_dict(non_tensors=non_tensors,
                                        meta_info={"global_steps": step + 1, "validate": False})
            outputs.append(asyncio.run(setup.worker.generate_sequences(batch)))
    for out in outputs:
        out.meta_info.pop("metrics", None)
    return DataProto.concat(outputs)


def policy_loss(model: Any, data: Any, actor: Any) -> tuple[Any, Any]:
    """verl's policy loss (``get_policy_loss_fn`` of the actor's ``loss_mode``, aggregated with its
    ``loss_agg_mode`` under ``response_mask``) on ``data``'s advantages; returns the loss and the
    per-token log-probs (columns that are padding in every row are dropped first: they change nothing)."""
    from verl.trainer.ppo.core_algos import get_policy_loss_fn
    from verl.utils.torch_functional import logprobs_from_logits

    batch = data.batch
    width = batch["responses"].shape[1]
    attention = batch["attention_mask"]
    prompt_width = attention.shape[1] - width  # prompts are padded on the left, responses on the right
    start = prompt_width - int(attention[:, :prompt_width].sum(-1).max())
    used = int(attention[:, prompt_width:].sum(-1).max())
    stop = prompt_width + used
    logits = model(input_ids=batch["input_ids"][:, start:stop], attention_mask=attention[:, start:stop],
                   position_ids=batch["position_ids"][:, start:stop]).logits.float()
    log_prob = logprobs_from_logits(logits[:, -used - 1: -1], batch["responses"][:, :used])
    loss_fn = get_policy_loss_fn(actor.policy_loss.loss_mode)
    loss, _ = loss_fn(old_log_prob=batch["rollout_log_probs"][:, :used], log_prob=log_prob,
                      advantages=batch["advantages"][:, :used], response_mask=batch["response_mask"][:, :used],
                      loss_agg_mode=actor.loss_agg_mode, config=actor)
    return loss, log_prob


def run_learning(estimator: str = "grpo", *, steps: int = 12, seed: int = 0, groups: int = 4, n: int = 8,
                 lr: float = 1e-2, shuffle_rewards: bool = False, frozen_clock: bool = False,
                 setup: LearningSetup | None = None, echo: Any = None) -> Curve:
    """``steps`` steps of rollout, advantage (``ESTIMATORS``), verl's policy loss and AdamW on the tiny
    model; ``shuffle_rewards`` permutes the rewards across the batch's trajectories (a control that
    must learn less); ``frozen_clock`` hands the agent loop verl's first global step at every step
    (a control: a scheduled reward then stays in its first stage). ``setup`` (``make_setup``, whose ``n`` then wins) is restarted from its
    initial weights; without one, a setup is built for ``seed`` in a temporary folder. Torch runs on one thread meanwhile:
    the model is tiny, and on a shared machine more threads only wait for each other."""
    import torch

    require_choice("estimator", estimator, ESTIMATORS)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        if setup is not None:
            return _run(setup, estimator, steps, seed, groups, lr, shuffle_rewards, frozen_clock, echo)
        with tempfile.TemporaryDirectory(prefix="agentgym-learning-") as folder:
            return _run(make_setup(Path(folder), seed=seed, n=n), estimator, steps, seed, groups, lr,
                        shuffle_rewards, frozen_clock, echo)
    finally:
        torch.set_num_threads(threads)


def _run(setup: LearningSetup, estimator: str, steps: int, seed: int, groups: int, lr: float,
         shuffle_rewards: bool, frozen_clock: bool, echo: Any) -> Curve:
    import numpy as np
    import torch
    from verl.trainer.config import AlgoConfig
    from verl.trainer.ppo.ray_trainer import compute_advantage
    from verl.utils.config import omega_conf_to_dataclass

    from agentgym.integrations.verl import estimator as _estimator  # noqa: F401  (registers vspo)

    started = time.process_time()
    setup.restart(seed)
    n = setup.n
    curve = Curve(estimator, seed, shuffle_rewards)
    actor = omega_conf_to_dataclass(setup.config.actor_rollout_ref.actor)
    algo = setup.config.algorithm if estimator == "vspo" else \
        omega_conf_to_dataclass(setup.config.algorithm, AlgoConfig)
    optimizer = torch.optim.AdamW(setup.model.parameters(), lr=lr)
    # one stream per use, so every arm of a seed sees the same tasks in the same order
    tasks, shuffles, plans = (np.random.default_rng([seed, stream]) for stream in range(3))
    seen_max = -math.inf
    for step in range(steps):
        picked = tasks.choice(len(setup.rows), size=groups, replace=False)
        data = rollout_batch(setup, [setup.rows[i] for i in picked], 0 if frozen_clock else step)
        scores = data.batch["rm_scores"].sum(-1)
        if shuffle_rewards:  # each trajectory paid another's reward, where verl pays it
            scores = scores[torch.from_numpy(shuffles.permutation(len(scores)))]
            data.batch["token_level_rewards"] = _placed_as_verl(scores, data)
        else:  # as verl's trainer does: the rewards are the agent loop's rm_scores, untouched
            data.batch["token_level_rewards"] = data.batch["rm_scores"].clone()
        _record(curve, data, scores)
        if estimator == "vspo":
            seen_max = max(seen_max, float(scores.max()))
            data = _vspo_plan(data, setup.config, seen_max, groups, plans)
        data = compute_advantage(data, adv_estimator=estimator, num_repeat=n, config=algo)
        curve.gradient_share.append(float((data.batch["advantages"].abs().sum(-1) > 0).float().mean()))
        _update(setup.model, optimizer, data, actor, n)
        if echo:
            echo(f"{estimator}{' (shuffled)' if shuffle_rewards else ''} step {step + 1:2d}: reward "
                 f"{curve.reward[-1]:.3f}, search-then-answer {curve.search_then_answer[-1]:.2f}, "
                 f"EM {curve.exact_match[-1]:.2f}, zero-variance groups {curve.zero_variance[-1]:.2f}")
    curve.seconds = time.process_time() - started
    return curve


def format_curves(curves: Sequence[Curve], key: str = "reward") -> str:
    """The curves side by side, one column per run, one row per step, then start, end and CPU time."""
    names = [f"{c.estimator}{' shuffled' if c.shuffled else ''}" for c in curves]
    width = max(12, *(len(name) + 2 for name in names))
    lines = [f"{key} per step (seed {curves[0].seed if curves else '-'})",
             "step" + "".join(name.rjust(width) for name in names)]
    for step in range(max((len(c.series(key)) for c in curves), default=0)):
        values = [c.series(key) for c in curves]
        lines.append(f"{step + 1:4d}" + "".join((f"{v[step]:.3f}" if step < len(v) else "").rjust(width)
                                               for v in values))
    lines.append("start" + "".join(f"{c.start(key):.3f}".rjust(width) for c in curves)[1:])
    lines.append("end " + "".join(f"{c.end(key):.3f}".rjust(width) for c in curves))
    lines.append("cpu s" + "".join(f"{c.seconds:.1f}".rjust(width) for c in curves)[1:])
    return "\n".join(lines)


def _update(model: Any, optimizer: Any, data: Any, actor: Any, n: int) -> None:
    """The actor's update as verl's trainer runs it: ``ppo_epochs`` passes over mini-batches of
    ``ppo_mini_batch_size`` groups (in batch order), each the policy loss, gradient clipping at
    ``optim.clip_grad`` and one optimizer step."""
    import torch

    size = int(actor.ppo_mini_batch_size) * n
    model.train()
    for _ in range(int(actor.ppo_epochs)):
        for start in range(0, len(data), size):
            loss, _ = policy_loss(model, data.slice(start, start + size), actor)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), float(actor.optim.clip_grad))
            optimizer.step()
    model.eval()


def _record(curve: Curve, data: Any, scores: Any) -> None:
    """The step's figures from the batch verl built (its ``reward_extra_info`` columns, ``term/<name>``)."""
    import numpy as np

    from agentgym.rewards import zero_variance_share

    extra = data.non_tensor_batch
    column = lambda key: np.asarray(extra[key], dtype=float)  # noqa: E731
    searched = column("model_turns") >= 2  # model turns: the first did not end the episode, so it searched
    answered = column("truncated") == 0  # ended by the agent's answer
    curve.reward.append(float(data.batch["rm_scores"].sum(-1).mean()))
    curve.search_then_answer.append(float((searched & answered).mean()))
    curve.exact_match.append(float(column("term/exact_match").mean()))
    curve.zero_variance.append(zero_variance_share(scores.tolist(), list(extra["uid"])))
    for key in extra:
        if key.startswith("term/") and not key.endswith("/abstained"):
            curve.terms.setdefault(key[5:], []).append(float(np.asarray(extra[key], dtype=float).mean()))


def _placed_as_verl(scores: Any, data: Any) -> Any:
    """One reward per trajectory where verl's agent loop pays ``reward_score``: the last response
    token (the last position of the response's attention mask), whatever its loss mask."""
    import torch

    response = data.batch["responses"].shape[1]
    last = data.batch["attention_mask"][:, -response:].sum(-1) - 1
    rewards = torch.zeros(data.batch["responses"].shape, dtype=torch.float32)
    rewards[torch.arange(len(scores)), last] = scores.float()
    return rewards


def _vspo_plan(data: Any, config: Any, seen_max: float, groups: int, rng: Any) -> Any:
    """The VSPO replay buffer's batch (``vspo.plan_batch``, as ``VSPOReplayBuffer`` applies it):
    zero-variance groups out, copies of informative groups (uids ``<uid>~copy<k>``) in."""
    import numpy as np

    from agentgym.integrations.verl.estimator import vspo_config
    from agentgym.integrations.verl.vspo import copy_uid, effective_r_max, group_stats, plan_batch

    vspo = vspo_config(config.algorithm)
    uids = list(data.non_tensor_batch["uid"])
    scores = data.batch["token_level_rewards"].sum(-1).tolist()
    rows: dict[str, list[int]] = {}
    for i, uid in enumerate(uids):
        rows.setdefault(uid, []).append(i)
    r_max = effective_r_max(vspo, seen_max)
    stats = [group_stats(uid, [scores[i] for i in members], r_max, vspo) for uid, members in rows.items()]
    plan = plan_batch(stats, groups, vspo, rng)
    picked = [(i, uid) for uid in plan.keep for i in rows[uid]]
    picked += [(i, copy_uid(uid, k)) for uid, k in plan.copies for i in rows[uid]]
    out = data.select_idxs(np.array([i for i, _ in picked]))
    out.non_tensor_batch["uid"] = np.array([uid for _, uid in picked], dtype=object)
    return out
