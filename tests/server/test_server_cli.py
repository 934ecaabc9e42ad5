"""``agentgym serve`` as users run it: a subprocess on a loopback port, and its option checks."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from server_helpers import TOKEN
from typer.testing import CliRunner

from agentgym.remote._connection import ConnectionLost, Endpoint, SyncConnection
from agentgym.cli import app
from agentgym.errors import RemoteTimeout
from agentgym.remote import RemoteEnv

HERE = Path(__file__).resolve().parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def served():
    port = _free_port()
    env = {**os.environ, "AGENTGYM_SERVER_TOKENS": TOKEN,
           "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", "from agentgym.cli import main; main()", "serve", "--port",
                             str(port), "--import", "sleepy_env", "--env", "AgentGymTest/Sleepy-v0", "--env",
                             "TravelPlanner-v0", "--request-timeout", "0.5"], env=env)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            SyncConnection(Endpoint.parse(url), timeout=5).request("GET", "/health", None, {})
            break
        except ConnectionLost:
            assert proc.poll() is None, "agentgym serve exited"
            time.sleep(0.05)
    yield url, proc
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_agentgym_serve_serves_envs_and_interrupts_a_stuck_step(served):
    url, proc = served
    stuck = RemoteEnv(url, "AgentGymTest/Sleepy-v0", token=TOKEN)
    healthy = RemoteEnv(url, "AgentGymTest/Sleepy-v0", token=TOKEN)
    stuck.reset()
    healthy.reset()
    with pytest.raises(RemoteTimeout):
        stuck.step("spin 60")  # a busy loop in the event loop's thread, stopped by the deadline
    assert healthy.step("hello")[0] == "did hello"
    planner = RemoteEnv(url, "TravelPlanner-v0", token=TOKEN)
    assert planner.reset(seed=0)[1]["turn"] == 0
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal after a clean shutdown


def test_serve_refuses_an_open_interface_without_a_token(monkeypatch):
    monkeypatch.delenv("AGENTGYM_SERVER_TOKENS", raising=False)
    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--port", "1"])
    assert result.exit_code == 2 and "token" in result.output


@pytest.mark.parametrize(("flag", "field"), [
    ("--min-body-rate", "min_body_bytes_per_s"), ("--max-sessions", "max_sessions"),
    ("--max-body-bytes-in-flight-per-client", "max_body_bytes_in_flight_per_client")])
def test_serve_refuses_a_bad_limit_in_one_line_naming_its_field(flag, field):
    result = CliRunner().invoke(app, ["serve", "--port", "1", "--token", "t", flag, "0"])
    assert result.exit_code == 2 and f"{field}=0 is not allowed" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_server_config_mistakes_are_config_errors_naming_the_field():
    from agentgym import ConfigError
    from agentgym.server import ServerConfig

    for fields, field in (({"min_body_bytes_per_s": 0}, "min_body_bytes_per_s"),
                          ({"max_body_bytes": 1}, "max_body_bytes"), ({"env_calls": "fibers"}, "env_calls"),
                          ({"tokens": (" ",)}, "tokens")):
        with pytest.raises(ConfigError) as raised:
            ServerConfig(**fields)
        assert raised.value.field == field


def test_serve_help_lists_the_limits():
    result = CliRunner().invoke(app, ["serve", "--help"], terminal_width=200)
    assert result.exit_code == 0
    for option in ("--token", "--max-sessions", "--session-ttl", "--max-request-bytes", "--request-timeout",
                   "--env-calls", "--max-body-bytes-in-flight-per-client", "--min-body-rate"):
        assert option in result.output


def _start(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-c", "from agentgym.cli import main; main()", "serve", "--port",
                             str(port), "--env", "TravelPlanner-v0", "--env-workers", "1", *args], env=env,
                            stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            SyncConnection(Endpoint.parse(url), timeout=5).request("GET", "/health", None, {})
            return proc, url
        except ConnectionLost:
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.05)
    raise AssertionError("agentgym serve did not start")


def _stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err


def test_serve_without_tokens_generates_one_that_only_this_user_can_read(tmp_path, monkeypatch):
    env = {k: v for k, v in os.environ.items() if k not in ("AGENTGYM_SERVER_TOKENS", "AGENTGYM_REMOTE_TOKEN")}
    env["AGENTGYM_CACHE_DIR"] = str(tmp_path)
    proc, url = _start([], env)
    try:
        token_path = tmp_path / "server" / f"token-{url.rsplit(':', 1)[1]}"
        assert os.stat(token_path).st_mode & 0o777 == 0o600
        anonymous = SyncConnection(Endpoint.parse(url), timeout=10).request("GET", "/v1/envs", None, {})
        assert anonymous.status == 401  # main served loopback without any auth
        monkeypatch.setenv("AGENTGYM_CACHE_DIR", str(tmp_path))
        monkeypatch.delenv("AGENTGYM_REMOTE_TOKEN", raising=False)
        remote = RemoteEnv(url, "TravelPlanner-v0")  # finds the generated token on this machine
        assert remote.reset(seed=0)[1]["turn"] == 0
        remote.close()
    finally:
        err = _stop(proc)
    assert str(token_path) in err and token_path.read_text().strip() not in err  # the path is shown, not the token


def test_serve_insecure_no_auth_and_trust_clients_are_explicit_and_loud(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "AGENTGYM_SERVER_TOKENS"}
    proc, url = _start(["--insecure-no-auth", "--trust-clients"], env)
    try:
        body = b'{"env_id": "TravelPlanner-v0", "kwargs": {"max_action_chars": 5000}}'
        created = SyncConnection(Endpoint.parse(url), timeout=30).request("POST", "/v1/sessions", body, {})
        assert created.status == 201  # open kwargs, no token: what the operator asked for
    finally:
        err = _stop(proc)
    assert "WARNING: --trust-clients" in err and "NO AUTH" in err


def test_serve_flags_make_presets_for_the_served_envs():
    import typer

    from agentgym.cli._front_door import presets_from_flags

    made = presets_from_flags(None, ["prs/short"], ["SearchQA-v0"], ["corpus=/data/wiki.jsonl", "top_k=5"])
    (preset,) = made.presets
    assert preset.env_id == preset.name == "SearchQA-v0"
    assert preset.kwargs == {"corpus": "/data/wiki.jsonl", "top_k": 5} and made.reward_presets == ("prs/short",)
    with pytest.raises(typer.BadParameter):
        presets_from_flags(None, None, [], ["corpus=/x"])
    with pytest.raises(typer.BadParameter):
        presets_from_flags(None, None, ["SearchQA-v0"], ["novalue"])


def test_a_flag_the_server_commands_share_is_one_flag():
    """serve, mcp, openenv and serve-retriever each wrote --host, --max-sessions, --session-ttl... with
    their own words; a flag two of them take now reads the same in both."""
    from agentgym.cli import _load

    own = {("serve-retriever", "--token"): "the retriever's tokens ($AGENTGYM_RETRIEVER_TOKENS; none: open)",
           ("openenv", "--insecure-no-auth"): "binds another interface: OpenEnv has no tokens to turn off"}
    helps: dict[str, set[str]] = {}
    for command in ("serve", "mcp", "openenv", "serve-retriever"):
        for param in _load(command).params:
            for flag in param.opts:
                if flag.startswith("--") and (command, flag) not in own:
                    helps.setdefault(flag, set()).add(param.help)
    assert {flag: texts for flag, texts in helps.items() if len(texts) > 1} == {}
    assert len([flag for flag in helps if flag in ("--host", "--port", "--log-level", "--max-sessions")]) == 4
