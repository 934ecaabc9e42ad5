"""A tiny model learns SearchQA-v0 through verl's own rollout and update math on CPU, and the
controls that must fail do (``agentgym.integrations.verl.learning`` has the whole path).

Setup: a random 2-layer Qwen2 (hidden 32) with a BPE tokenizer trained on the env's text; verl's
``AgentLoopWorker.generate_sequences`` runs the agentgym agent loop against an in-process stand-in
for vLLM (which needs a GPU) that samples only tokens valid in a ``<search>``/``<answer>`` action
(no SFT warm start); verl's ``compute_advantage`` (grpo; vspo after the VSPO batch plan), its
policy loss through the real ``ActorConfig`` (2 PPO epochs, mini-batches of 2 tasks, grad clip 1.0),
AdamW at 1e-2. 12 steps of 4 tasks x 8 trajectories, seed 0. Reward: 0.5 x valid searches (paid
only when the episode ends with an answer) + 0.2 x format + 1.0 x exact match, max 2 turns.

Measured over seeds 0-4 (model init and draws; start/end = mean reward of the first/last 3 steps):

    reward gain        grpo +0.29 .. +0.46   vspo +0.29 .. +0.45   shuffled -0.12 .. +0.06
    grpo - shuffled    +0.28 .. +0.49 (same seed)
    search-then-answer grpo 0.18-0.23 -> 0.71-0.99, vspo -> 0.71-0.98, shuffled ends 0.14-0.32
    seed 0             grpo 0.240 -> 0.695, vspo 0.240 -> 0.687, shuffled 0.245 -> 0.309

The margins sit below the smallest gain measured and above the largest shuffled one. About 14-20 s
of CPU per run; the three runs share one setup (imports and build about 15 s).
"""

from __future__ import annotations

import pytest

STEPS = 12
RISE = 0.20
"""The least rise of the mean reward (first 3 steps -> last 3) for grpo and vspo."""
SEARCH_RISE = 0.30
"""The least rise of the search-then-answer rate, the behaviour the reward asks for."""
OVER_SHUFFLED = 0.20
"""How much more the real run must gain than the same run with rewards shuffled across trajectories."""


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    pytest.importorskip("verl")
    from agentgym.integrations.verl.learning import make_setup

    return make_setup(tmp_path_factory.mktemp("verl-learning"), seed=0)


@pytest.fixture(scope="module")
def curves(setup):
    from agentgym.integrations.verl.learning import format_curves, run_learning

    runs = {"grpo": run_learning("grpo", steps=STEPS, seed=0, setup=setup),
            "vspo": run_learning("vspo", steps=STEPS, seed=0, setup=setup),
            "shuffled": run_learning("grpo", steps=STEPS, seed=0, setup=setup, shuffle_rewards=True)}
    for key in ("reward", "search_then_answer", "exact_match"):  # side by side; no assertion on which wins
        print("\n" + format_curves(list(runs.values()), key))
    return runs


@pytest.mark.learning
@pytest.mark.parametrize("estimator", ["grpo", "vspo"])
def test_the_reward_and_search_then_answer_rise(curves, estimator):
    curve = curves[estimator]
    assert curve.gain() >= RISE, curve.reward
    assert curve.gain("search_then_answer") >= SEARCH_RISE, curve.search_then_answer


@pytest.mark.learning
def test_shuffled_rewards_learn_measurably_less(curves):
    real, shuffled = curves["grpo"], curves["shuffled"]
    assert real.gain() - shuffled.gain() >= OVER_SHUFFLED, (real.reward, shuffled.reward)
    assert real.end("search_then_answer") - shuffled.end("search_then_answer") >= SEARCH_RISE


@pytest.mark.learning
def test_tokens_outside_the_loss_mask_get_exactly_zero_gradient(setup):
    """Observation tokens and the end-of-turn token the loop adds get no gradient through verl's
    policy loss, even with an advantage on every position; every token the model produced does.
    Which tokens the model produced comes from the server (where each turn it served sits in the
    token sequence), not from the loop's mask."""
    import torch
    from verl.utils.config import omega_conf_to_dataclass

    from agentgym.integrations.verl.learning import policy_loss, rollout_batch

    setup.restart(0)
    data = rollout_batch(setup, setup.rows[:2], step=0)
    batch = data.batch
    width = batch["responses"].shape[1]
    real = batch["attention_mask"][:, -width:].bool()  # response positions that are not padding
    produced = torch.zeros_like(real)
    for row, spans in enumerate(setup.server.spans.values()):  # one request per row, in order
        prompt_length = spans[0][0]
        for at, count in spans:
            produced[row, at - prompt_length: at - prompt_length + count] = True
    after_turn = torch.zeros_like(real)
    after_turn[:, 1:] = produced[:, :-1] & ~produced[:, 1:]
    loop_eos = real & after_turn & (batch["responses"] == setup.tokenizer.eos_token_id)
    observed = real & ~produced
    assert observed.sum() > loop_eos.sum() > 0, "no trajectory searched: nothing to check"

    batch["advantages"] = torch.linspace(1.0, 3.0, width).expand(len(data), width).clone()
    actor = omega_conf_to_dataclass(setup.config.actor_rollout_ref.actor)
    loss, log_prob = policy_loss(setup.model, data, actor)
    log_prob.retain_grad()
    loss.backward()
    setup.model.zero_grad()
    grad = log_prob.grad
    used = grad.shape[1]
    assert (grad[produced[:, :used]] != 0).all()
    leaked = grad[observed[:, :used]] != 0
    assert not leaked.any(), f"{int(leaked.sum())} of {int(observed.sum())} observation/end-of-turn tokens got gradient"
    assert torch.equal(batch["response_mask"].bool(), produced)  # the loss mask is exactly the model's tokens


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    pytest.importorskip("transformers")
    from agentgym.integrations.verl.preflight.selftest import build_tiny_model

    corpus = ["<search> Skei city </search>", "<answer> Vehaethuin </answer>", "Skei is a city in Vehaethuin."] * 5
    return build_tiny_model(tmp_path_factory.mktemp("tokenizer"), corpus)[1]


@pytest.mark.parametrize("last_line", ["Question: In which country is the city of Skei?",
                                       "<information>Doc 1(Title: Skei) Skei is a city in Vehaethuin.</information>"])
def test_the_constrained_server_only_writes_well_formed_actions(tokenizer, last_line):
    """Whatever the model prefers among the valid tokens, a turn is one action the env can read."""
    import re

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from agentgym.integrations.verl.learning import _WORD, ConstrainedServer, _Action, _last_line, _Trie

    server = ConstrainedServer(None, tokenizer)
    chat = f"<|im_start|>user\nsome instructions\n{last_line}<|im_end|>\n<|im_start|>assistant\n"
    words = sorted(set(_WORD.findall(_last_line(chat))))
    assert words == sorted(set(_WORD.findall(last_line)))
    trie = _Trie([tokenizer.encode(f" {w}", add_special_tokens=False) for w in words])

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.integers(min_value=0, max_value=10**6), min_size=40, max_size=40))
    def check(picks):
        action, tokens = _Action(server.tags, trie, server.max_words), []
        for pick in picks:
            if action.done:
                break
            valid = action.valid()
            tokens.append(valid[pick % len(valid)])
            action.advance(tokens[-1])
        assert action.done
        match = re.fullmatch(r"<(search|answer)>((?: \w+){1,2}) </(search|answer)>", tokenizer.decode(tokens))
        assert match and match[1] == match[3], tokenizer.decode(tokens)
        assert set(match[2].split()) <= set(words)

    check()
