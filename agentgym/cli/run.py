"""``agentgym run``: evaluate a served model (or your own agent) on an env, resumably."""

from __future__ import annotations

import difflib
import json
import os
import re
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from agentgym._deprecated import alias, warn_renamed
from agentgym.agents.openai_chat import API_KEY_ENV_VAR, ChatAgentConfig
from agentgym.cli._console import labeled, plain_console
from agentgym.cli._options import deprecated_note, parse_env_kwargs
from agentgym.errors import AgentGymError, ConfigError, ModelEndpointError
from agentgym.runner.config import GoldAgentConfig, ImportedAgentConfig, PerturbedAgentConfig, RunConfig, default_out_dir
from agentgym.runner.loop import RunOutcome, run_eval
from agentgym.runner.records import EpisodeRecord
from agentgym.runner.summary import plot, render, summarize

__all__ = ["run", "OFFLINE_AGENTS"]

# Agents that read the task from a local env object (not an env server's session).
_LOCAL_AGENTS = ("gold", "solver", "first-listing", "perturbed")

# Agents that need no model (``agentgym.agents.scripted``): name -> (factory target, the env ids it plays).
OFFLINE_AGENTS = {
    "solver": ("agentgym.agents.scripted:solver_agent", ("TravelPlanner-v0",)),
    "first-listing": ("agentgym.agents.scripted:first_listing_agent", ("TravelPlanner-v0",)),
    "top-title": ("agentgym.agents.scripted:top_title_agent", ("SearchQA-v0", "SearchQA-LongForm-v0")),
}

_RENAMED_AGENTS = {"oracle": "solver", "reference": "gold"}
for _old, _new in _RENAMED_AGENTS.items():
    alias("agentgym run --agent", _old, _new)
for _old in ("index", "seed"):
    alias("agentgym run", f"--tasks {_old}", f"--selection {_old}")


def run(
    env_id: Annotated[str, typer.Argument(help="The env to evaluate on, e.g. TravelPlanner-v0 (see `agentgym list`).")],
    agent: Annotated[str, typer.Option(help="openai (a chat model at --base-url); offline: gold "
                                            "(TravelPlanner's gold-plan replay), solver (TravelPlanner's "
                                            "exact solver), first-listing (the demo's weak TravelPlanner "
                                            "baseline), top-title (SearchQA: answer the top passage's title), "
                                            "perturbed (seeded: each task's passing answer mixed with failure "
                                            "edits and invalid calls, for the reward lab); "
                                            "or module:factory (factory(env) -> Agent).")]
    = "openai",
    base_url: Annotated[str | None, typer.Option(help="The OpenAI-compatible API root, e.g. http://127.0.0.1:8000/v1.")]
    = None,
    model: Annotated[str | None, typer.Option(help="The model name the endpoint serves.")] = None,
    episodes: Annotated[int, typer.Option(help="Episodes to play: episode i is task i (see --selection); with "
                                               "--samples-per-task G, sample i % G of task i // G.")] = 10,
    samples_per_task: Annotated[int, typer.Option(help="Episodes per task, drawn as one group (GRPO's G) with "
                                                       "distinct sample seeds, for `agentgym rewards compare`.")]
    = 1,
    concurrency: Annotated[int, typer.Option(help="Episodes played at once.")] = 8,
    reward: Annotated[str | None, typer.Option(help="Shape rewards with this preset, e.g. planner_r1/dense.")] = None,
    out: Annotated[Path | None, typer.Option(help="Results folder; rerunning into it resumes. Default: "
                                                  "runs/<env>__<model>[__<reward>].")] = None,
    seed: Annotated[int, typer.Option(help="Episode i resets with seed + i.")] = 0,
    tasks: Annotated[str | None, typer.Option(help="The task set: a split name (e.g. train, validation) or a "
                                                   "task file, as in eval and solve (the env kwarg tasks=). "
                                                   "Default: the env's own.")] = None,
    selection: Annotated[str | None, typer.Option(help="How episodes pick their task. index (default): episode "
                                                       "i plays task i, each once; seed: the env draws tasks "
                                                       "from the seed.")] = None,
    env_kwarg: Annotated[list[str] | None, typer.Option("--env-kwarg", "-k", help="Env constructor kwarg "
                                                        "KEY=VALUE (VALUE read as JSON when it parses), repeatable.")]
    = None,
    env_server: Annotated[str | None, typer.Option(help="Play the env on this env server (agentgym serve).")] = None,
    env_token: Annotated[str | None, typer.Option(envvar="AGENTGYM_REMOTE_TOKEN", help="The env server's token.")]
    = None,
    api_key: Annotated[str | None, typer.Option(envvar=API_KEY_ENV_VAR, help="The model endpoint's API key.")] = None,
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 0.0,
    max_tokens: Annotated[int | None, typer.Option(help="Most tokens per reply.")] = None,
    system_prompt: Annotated[str | None, typer.Option(help="A system message before the first observation.")] = None,
    native_tools: Annotated[bool, typer.Option(help="Send the env's tool schemas as `tools` (JSON action format).")]
    = True,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for one model reply.")] = 300.0,
    max_retries: Annotated[int, typer.Option(help="Retries of a model request (429, 5xx, timeouts).")] = 6,
    record_agent_errors: Annotated[bool, typer.Option(help="Record episodes whose model request failed for good "
                                                           "(e.g. context too long) as failed, instead of retrying "
                                                           "them next run.")] = False,
    draw_plot: Annotated[bool, typer.Option("--plot/--no-plot", help="Draw summary.png (needs matplotlib).")] = True,
    quiet: Annotated[bool, typer.Option(help="No progress bar.")] = False,
) -> None:
    """Evaluate an agent on an env: progress, results.jsonl (resumable), a metrics table and a plot."""
    console = plain_console()
    _check_env_id(env_id, env_server)
    selection, env_kwarg = _task_set_and_selection(tasks, selection, env_kwarg)
    config = _config(env_id, agent, base_url, model, episodes, concurrency, reward, out, seed, selection, env_kwarg,
                     env_server, env_token, api_key, temperature, max_tokens, system_prompt, native_tools, timeout,
                     max_retries, record_agent_errors, samples_per_task)
    progress = _RichProgress(console, quiet)
    try:
        _check_endpoint(config, console)
        outcome = run_eval(config, progress=progress)
    except KeyboardInterrupt:
        progress.stop()
        console.print(labeled("interrupted", "yellow", f"finished episodes are kept in {config.out}; rerun to resume"))
        raise typer.Exit(130) from None
    except AgentGymError as exc:
        progress.stop()
        console.print(labeled("error", "red", str(exc)), soft_wrap=True)  # one line, whatever the width
        raise typer.Exit(1) from None
    progress.stop()
    try:
        code = _report(config, outcome, console, draw_plot)
    except OSError as exc:  # summary.json / summary.png on a full disk: the results are already safe
        console.print(labeled("error", "red", f"cannot write {exc.filename or config.out}: "
                              f"{exc.strerror or exc}; {len(outcome.records)} result(s) are safely in "
                              f"{config.out / 'results.jsonl'}"), soft_wrap=True)
        raise typer.Exit(1) from None
    raise typer.Exit(code)


_PROBE_S = 10.0  # the longest the check waits for an answer (at most --timeout)


def _check_endpoint(config: RunConfig, console: Console) -> None:
    """One quick ``GET /models`` before the run: a dead endpoint fails now, in one line, instead of
    after every episode's retries (46 s); any HTTP answer, even an error status, means it is up."""
    agent = config.agent
    if not isinstance(agent, ChatAgentConfig):
        return
    url = httpx.URL(agent.base_url.rstrip("/") + "/models")
    shown = f"{url.scheme}://{url.host}{f':{url.port}' if url.port else ''}{url.path.removesuffix('/models')}"
    key = agent.api_key.get_secret_value() if agent.api_key else None
    wait = min(_PROBE_S, agent.timeout_s)
    try:
        with httpx.Client(timeout=httpx.Timeout(wait, connect=min(5.0, wait))) as client:
            client.get(url, headers={"Authorization": f"Bearer {key}"} if key else None)
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise ModelEndpointError(f"cannot reach the model endpoint {shown} ({exc or type(exc).__name__}); start "
                                 "the model server (e.g. vllm serve MODEL) or fix --base-url") from None
    except httpx.TimeoutException:
        console.print(labeled("note", "yellow", f"the model endpoint {shown} took the connection but has not "
                              f"answered in {wait:g} s; each reply is waited for up to --timeout "
                              f"{agent.timeout_s:g} s"), soft_wrap=True)
    except httpx.HTTPError:
        pass  # it answered, if oddly: the episodes' own requests report what is wrong


def _check_env_id(env_id: str, env_server: str | None) -> None:
    # A local env must be registered; an env server checks its own ids.
    import gymnasium

    import agentgym

    if env_server is None and env_id not in gymnasium.registry:
        raise typer.BadParameter(str(ConfigError("env_id", env_id, agentgym.ENV_IDS)), param_hint="ENV_ID")


def _task_set_and_selection(tasks: str | None, selection: str | None,
                            env_kwarg: list[str] | None) -> tuple[str, list[str] | None]:
    """``--tasks`` names the task set, as in every command; until 0.3 it also takes the old
    spelling of the selection (index, seed), with a note."""
    if tasks in ("index", "seed"):
        if selection is not None and selection != tasks:
            raise typer.BadParameter(f"--tasks {tasks} is the deprecated spelling of --selection {tasks}; "
                                     "give only --selection", param_hint="--selection")
        deprecated_note(f"--tasks {tasks}", f"--selection {tasks} (--tasks is the task set)")
        return tasks, env_kwarg
    if tasks is not None:
        if any(pair.partition("=")[0].strip() == "tasks" for pair in env_kwarg or ()):
            raise typer.BadParameter("--tasks and -k tasks= name the same kwarg; give one", param_hint="--tasks")
        env_kwarg = [*(env_kwarg or ()), f"tasks={json.dumps(tasks)}"]
    return selection or "index", env_kwarg


def _config(env_id: str, agent: str, base_url: str | None, model: str | None, episodes: int, concurrency: int,
            reward: str | None, out: Path | None, seed: int, selection: str, env_kwarg: list[str] | None,
            env_server: str | None, env_token: str | None, api_key: str | None, temperature: float,
            max_tokens: int | None, system_prompt: str | None, native_tools: bool, timeout: float,
            max_retries: int, record_agent_errors: bool, samples_per_task: int = 1) -> RunConfig:
    if agent in _RENAMED_AGENTS:
        warn_renamed(f"--agent {agent}", f"--agent {_RENAMED_AGENTS[agent]}")
        agent = _RENAMED_AGENTS[agent]
    if agent == "openai":
        if not base_url or not model:
            raise typer.BadParameter("--agent openai needs --base-url and --model", param_hint="--agent")
        if samples_per_task > 1 and temperature <= 0:
            raise typer.BadParameter(f"--samples-per-task {samples_per_task} at --temperature {temperature:g} draws "
                                     "the same greedy reply for every sample of a group: sample with "
                                     "--temperature > 0 (GRPO samples at 1.0)", param_hint="--temperature")
        agent_config: Any = dict(kind="openai", base_url=base_url, model=model, api_key=api_key,
                                 temperature=temperature, max_tokens=max_tokens, system_prompt=system_prompt,
                                 native_tools=native_tools, timeout_s=timeout, max_retries=max_retries)
        label = model
    elif agent in _LOCAL_AGENTS and env_server is not None:
        raise typer.BadParameter(f"the {agent} agent reads the task from a local env; drop --env-server to play "
                                 "it here, or use --agent openai / module:factory with an env server",
                                 param_hint="--agent")
    elif agent == "gold":
        agent_config, label = GoldAgentConfig(), "gold"
    elif agent == "perturbed":  # any env that declares a reward-lab kit (TextEnv.reward_lab)
        agent_config, label = PerturbedAgentConfig(), "perturbed"
    elif agent in OFFLINE_AGENTS:
        target, env_ids = OFFLINE_AGENTS[agent]
        if env_id not in env_ids:
            raise typer.BadParameter(f"the {agent} agent plays {' or '.join(env_ids)}, not {env_id}",
                                     param_hint="--agent")
        agent_config, label = dict(kind="import", target=target), agent
    elif re.fullmatch(r"[\w.]+:[\w.]+", agent):
        agent_config, label = dict(kind="import", target=agent), agent  # the module too: factories share names
    else:
        names = ["openai", "gold", "perturbed", *OFFLINE_AGENTS]
        close = difflib.get_close_matches(agent, names, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise typer.BadParameter(f"{agent!r} is not an agent: {hint}use one of {', '.join(names)}, or "
                                 "module:factory (your factory(env) -> Agent)", param_hint="--agent")
    if reward is not None and env_server is not None:
        raise typer.BadParameter("--reward shapes a local env; for an env server pass the env's own reward "
                                 "kwarg, e.g. -k reward=planner_r1/dense", param_hint="--reward")
    try:
        env_kwargs = parse_env_kwargs(env_kwarg)
        return RunConfig(env_id=env_id, env_kwargs=env_kwargs, agent=agent_config,
                         episodes=episodes, samples_per_task=samples_per_task, concurrency=concurrency, seed=seed,
                         selection=selection, reward=reward,
                         out=out or default_out_dir(env_id, label, reward, env_kwargs=env_kwargs, seed=seed,
                                                    selection=selection, samples_per_task=samples_per_task),
                         env_server=env_server,
                         env_token=env_token, record_agent_errors=record_agent_errors)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise typer.BadParameter(problems) from None


def _report(config: RunConfig, outcome: RunOutcome, console: Console, draw_plot: bool) -> int:
    records = [r for i, r in sorted(outcome.records.items()) if i < config.episodes]
    summary = summarize(records, config.episodes, failed=len(outcome.failed))
    submission = None
    if records and config.env_id == "TravelPlanner-v0" and config.env_server is None:
        summary, submission = _with_official(config, records, summary)
    title = f"{config.env_id}: {_agent_label(config)}" + (f", reward {config.reward}" if config.reward else "")
    render(summary, console, title=title)
    _write_json(config.out / "summary.json", summary.model_dump(mode="json"))
    drawn = None
    if draw_plot and records:
        drawn = plot(records, summary, config.out / "summary.png", title=title)
        if drawn is None:
            console.print("no plot: matplotlib is not installed (pip install 'agentgym-rl[plot]')")
    console.print(f"results: {config.out / 'results.jsonl'}\nsummary: {config.out / 'summary.json'}"
                  + (f"\nplot:    {drawn}" if drawn is not None else "")
                  + (f"\nsubmission for `agentgym eval travelplanner -s`: {submission}" if submission else ""),
                  soft_wrap=True)  # paths stay whole
    if outcome.aborted:
        console.print(labeled("stopped early", "red", str(outcome.aborted)))
    if outcome.failed:
        console.print(labeled(f"{len(outcome.failed)} episode(s) failed", "yellow",
                              f"see {config.out / 'errors.jsonl'}; rerun the same command to retry them"))
    return 0 if outcome.complete and not outcome.failed else 1


def _with_official(config: RunConfig, records: list[EpisodeRecord], summary: Any) -> tuple[Any, Path | None]:
    """The summary with TravelPlanner's six official metrics, and the submission file written."""
    import gymnasium

    from agentgym.runner.official import SUBMISSION, travelplanner_official

    env = gymnasium.make(config.env_id, **config.env_kwargs)
    try:
        official = travelplanner_official(records, env, config.out)
    finally:
        env.close()
    if not official:
        return summary, None
    return summary.model_copy(update={"official": official}), config.out / SUBMISSION


def _agent_label(config: RunConfig) -> str:
    agent = config.agent
    if isinstance(agent, ChatAgentConfig):
        return agent.model
    if isinstance(agent, ImportedAgentConfig):
        names = {target: name for name, (target, _) in OFFLINE_AGENTS.items()}
        return names.get(agent.target, agent.target)
    return agent.kind


def _write_json(path: Path, payload: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, indent=2), encoding="utf-8")
    os.replace(tmp, path)


class _RichProgress:
    """The progress bar: episodes done, success so far, time left."""

    def __init__(self, console: Console, quiet: bool) -> None:
        self.quiet, self.console = quiet, console
        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                             TextColumn("{task.fields[status]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                             console=console, disable=quiet)
        self._task: Any = None
        self._verdicts: list[bool] = []
        self._failed = 0

    def start(self, total: int, done: int) -> None:
        self._bar.start()
        self._task = self._bar.add_task("episodes", total=total, completed=done, status="")
        if done:
            self.console.print(f"resuming: {done}/{total} episodes already done")

    def finished(self, record: EpisodeRecord) -> None:
        if record.success is not None:
            self._verdicts.append(record.success)
        self._bar.update(self._task, advance=1, status=self._status())

    def failed(self, episode: int, error: str) -> None:
        self._failed += 1
        self._bar.update(self._task, status=self._status())
        if self._failed <= 3:
            self.console.print(labeled(f"episode {episode} failed", "yellow", error[:300]))

    def stop(self) -> None:
        self._bar.stop()

    def _status(self) -> str:
        parts = []
        if self._verdicts:
            parts.append(f"success {sum(self._verdicts) / len(self._verdicts):.0%}")
        if self._failed:
            parts.append(f"{self._failed} failed")
        return ", ".join(parts)
