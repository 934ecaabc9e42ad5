"""Per-turn cost of each trainer bridge beside the shared engine, on the same scripted episodes.

The engine plays each episode straight through ``gymnasium.make(env_id, reward=spec)`` (reset, then
a step per reply, cut where the env stops reading). Each bridge plays the same replies through its
target's own code: ``MessageEpisode`` (the shared driver), skyrl-gym (``skyrl_gym.make``, ``init``,
``step``), tinker-cookbook (``do_group_rollout`` with the ``role_colon`` renderer and a scripted
sampler, so tokenizing and rendering count), verifiers (``run_eval`` with its chat harness against
the chat stub on loopback: what one turn costs there is the harness program's relaunch) and the
OpenEnv door (OpenEnv's ``GenericEnvClient`` over loopback, one WebSocket session per episode, its
env in a worker process as ``agentgym openenv`` runs it). Each row
prints both per-turn times, the bridge's overhead and the ratio. An bridge gets its envs where its
target asks for them (skyrl-gym and tinker-cookbook: one per trajectory or group), from the shared
driver's env pool; the engine reuses one env. A target that is not installed in this interpreter is
listed as such (verifiers and openenv 0.10 have their own venvs: ``make bench`` runs this in each).

    python benchmarks/bench_integrations.py [--episodes 20]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import gymnasium

import agentgym  # noqa: F401 - registers the envs
from agentgym.envs.travelplanner.scripted import gold_plan_actions
from agentgym.integrations.messages import MessageEpisode, env_task
from agentgym.integrations.stops import TurnCut

REWARDS = {"SearchQA-v0": "prs/short", "TravelPlanner-v0": "planner_r1/dense"}


def scripted(env_id: str, count: int, **env_kwargs) -> list[tuple[dict, str, list[str]]]:
    """(start, first observation, replies) per task: SearchQA searches then answers the gold answer;
    TravelPlanner replays the gold plan after its lookups."""
    env = gymnasium.make(env_id, **env_kwargs)
    out = []
    for index in range(count):
        start = {"seed": 0, "options": {"task_index": index}}
        observation, _ = env.reset(seed=0, options=dict(start["options"]))
        task = env.unwrapped.task
        if env_id == "SearchQA-v0":
            replies = [f"<search>{task.text[:60]}</search>", f"<answer>{task.golden_answers[0]}</answer> trailing"]
        else:
            replies = gold_plan_actions(task, env.unwrapped.action_format, tools=env.unwrapped.mode == "tool-use")
        out.append((start, observation, replies))
    env.close()
    return out


def per_turn_us(play, episodes) -> float:
    """Median over episodes of (episode wall time / its turns), in microseconds."""
    times = []
    for start, prompt, replies in episodes:
        t = time.perf_counter()
        turns = play(start, prompt, replies)
        times.append((time.perf_counter() - t) / max(1, turns))
    return statistics.median(times) * 1e6


def engine(env_id: str, env_kwargs: dict):
    env = gymnasium.make(env_id, reward=REWARDS[env_id], **env_kwargs)
    cut = TurnCut.of(env)

    def play(start, prompt, replies):
        env.reset(seed=start["seed"], options=dict(start["options"]))
        for n, reply in enumerate(replies, 1):
            end = cut.end(reply) if cut.stops else None
            if any(env.step(reply if end is None else reply[:end])[2:4]):
                return n
        return len(replies)

    return play


def shared_driver(env_id: str, env_kwargs: dict):
    def play(start, prompt, replies):
        episode = MessageEpisode(env_task(env_id, start, reward=REWARDS[env_id], env_kwargs=env_kwargs))
        episode.reset()
        for reply in replies:
            episode.step(reply)
            if episode.done:
                break
        episode.close()
        return episode.end().num_turns

    return play


def skyrl(env_id: str, env_kwargs: dict):
    import json

    import skyrl_gym
    from omegaconf import OmegaConf

    import agentgym.integrations.skyrl  # noqa: F401 - registers the env class

    config = OmegaConf.create({"env_id": env_id, "reward": REWARDS[env_id], "env_kwargs": env_kwargs})

    def play(start, prompt, replies):
        env = skyrl_gym.make("agentgym", env_config=config,
                             extras={"agentgym_task": json.dumps(start), "max_turns": 30})
        env.init([{"role": "user", "content": prompt}])
        try:
            for n, reply in enumerate(replies, 1):
                if env.step(reply)["done"]:
                    return n
            return len(replies)
        finally:
            env.close()  # as SkyRL's generator does

    return play


def tinker(env_id: str, env_kwargs: dict):
    from tinker_cookbook.completers import TinkerTokenCompleter
    from tinker_cookbook.rl.rollouts import do_group_rollout
    from tinker_cookbook.tokenizer_utils import register_tokenizer

    from agentgym.integrations.tinker import AgentGymGroupBuilder, ScriptedSampler, byte_tokenizer

    tokenizer = byte_tokenizer()
    register_tokenizer("bench-bytes", lambda: tokenizer)

    def play(start, prompt, replies):
        def policy(text: str) -> str:
            turn = text.count("\n\nAssistant:") - 1
            return replies[turn] if turn < len(replies) else "GiveUp[done]"

        builder = AgentGymGroupBuilder(env_id, start=start, reward=REWARDS[env_id], group_size=1,
                                       model_name="bench-bytes", env_kwargs=env_kwargs)
        policy_ = TinkerTokenCompleter(ScriptedSampler(policy, tokenizer), max_tokens=8192)
        group = asyncio.run(do_group_rollout(builder, policy_))
        return len(group.trajectories_G[0].transitions)

    return play


def verifiers(env_id: str, env_kwargs: dict):
    from verifiers.v1.cli.eval.runner import run_eval
    from verifiers.v1.configs.cli.eval import EvalConfig

    from agentgym.agents.stub import ChatStub
    from agentgym.server.live_server import LiveServer

    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # uv, for the harness
    os.environ.setdefault("BENCH_STUB_KEY", "not-a-secret")

    def play(start, prompt, replies):
        def policy(messages, tools):
            turn = sum(m["role"] == "assistant" for m in messages)
            return {"content": replies[turn] if turn < len(replies) else "GiveUp[done]"}

        stub = ChatStub(policy)
        with LiveServer(stub.app()) as server, tempfile.TemporaryDirectory() as out:
            config = EvalConfig(
                env={"taskset": {"id": "agentgym-verifiers", "env_id": env_id, "reward": REWARDS[env_id],
                                 "env_kwargs": env_kwargs, "num_tasks": start["options"]["task_index"] + 1},
                     "agent": {"runtime": {"type": "subprocess"}, "max_turns": 30}},
                select={"skip": start["options"]["task_index"], "limit": 1},
                num_rollouts=1, rich=None, push=False, output_dir=Path(out), run={"dir": "run"}, model="stub",
                client={"base_url": server.url + "/v1", "api_key_var": "BENCH_STUB_KEY"})
            asyncio.run(run_eval(config))
        return len(stub.requests)

    return play


def openenv(env_id: str, env_kwargs: dict):
    import atexit

    from openenv.core import GenericEnvClient

    from agentgym.server import ServerConfig
    from agentgym.server.live_server import LiveServer
    from agentgym.server.openenv_app import create_openenv_app

    app = create_openenv_app(ServerConfig(env_ids=(env_id,), insecure_no_auth=True, env_workers=1), env_id)
    live = LiveServer(app).start()
    atexit.register(live.stop)

    async def episode(start, replies):
        async with GenericEnvClient(base_url=live.url) as env:  # a rollout's session, its connect included
            await env.reset(seed=start["seed"], options=start["options"],
                            env_kwargs={**env_kwargs, "reward": REWARDS[env_id]})
            for n, reply in enumerate(replies, 1):
                if (await env.step({"text": reply})).done:
                    return n
            return len(replies)

    def play(start, prompt, replies):
        return asyncio.run(episode(start, replies))

    return play


BRIDGES = {"shared driver": (shared_driver, None), "skyrl-gym": (skyrl, "skyrl_gym"),
            "tinker-cookbook": (tinker, "tinker_cookbook"), "verifiers": (verifiers, "verifiers"),
            "openenv": (openenv, "openenv")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=20, help="SearchQA episodes (TravelPlanner: a quarter)")
    parser.add_argument("--only", nargs="*", default=list(BRIDGES), help="bridges to measure")
    args = parser.parse_args()
    cases = [("SearchQA-v0", {}, args.episodes), ("TravelPlanner-v0", {}, max(2, args.episodes // 4))]
    print("| env | bridge | bridge per turn | engine per turn | overhead per turn | ratio |")
    print("|---|---|---|---|---|---|")
    for env_id, env_kwargs, count in cases:
        episodes = scripted(env_id, count, **env_kwargs)
        per_turn_us(engine(env_id, env_kwargs), episodes)  # warm the world, index and reward caches first
        base = per_turn_us(engine(env_id, env_kwargs), episodes)
        for name in args.only:
            build, module = BRIDGES[name]
            if module is not None and importlib.util.find_spec(module) is None:
                print(f"| {env_id} | {name} | not installed in this interpreter | {base:,.0f} us | | |")
                continue
            # verifiers relaunches a program per turn (seconds): a few episodes say enough
            sample = episodes[:2] if name == "verifiers" else episodes
            if name == "verifiers" and env_id == "TravelPlanner-v0":
                kwargs = {**env_kwargs, "mode": "sole-planning"}
                sample = scripted(env_id, 2, **kwargs)
                base_here = per_turn_us(engine(env_id, kwargs), sample)
            else:
                kwargs, base_here = env_kwargs, base
            ours = per_turn_us(build(env_id, kwargs), sample)
            print(f"| {env_id}{' (sole-planning)' if kwargs is not env_kwargs else ''} | {name} | {ours:,.0f} us | "
                  f"{base_here:,.0f} us | {ours - base_here:,.0f} us | {ours / base_here:,.2f}x |")


if __name__ == "__main__":
    main()
