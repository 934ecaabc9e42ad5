"""The TRL bridge: rollout output, masks, the schedule clock, reward functions, tools, recipes.

Real TRL 1.16 ``GRPOTrainer`` objects over a tiny Qwen2 and a word-level tokenizer built here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from types import SimpleNamespace

import gymnasium
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("trl")

import agentgym  # noqa: E402,F401
from agentgym.errors import ConfigError  # noqa: E402
from agentgym.integrations.trl import (  # noqa: E402
    ReactConstraint,
    SearchTool,
    TagConstraint,
    TravelPlannerTools,
    agentgym_reward,
    schedule_clock,
    task_dataset,
    term_reward,
)
from agentgym.integrations.trl.rollout import TASK_KEY, task_of  # noqa: E402
from agentgym.integrations.trl.train import build_run, load_recipe  # noqa: E402

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A trainer and rollout from the trl_searchqa recipe, 2 prompts x 4 episodes."""
    import torch

    torch.manual_seed(0)
    recipe = load_recipe("trl_searchqa", ["tasks.count=4"])
    out = tmp_path_factory.mktemp("trl")
    trainer, rollout = build_run(recipe, grpo={"output_dir": str(out), "per_device_train_batch_size": 8,
                                               "num_generations": 4, "max_steps": 1, "disable_tqdm": True})
    return trainer, rollout


def _batch(trainer, n=8):
    dataset = trainer.train_dataset
    return [dataset[i // 4]["prompt"] for i in range(n)]


def test_rollout_returns_what_grpo_trainer_expects(run):
    trainer, rollout = run
    out = rollout(_batch(trainer), trainer)
    assert {"prompt_ids", "completion_ids", "logprobs", "env_mask"} <= set(out)
    for ids, mask, logprobs in zip(out["completion_ids"], out["env_mask"], out["logprobs"]):
        assert len(logprobs) == len(ids)  # the sampling log-prob of every token, 0.0 where the model did not sample
        assert all(lp == 0.0 for lp, m in zip(logprobs, mask) if m == 0)
        assert all(lp is not None and lp <= 0.0 for lp, m in zip(logprobs, mask) if m == 1)
    for key in ("prompt_ids", "completion_ids", "env_mask", "shaped_reward", "reward_terms", "outcome",
                "report", "episode", "reward_info"):
        assert len(out[key]) == 8, key
    for ids, mask in zip(out["completion_ids"], out["env_mask"]):
        assert len(ids) == len(mask) and set(mask) <= {0, 1} and 1 in mask
    assert set(out["reward_terms"][0]) == {"format", "tool_call_validity", "exact_match"}
    assert all(episode["env_id"] == "SearchQA-v0" for episode in out["episode"])


def test_env_mask_is_zero_exactly_on_observations_and_added_tokens(run):
    trainer, rollout = run
    out = rollout(_batch(trainer), trainer)
    tokenizer = trainer.processing_class
    searched = 0
    for ids, mask, episode in zip(out["completion_ids"], out["env_mask"], out["episode"]):
        masked = [t for t, m in zip(ids, mask) if m == 0]
        sampled = tokenizer.decode([t for t, m in zip(ids, mask) if m == 1])
        assert "<information>" not in sampled  # the env's text is never trained on
        if "tool" in episode["actions"]:
            searched += 1
            assert "<information>" in tokenizer.decode(masked)
        # each turn an observation follows ends with the end-of-turn token: sampled (mask 1) or added after
        # a stop string (mask 0); the last turn stays as sampled, so the completion ends on a trained token
        for at in (i for i in range(1, len(mask)) if mask[i] == 0 and mask[i - 1] == 1):
            assert ids[at - 1] == tokenizer.eos_token_id or ids[at] == tokenizer.eos_token_id
        assert mask[-1] == 1 or set(mask) == {0}
    assert searched > 0


def test_prompt_and_completion_are_the_chat_the_template_renders(run):
    """The observation tokens are the chat template's rendering of the message, one at a time."""
    trainer, rollout = run
    out = rollout(_batch(trainer, 4), trainer)
    tokenizer = trainer.processing_class
    text = tokenizer.decode(out["prompt_ids"][0] + out["completion_ids"][0], skip_special_tokens=False)
    assert text.startswith("<|user|>") and "<|assistant|>" in text
    if "tool" in out["episode"][0]["actions"]:
        assert "<|end|> <|user|>" in text or "<|end|><|user|>" in text


def test_rollout_runs_the_shared_turn_engine(run, monkeypatch):
    """The TRL rollout and the verl loop play through one play_rollout and one play_turns, no second copy."""
    from agentgym.integrations import rollouts, turns

    calls = []
    original = turns.play_turns

    async def counting(*args, **kwargs):
        calls.append(1)
        return await original(*args, **kwargs)

    monkeypatch.setattr(rollouts, "play_turns", counting)
    trainer, rollout = run
    rollout(_batch(trainer, 4), trainer)
    assert len(calls) == 4
    sources = {name: open(sys.modules[name].__file__).read() for name in (
        "agentgym.integrations.trl.rollout", "agentgym.integrations.turns", "agentgym.integrations.rollouts")}
    assert "play_rollout(" in sources["agentgym.integrations.trl.rollout"]
    assert sum(source.count("def play_turns") for source in sources.values()) == 1


def test_task_dataset_rows_name_their_task_and_bad_prompts_fail_loudly():
    data = task_dataset("SearchQA-v0", options=[{"task_index": 2}], env_kwargs={"synthetic_size": "small"})
    message = data[0]["prompt"][0]
    assert json.loads(message[TASK_KEY]) == {"seed": None, "options": {"task_index": 2}}
    assert task_of(data[0]["prompt"])["options"] == {"task_index": 2}
    with pytest.raises(ConfigError, match="agentgym_task"):
        task_of([{"role": "user", "content": "hi"}])
    with pytest.raises(ConfigError, match="seeds"):
        task_dataset("SearchQA-v0")


def _trainer(step, max_steps, args_max_steps=-1):
    return SimpleNamespace(state=SimpleNamespace(global_step=step, max_steps=max_steps),
                           args=SimpleNamespace(max_steps=args_max_steps))


def test_schedule_clock_reads_trls_step_and_run_length():
    assert schedule_clock(_trainer(7, 100)) == (7, 100)
    assert schedule_clock(_trainer(0, 0, 40)) == (0, 40)  # before train(): args.max_steps
    assert schedule_clock(SimpleNamespace()) == (None, None)


def test_a_fractional_schedule_never_fails_for_lack_of_total_steps():
    """planner_r1/curriculum has stage starts as fractions of the run and no total_steps of its own."""
    reward = "planner_r1/curriculum"
    step, total = schedule_clock(_trainer(5, 0), reward)  # outside train(): no run length anywhere
    assert total is not None and total > step
    env = gymnasium.make("TravelPlanner-v0", reward=reward, total_steps=total)  # as the rollout builds it
    env.reset(options={"task_index": 0, "training_step": step, "total_steps": total})
    *_, info = env.step("Finish[[]]")
    assert info["reward"]["training_step"] == step


def test_agentgym_reward_pays_the_shaped_reward_and_logs_term_means():
    logged = {}
    rewards = agentgym_reward(completions=["a", "b"], shaped_reward=[1.0, 0.5],
                              reward_terms=[{"format": 1.0, "em": 0.0}, {"format": 0.0, "em": 1.0}],
                              outcome=[0.0, 1.0], episode=[{"stop_reason": "terminated"}] * 2,
                              log_metric=lambda name, value: logged.__setitem__(name, value))
    assert rewards == [1.0, 0.5]
    assert logged == {"agentgym/term/format": 0.5, "agentgym/term/em": 0.5, "agentgym/outcome": 0.5,
                      "agentgym/stop/terminated": 1.0}
    assert term_reward("em")(completions=["a", "b"], reward_terms=[{"em": 0.0}, {"em": 1.0}]) == [0.0, 1.0]
    with pytest.raises(ConfigError, match="emm"):
        term_reward("emm")(completions=["a"], reward_terms=[{"em": 0.0}])
    with pytest.raises(ConfigError, match="rollout_func"):
        agentgym_reward(completions=["a"])


def test_tag_constraint_allows_only_well_formed_actions(run):
    trainer, _ = run
    tokenizer = trainer.processing_class
    constraint = TagConstraint(tokenizer, {"<search>": (1, 2), "<answer>": (1, 1)})
    ids = tokenizer.convert_tokens_to_ids
    prefix = tokenizer("where is Skei", add_special_tokens=False)["input_ids"]
    assert sorted(constraint.allowed(prefix, [])) == sorted([ids("<search>"), ids("<answer>")])
    words = constraint.allowed(prefix, [ids("<search>")])
    assert ids("</search>") not in words and set(words) <= set(prefix)
    assert ids("</search>") in constraint.allowed(prefix, [ids("<search>"), prefix[0]])
    assert constraint.allowed(prefix, [ids("<answer>"), prefix[0]]) == [ids("</answer>")]
    assert constraint.allowed(prefix, [ids("<answer>"), prefix[0], ids("</answer>")]) == [tokenizer.eos_token_id]
    with pytest.raises(ConfigError, match="tags"):
        TagConstraint(tokenizer, {"<nosuchtag>": (1, 1)})


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["Port", "Hollymont", "2022", "-", "[", "]", ",", ":", "_", "'", "{", '"',
                                 "CitySearch", "<search>", "</answer>", "é", " ", "  ", "\n", "\t"]), max_size=24))
def test_tiny_tokenizer_decodes_exactly_what_it_encodes(pieces):
    """The text a model writes must reach the env as written: ``CitySearch[Texas]``, not
    ``CitySearch [ Texas ]`` (the word-level decoder joined every token with a space)."""
    from agentgym.integrations.trl.tiny import word_tokenizer

    text = "".join(pieces)
    tokenizer = word_tokenizer([text, "CitySearch[Port Hollymont, 2022-03-06]"])
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tokenizer.unk_token_id not in ids
    assert tokenizer.decode(ids, skip_special_tokens=True) == text


def test_react_constraint_samples_calls_the_travelplanner_env_parses(tmp_path):
    """Every turn the constraint allows is ``Tool[words]``, which the env reads as that tool's call
    (right or wrong arity), never as unparseable text."""
    import torch

    torch.manual_seed(0)
    recipe = load_recipe("trl_travelplanner", ["tasks.count=2"])
    trainer, rollout = build_run(recipe, grpo={"output_dir": str(tmp_path), "per_device_train_batch_size": 8,
                                               "num_generations": 4, "max_steps": 1, "disable_tqdm": True})
    tokenizer = trainer.processing_class
    constraint = rollout.constraint
    assert isinstance(constraint, ReactConstraint)
    ids = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    prefix = ids("Query: a trip to Alderbrook")
    assert constraint.allowed(prefix, []) == ids("CitySearch") + ids("FlightSearch") + ids("GoogleDistanceMatrix") \
        + ids("NotebookWrite")
    assert constraint.allowed(prefix, ids("CitySearch")) == ids("[")
    words = constraint.allowed(prefix, ids("CitySearch["))
    assert ids("]")[0] not in words and set(words) <= set(prefix)
    assert ids("]")[0] in constraint.allowed(prefix, ids("CitySearch[") + words[:1])
    assert constraint.allowed(prefix, ids("CitySearch[ trip]")) == [tokenizer.eos_token_id]

    out = rollout(_batch(trainer), trainer)
    for episode in out["episode"]:
        assert len(episode["actions"]) == 4 and set(episode["actions"]) <= {"tool", "invalid"}
    codes = [info["term/tool_call_validity"] for info in out["reward_info"]]
    assert all(0.0 <= c <= 1.0 for c in codes)
    env = gymnasium.make("TravelPlanner-v0")
    env.reset(options={"task_index": 0})
    for completion, mask in zip(out["completion_ids"], out["env_mask"]):
        turns = tokenizer.decode([t for t, m in zip(completion, mask) if m], skip_special_tokens=True)
        first = turns.split("]")[0] + "]"
        _, _, _, _, info = env.step(first)
        assert (info["error"] or {}).get("code") != "unparseable_action", first
    with pytest.raises(ConfigError, match="tools"):
        ReactConstraint(tokenizer, ["NoSuchTool"])
    for words in (0, True, 2.5):  # a bool or a float is not a word count
        with pytest.raises(ConfigError, match="max_words"):
            ReactConstraint(tokenizer, ["FlightSearch"], max_words=words)
    with pytest.raises(ConfigError, match="constraint"):
        load_recipe("trl_travelplanner", ['rollout.constraint.tags={"<answer>": [1, 1]}'])


def test_environment_factory_classes_play_their_envs():
    class Search(SearchTool):
        env_kwargs = {"synthetic_size": "small"}
        reward = {"terms": [{"kind": "exact_match", "weight": 1.0}]}

    tools = Search()
    observation = tools.reset(seed=None, options={"task_index": 0})
    assert "Question" in observation
    question = tools.env.unwrapped.task
    assert "Doc 1" in tools.search(query=question.text)
    tools.answer(answer=question.golden_answers[0])
    assert tools.get_reward() == 1.0 and tools.search(query="x") == "The episode is over."

    planner = TravelPlannerTools()
    data = TravelPlannerTools.dataset(options=[{"task_index": 0}])
    assert planner.reset(prompt=data[0]["prompt"]) is None  # the prompt already holds the observation
    # The tool's reply is the env's own database answer, not just any tool reply.
    cities = planner.env.unwrapped.world.cities_in_state("Texas")
    assert cities and planner.search_cities(state="Texas") == str(list(cities))
    assert planner.info["action"] == "tool" and planner.info.get("error") is None
    assert planner.search_cities(state="Nowhere") == "Invalid State"  # the official tool's reply
    planner.submit_plan(plan="[]")
    assert planner.done and planner.get_reward() == 0.0


def test_grpo_trainer_accepts_the_tool_classes_with_a_tool_template(tmp_path):
    """TRL's own checks: the template renders a tool-calling chat, every public method is a tool."""
    from trl import GRPOConfig, GRPOTrainer

    from agentgym.integrations.trl.tiny import tiny_qwen2, word_tokenizer

    tokenizer = word_tokenizer(["search answer query plan city state"])
    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, per_device_train_batch_size=2, num_generations=2,
                      max_steps=1, report_to=[], max_completion_length=8)
    class Search(SearchTool):
        env_kwargs = {"synthetic_size": "small"}

    data = Search.dataset(options=[{"task_index": 0}])

    trainer = GRPOTrainer(model=tiny_qwen2(tokenizer), processing_class=tokenizer, args=args, train_dataset=data,
                          environment_factory=Search)
    assert {t.__name__ for t in trainer.tools} == {"search", "answer"}
    rendered = tokenizer.apply_chat_template(data[0]["prompt"], tools=trainer.tools, tokenize=False,
                                             add_generation_prompt=True)
    assert rendered.startswith("<|system|> tools : answer search")


def test_recipe_overrides_and_mistakes():
    recipe = load_recipe("trl_searchqa", ["grpo.max_steps=3", "model.hidden_size=32"])
    assert recipe.grpo["max_steps"] == 3 and recipe.model.hidden_size == 32
    with pytest.raises(ConfigError, match="recipe"):
        load_recipe("trl_searchqa", ["model.size=3"])
    with pytest.raises(ConfigError, match="override"):
        load_recipe("trl_searchqa", ["grpo.max_steps"])
    with pytest.raises(ConfigError, match="trl_searchqa"):
        load_recipe("trl_nosuch")


def test_train_dry_run_from_the_cli():
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    out = subprocess.run([sys.executable, "-m", "agentgym.cli", "train", "trl_searchqa", "--dry-run",
                          "grpo.max_steps=5"], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "trl_searchqa: ready to train" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "agentgym.cli", "train", "trl_searchqa", "--dry-run",
                          "env.kwargs.top_k=0"], capture_output=True, text=True, timeout=300, env=env)
    assert bad.returncode == 1 and "top_k" in bad.stdout


def test_fewer_tasks_than_a_step_samples_is_refused_not_trained_for_0_steps(tmp_path):
    """TRL drops an incomplete batch of prompts: 3 tasks for a step of 4 prompts x 8 trained 0
    steps and exited 0. The run, and the dry run, refuse it naming tasks.count."""
    # In subprocesses: a second GRPOConfig in this process would reset accelerate's state under the
    # module's trainer.
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    out = subprocess.run([sys.executable, "-m", "agentgym.cli", "train", "trl_searchqa", "tasks.count=3",
                          f"grpo.output_dir={tmp_path}"], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 2, (out.returncode, out.stderr[-2000:])
    assert re.search(r"tasks.count=3 .* at least 4: each step samples 4 tasks x 8", out.stderr), out.stderr[-2000:]
    dry = subprocess.run([sys.executable, "-m", "agentgym.cli", "train", "trl_searchqa", "--dry-run", "tasks.count=3"],
                         capture_output=True, text=True, timeout=300, env=env)
    assert dry.returncode == 1 and "tasks.count=3" in dry.stdout


# -- action_format="search-r1": the env's declared turn cut, and Search-R1's token layout -------------
CORPUS = [
    {"id": "0", "contents": '"Evan Morris"\nEvan Morris (1977 - 2015) was a lobbyist for Genentech.\nHe lived in DC.'},
    {"id": "1", "contents": '"Genentech"\nGenentech is a biotechnology company founded in 1976.'},
    {"id": "2", "contents": '"Roche"\nRoche acquired Genentech in 2009.'},
]
SEARCH_R1_ENV = {"action_format": "search-r1", "corpus": CORPUS,
                 "tasks": [{"question": "Which company did Evan Morris work for", "golden_answers": ["Genentech"]}]}


@pytest.fixture(scope="module")
def qwen_tokenizer(tmp_path_factory):
    """A byte-level BPE with the Qwen2.5 chat template (``agentgym verl selftest``'s; the model is unused)."""
    from agentgym.integrations.verl.preflight.selftest import build_tiny_model

    corpus = [c["contents"] for c in CORPUS] * 20 + ["<search> </search> <answer> </answer> <information>"] * 20
    return build_tiny_model(tmp_path_factory.mktemp("qwen"), corpus)[1]


def _scripted_sampler(tokenizer, replies):
    """TRL's ``TurnSampler`` (decoding, batching) with scripted turns instead of ``generate``."""
    from agentgym.integrations.trl._sampler import TurnSampler

    class Scripted(TurnSampler):
        def __init__(self):
            self.tokenizer, self.live, self._pending = tokenizer, 1, []
            self.replies, self.stops = list(replies), []

        async def sample(self, prefix, max_tokens, stops):
            self.stops.append(stops)
            reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
            ids = tokenizer.encode(reply, add_special_tokens=False)[:max_tokens]
            return ids, [-0.5] * len(ids)

    return Scripted()


def _play_trl(tokenizer, replies, **kwargs):
    import asyncio

    from agentgym.integrations.chat_layout import ChatLayout
    from agentgym.integrations.rollouts import Clock
    from agentgym.integrations.trl.rollout import AgentGymRollout
    from agentgym.integrations.turns import TurnRules

    rollout = AgentGymRollout("SearchQA-v0", env_kwargs=SEARCH_R1_ENV, **kwargs)
    sampler, layout = _scripted_sampler(tokenizer, replies), ChatLayout(tokenizer)
    rules = TurnRules(response_length=600, stop_ids=layout.stop_ids, end_of_turn=layout.end_of_turn)
    played = asyncio.run(rollout._play(sampler, layout, rules, rollout._task({"options": {"task_index": 0}}), Clock()))
    return rollout._output([played], None, layout), sampler


@pytest.mark.parametrize("layout", ["chat", "search-r1"])
def test_trl_cuts_search_r1_turns_as_search_r1_does(qwen_tokenizer, layout):
    """The issue case through TRL: the search inside <think> runs (no resuming), the server stops only at
    </search>, the answers after the acting one are scored (transcript scoring)."""
    replies = ["<think>try <search>Evan Morris</search>",
               "<answer>Roche</answer><answer>Genentech</answer><search>q</search> ignored"]
    out, sampler = _play_trl(qwen_tokenizer, replies, layout=layout)
    assert set(sampler.stops) == {("</search>",)}
    assert len(sampler.stops) == len(out["episode"][0]["actions"])  # one sampling call a turn: no resuming
    assert out["shaped_reward"] == [1.0] and out["episode"][0]["stop_reason"] == "terminated"
    assert out["episode"][0]["actions"][0] == "tool"  # the search inside <think> ran
    text = qwen_tokenizer.decode(out["completion_ids"][0])
    first_turn, _, rest = text.partition("<information>Doc 1(Title: \"Evan Morris\")")
    assert rest and "<answer>" not in first_turn and "ignored" not in text  # the first turn was not resumed


def test_trl_plays_search_r1s_token_layout(qwen_tokenizer):
    """``layout="search-r1"``: re-tokenized cut turns (mask 1) and raw observation tokens cut to
    max_observation_tokens (mask 0) in one completion, no end-of-turn token, the chat-templated prompt."""
    replies = ["<think>find him</think><search>Evan Morris</search><information>made up",
               "no tags at all", "<answer> Genentech </answer> trailing"]
    out, _ = _play_trl(qwen_tokenizer, replies, layout="search-r1", max_observation_tokens=40)
    env = gymnasium.make("SearchQA-v0", **SEARCH_R1_ENV)
    env.reset(options={"task_index": 0})
    encode = lambda s: qwen_tokenizer.encode(s, add_special_tokens=False)  # noqa: E731
    observation, invalid = env.step("<search>Evan Morris</search>")[0], env.step("no tags at all")[0]
    turns = [encode("<think>find him</think><search>Evan Morris</search>"), encode("no tags at all"),
             encode("<answer> Genentech </answer>")]
    observations = [encode(observation)[:40], encode(invalid)[:40]]
    assert out["completion_ids"][0] == turns[0] + observations[0] + turns[1] + observations[1] + turns[2]
    assert out["env_mask"][0] == [1] * len(turns[0]) + [0] * len(observations[0]) + [1] * len(turns[1]) \
        + [0] * len(observations[1]) + [1] * len(turns[2])
    assert qwen_tokenizer.eos_token_id not in out["completion_ids"][0] and out["shaped_reward"] == [1.0]
    assert out["prompt_ids"][0] == qwen_tokenizer.apply_chat_template(
        [{"role": "user", "content": env.reset(options={"task_index": 0})[0]}], add_generation_prompt=True,
        tokenize=True, return_dict=False)


def test_trl_refuses_the_search_r1_layout_for_other_envs_and_unknown_layouts(run):
    from agentgym.integrations.trl.rollout import AgentGymRollout

    trainer, _ = run
    rollout = AgentGymRollout("SearchQA-v0", env_kwargs={"synthetic_size": "small"}, layout="search-r1")
    with pytest.raises(ConfigError, match="action_format='search-r1'"):
        rollout(_batch(trainer, 2), trainer)
    with pytest.raises(ConfigError, match="layout"):
        AgentGymRollout("SearchQA-v0", layout="search_r1")


def test_trls_own_tool_loop_calls_the_search_tool_a_tiny_model_writes(tmp_path):
    """``environment_factory`` end to end through TRL's tool-calling loop: a tiny model taught (a
    few supervised steps here) to write one tool call decodes it exactly, TRL parses it with the
    tokenizer's response schema, calls ``SearchTool.search`` on the env, and appends the result."""
    import torch
    from trl import GRPOConfig, GRPOTrainer

    from agentgym.integrations.trl.tiny import tiny_qwen2, word_tokenizer

    class Search(SearchTool):
        env_kwargs = {"synthetic_size": "small", "top_k": 1, "passage_chars": 60}

    seen = []

    def record(environments, **kwargs):
        seen.extend(dict(e.info) for e in environments)
        return [e.get_reward() for e in environments]

    data = Search.dataset(options=[{"task_index": 0}])
    call = '<tool_call> {"name": "search", "arguments": {"query": "Skei"}} </tool_call><|end|>'
    tokenizer = word_tokenizer([data[0]["prompt"][0]["content"], call, "<|system|> tools : answer search"])
    torch.manual_seed(0)
    model = tiny_qwen2(tokenizer)
    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, per_device_train_batch_size=2, num_generations=2,
                      max_steps=1, report_to=[], max_completion_length=96, top_k=1, max_tool_calling_iterations=1,
                      disable_tqdm=True)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, args=args, train_dataset=data,
                          environment_factory=Search, reward_funcs=[record])
    prompt = tokenizer.apply_chat_template(data[0]["prompt"], tools=trainer.tools, tokenize=False,
                                           add_generation_prompt=True)
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    call_ids = tokenizer(call, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(call_ids) == call
    ids = torch.tensor([prompt_ids + call_ids])
    labels = ids.clone()
    labels[0, :len(prompt_ids)] = -100
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(200):
        optimizer.zero_grad()
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.05  # it writes the call

    trainer.train()
    assert seen and all(info["action"] == "tool" for info in seen), seen
    assert all(info["tool_call"] == {"name": "search", "arguments": {"query": "Skei"}} for info in seen)


# -- the sampler: log-probs on TRL's own generate path, every end-of-turn id -------------------------
def _sampled(trainer, stop_ids, prefix, constraint=None, max_tokens=12):
    import asyncio

    from agentgym.integrations.trl._sampler import TurnSampler

    sampler = TurnSampler(trainer, stop_ids, constraint=constraint)
    sampler.live = 1
    return asyncio.run(sampler.sample(prefix, max_tokens, ()))


def test_generate_returns_the_log_probs_it_sampled_from(run):
    """Each token's log-prob is the model's, under the sampling temperature, at the prefix it was drawn at."""
    import torch

    trainer, _ = run
    prefix = trainer.train_dataset[0]["prompt"] and trainer.processing_class.apply_chat_template(
        trainer.train_dataset[0]["prompt"], add_generation_prompt=True, tokenize=True, return_dict=False)
    tokens, logprobs = _sampled(trainer, [trainer.processing_class.eos_token_id], prefix)
    assert tokens and len(logprobs) == len(tokens)
    model = trainer.accelerator.unwrap_model(trainer.model)
    with torch.no_grad():
        logits = model(torch.tensor([prefix + tokens])).logits[0].float() / trainer.args.temperature
    expected = [float(torch.log_softmax(logits[len(prefix) + i - 1], -1)[t]) for i, t in enumerate(tokens)]
    assert logprobs == pytest.approx(expected, abs=1e-4)


def test_what_an_episode_samples_does_not_depend_on_the_order_episodes_join_the_batch(run):
    """Defect: episodes join a round in the order their env calls finish on the env threads, and
    row k of ``generate`` got the k-th draws: the same seed sampled different turns run to run, so
    no learning run was reproducible. Each prefix now gets the same turn whatever the order."""
    import asyncio

    import torch

    from agentgym.integrations.trl._sampler import TurnSampler

    trainer, _ = run
    tokenizer = trainer.processing_class
    prefixes = [tokenizer.apply_chat_template(trainer.train_dataset[i]["prompt"], add_generation_prompt=True,
                                              tokenize=True, return_dict=False) for i in range(3)]

    def sampled(order):
        torch.manual_seed(0)
        sampler = TurnSampler(trainer, [tokenizer.eos_token_id])
        sampler.live = len(order)

        async def all_of():
            return await asyncio.gather(*(sampler.sample(prefixes[i], 16, ()) for i in order))

        return dict(zip(order, asyncio.run(all_of())))

    assert sampled([0, 1, 2]) == sampled([2, 0, 1]) == sampled([1, 2, 0])


def test_a_turn_ends_at_every_end_of_turn_id_the_model_lists(run):
    """Defect: the sampler stopped on ``tokenizer.eos_token_id`` only; TRL's ``eos_token_ids`` holds every
    id of the generation config (Qwen2.5-Instruct lists two)."""
    trainer, _ = run
    tokenizer = trainer.processing_class
    other = tokenizer.convert_tokens_to_ids("<|user|>")

    class First:
        def allowed(self, prefix, turn):
            return [other] if not turn else None

    prefix = tokenizer("<|user|> hi <|end|><|assistant|>", add_special_tokens=False)["input_ids"]
    tokens, _ = _sampled(trainer, [tokenizer.eos_token_id, other], prefix, constraint=First())
    assert tokens == [other]
    tokens, _ = _sampled(trainer, [tokenizer.eos_token_id], prefix, constraint=First(), max_tokens=6)
    assert tokens[0] == other and len(tokens) > 1  # not an end-of-turn id here: the turn goes on


_SLOT = ("go to Skei", "go to Skei city", "go to Vehaethuin", "stay home")


def _template_tokenizer():
    """A tokenizer trained on the prompts and on every part of the templates below, as written."""
    from agentgym.integrations.trl.tiny import word_tokenizer

    return word_tokenizer(["Plan for Skei:", "Plan for Mathford:", "Plan for Vehaethuin:", "[", ", ",
                           "] then done.", "rest", *_SLOT])


def test_template_constraint_writes_the_template_with_one_text_per_slot():
    from agentgym.integrations.trl.constraints import TemplateConstraint

    tokenizer = _template_tokenizer()
    ids = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    constraint = TemplateConstraint(tokenizer, {"for Skei": ["[", ("go to Skei", "go to Skei city", "stay home"),
                                                              "] then done."],
                                                "for Mathford": [("rest",)]})
    prefix = ids("Plan for Skei:")
    assert constraint.allowed(prefix, []) == ids("[")
    assert sorted(constraint.allowed(prefix, ids("["))) == sorted(ids("go") + ids("stay"))
    after = ids("[") + ids("go to Skei")  # a complete text that another one continues: both ways open
    assert sorted(constraint.allowed(prefix, after)) == sorted(ids(" city") + ids("] then done.")[:1])
    done = after + ids("] then done.")
    assert constraint.allowed(prefix, after + ids("]")) == ids("] then done.")[1:2]
    assert constraint.allowed(prefix, done) == [tokenizer.eos_token_id]
    assert constraint.allowed(ids("Plan for Mathford:"), []) == ids("rest")
    assert constraint.allowed(ids("Plan for Vehaethuin:"), []) is None  # no marker: not constrained


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 10**6), min_size=30, max_size=30))
def test_template_constraint_only_ever_writes_a_text_of_the_template(picks):
    from agentgym.integrations.trl.constraints import TemplateConstraint

    tokenizer = _template_tokenizer()
    slot = _SLOT
    constraint = TemplateConstraint(tokenizer, {"Skei": ["[", slot, ", ", slot, "] then done."]})
    prefix = tokenizer("Plan for Skei:", add_special_tokens=False)["input_ids"]
    turn = []
    for pick in picks:
        allowed = constraint.allowed(prefix, turn)
        turn.append(allowed[pick % len(allowed)])
        if turn[-1] == tokenizer.eos_token_id:
            break
    assert turn[-1] == tokenizer.eos_token_id
    assert tokenizer.decode(turn[:-1]) in {f"[{a}, {b}] then done." for a in slot for b in slot}


def test_template_constraint_refuses_templates_it_could_not_follow():
    from agentgym.integrations.trl.constraints import TemplateConstraint

    tokenizer = _template_tokenizer()
    with pytest.raises(ConfigError, match="writes exactly"):
        TemplateConstraint(tokenizer, {"Skei": ["go to Zzyzx"]})  # a word the tokenizer does not know
    with pytest.raises(ConfigError, match="mistaken"):  # after "go to Skei", " city" could be either
        TemplateConstraint(tokenizer, {"Skei": [("go to Skei", "go to Skei city"), " city"]})
    with pytest.raises(ConfigError, match="templates"):
        TemplateConstraint(tokenizer, {})


def test_the_rollout_logs_the_reward_labs_figures_of_its_groups(run):
    """The live figures are the reward lab's own (``group_metrics``), a group per prompt's generations,
    logged through TRL's ``log_metric`` by ``agentgym_reward``."""
    import math

    from agentgym.rewards.lab import group_metrics

    trainer, rollout = run
    out = rollout(_batch(trainer), trainer)
    signal = out["reward_signal"][0]
    assert all(s is signal for s in out["reward_signal"])
    rows = [(i // trainer.num_generations, info["score"], info["outcome"], None) for i, info in
            enumerate(out["reward_info"])]
    expected = group_metrics(rows)
    for name in ("agentgym/reward/zero_var", "agentgym/reward/within_std", "agentgym/reward/mean_total"):
        assert signal[name] == pytest.approx(expected[name], nan_ok=True)
    logged = {}
    agentgym_reward(out["completion_ids"], **{k: v for k, v in out.items() if k != "completion_ids"},
                    log_metric=logged.__setitem__)
    assert {k: v for k, v in signal.items() if math.isfinite(v)}.items() <= logged.items()
    assert rollout.history[-1]["signal"] == signal
