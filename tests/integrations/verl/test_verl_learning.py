"""A tiny model learns SearchQA-v0 through verl's own rollout and update math on CPU, and the
controls that must fail do (``agentgym.integrations.verl.preflight.learning`` has the whole path).

Setup: a random 2-layer Qwen2 (hidden 32) with a BPE tokenizer trained on the env's text; verl's
``AgentLoopWorker.generate_sequences`` runs the agentgym agent loop against an in-process stand-in
for vLLM (which needs a GPU) that samples only tokens valid in a ``<search>``/``<answer>`` action
(no SFT warm start); the rewards are verl's own ``rm_scores`` (the agent loop's reward on the last
response token, as the trainer takes them); verl's ``compute_advantage`` (grpo, reinforce_plus_plus;
vspo after the VSPO batch plan), its policy loss through the real ``ActorConfig`` (2 PPO epochs,
mini-batches of 2 groups, grad clip 1.0), AdamW at 1e-2. Each step: 8 tasks x 4 trajectories.
Reward: ``SEARCH_REWARD``, 1 when the episode searched and then answered, else 0, so groups of 4
often have zero variance (a random policy does it a fifth of the time; a trained one always).

REINFORCE++ is a per-token estimator: its returns run back from the token the reward sits on, and
skip tokens outside the loss mask, so a reward placed on a mask-0 token would reach no token at all
and nothing would be learnt (GRPO and VSPO sum each row's rewards and would not notice).

Seeds: CI runs seed 0, ``pytest -m learning_slow`` seeds 0-4. Measured over seeds 0-4, 12 steps
(start and end: mean reward of the first and last 3 steps):

    reward gain        grpo +0.50 .. +0.77   vspo +0.50 .. +0.76   reinforce++ +0.66 .. +0.81
    shuffled           -0.10 .. +0.01;  grpo - shuffled, same seed: +0.49 .. +0.84
    zero-variance groups (grpo, mean over the run)  0.48 .. 0.61
    seed 0             grpo 0.198 -> 0.969, vspo 0.260 -> 0.958, reinforce++ 0.219 -> 0.927

The margins sit below the smallest gain measured and above the largest shuffled one. About 15 s
of CPU per run; the four runs of a seed share one setup (about 7 s).
"""

from __future__ import annotations

import pytest
from learning_helpers import learning_seeds

STEPS = 12
RISE = 0.35
"""The least rise of the mean reward (= the search-then-answer rate), first 3 steps -> last 3."""
OVER_SHUFFLED = 0.35
"""How much more the real run must gain than the same run with rewards shuffled across trajectories."""
ARMS = {"grpo": ("grpo", False), "vspo": ("vspo", False), "reinforce_plus_plus": ("reinforce_plus_plus", False),
        "shuffled": ("grpo", True)}


@pytest.fixture(scope="module", params=learning_seeds())
def setup(request, tmp_path_factory):
    pytest.importorskip("verl")
    from agentgym.integrations.verl.preflight.learning import SEARCH_REWARD, make_setup

    seed = request.param
    return seed, make_setup(tmp_path_factory.mktemp("verl-learning"), seed=seed, n=4, reward=SEARCH_REWARD)


@pytest.fixture(scope="module")
def curves(setup):
    from agentgym.integrations.verl.preflight.learning import format_curves, run_learning

    seed, built = setup
    runs = {name: run_learning(estimator, steps=STEPS, seed=seed, groups=8, setup=built, shuffle_rewards=shuffled)
            for name, (estimator, shuffled) in ARMS.items()}
    for key in ("reward", "zero_variance", "gradient_share"):  # side by side
        print("\n" + format_curves(list(runs.values()), key))
    return runs


@pytest.mark.parametrize("estimator", ["grpo", "vspo", "reinforce_plus_plus"])
def test_the_search_then_answer_rate_rises(curves, estimator):
    curve = curves[estimator]
    assert curve.gain() >= RISE, curve.reward


def test_shuffled_rewards_learn_measurably_less(curves):
    real, shuffled = curves["grpo"], curves["shuffled"]
    assert real.gain() - shuffled.gain() >= OVER_SHUFFLED, (real.reward, shuffled.reward)


def test_vspo_trains_on_every_row_where_grpo_leaves_zero_variance_groups_idle(curves):
    """VSPO against GRPO on batches where many groups have zero variance: GRPO's rows of such a
    group get advantage 0 (the share of the batch carrying gradient is one minus the zero-variance
    share), VSPO replaces them with copies of informative groups (every row carries gradient, on
    every step that had an informative group).

    Learning per step is not faster at this scale, so it is reported, not asserted: the mean
    reward over the 12 steps, VSPO minus GRPO on the same seed, is -0.10 .. +0.12 (mean 0.00, sd
    0.08 over seeds 0-4), while the share of the batch carrying gradient, mean over the run, is
    0.50-0.83 for VSPO and 0.39-0.52 for GRPO."""
    grpo, vspo = curves["grpo"], curves["vspo"]
    assert sum(grpo.zero_variance) / len(grpo.zero_variance) >= 0.4  # many zero-variance groups (0.48-0.61)
    for zero, share in zip(grpo.zero_variance, grpo.gradient_share):
        assert share == pytest.approx(1.0 - zero)
    informative = [share for zero, share in zip(vspo.zero_variance, vspo.gradient_share) if zero < 1.0]
    assert informative and all(share == 1.0 for share in informative), vspo.gradient_share
    print(f"mean reward over the run: VSPO {sum(vspo.reward) / len(vspo.reward):.3f}, "
          f"GRPO {sum(grpo.reward) / len(grpo.reward):.3f}")



@pytest.mark.parametrize("seed", learning_seeds())
def test_a_scheduled_reward_changes_stage_at_the_planned_step_and_a_frozen_clock_fails(tmp_path, seed):
    """A reward paying format for the first half of the run and exact match for the second (the
    run length set where verl's trainer writes it), 6 steps: which stage paid each step is read
    back from the logged means (``stages_in_force``), and it moves at step 3 as planned; with the
    trainer's step frozen at verl's first, it never moves and the same check fails."""
    pytest.importorskip("verl")
    from agentgym.integrations.verl.preflight.learning import make_setup, run_learning
    from agentgym.rewards import stages_in_force

    staged = {"unit": "fraction", "stages": [
        {"name": "format", "start": 0.0, "terms": [{"kind": "format", "weight": 1.0}, {"kind": "exact_match", "weight": 0.0}]},
        {"name": "answer", "start": 0.5, "terms": [{"kind": "format", "weight": 0.0}, {"kind": "exact_match", "weight": 1.0}]}]}
    built = make_setup(tmp_path, seed=seed, n=4, reward=staged, total_steps=6)

    def stages(frozen):
        curve = run_learning("grpo", steps=6, seed=seed, groups=4, setup=built, frozen_clock=frozen)
        return stages_in_force(staged, curve.reward, curve.terms)

    assert stages(False) == ["format"] * 3 + ["answer"] * 3
    assert stages(True) == ["format"] * 6


def test_tokens_outside_the_loss_mask_get_exactly_zero_gradient(setup):
    """Observation tokens and the end-of-turn token the loop adds get no gradient through verl's
    policy loss, even with an advantage on every position; every token the model produced does.
    Which tokens the model produced comes from the server (where each turn it served sits in the
    token sequence), not from the loop's mask."""
    import torch
    from verl.utils.config import omega_conf_to_dataclass

    from agentgym.integrations.verl.preflight.learning import policy_loss, rollout_batch

    _, setup = setup
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

    from agentgym.integrations.verl.preflight.learning import _WORD, ConstrainedServer, _Action, _last_line, _Trie

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
