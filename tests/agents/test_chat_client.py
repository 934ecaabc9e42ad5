"""The one chat-completions client (agent and judge) against the chat stub on loopback: retries, waits, failures."""

from __future__ import annotations

import asyncio
import math
from collections import Counter

import httpx
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from agentgym import _http
from agentgym.agents.chat_client import RETRYABLE_STATUSES, ChatClient, RetryPolicy
from agentgym.agents.stub import Fault
from agentgym.errors import ModelEndpointError

PAYLOAD = {"model": "stub", "messages": [{"role": "user", "content": "Say hi."}]}


def content(reply: _http.Reply) -> str:
    return reply.json()["choices"][0]["message"]["content"]


def complete(url: str, path: str, read=content, **policy):
    """Run one retried completion on the blocking or the asyncio path; return (value or error, counts)."""
    counts: Counter[str] = Counter()
    fields = {"max_retries": 3, "backoff_s": 0.0, "max_backoff_s": 0.0} | policy
    client = ChatClient(url + "/chat/completions", policy=RetryPolicy(**fields), deadline_s=5.0,
                        max_bytes=1 << 20, count=lambda name: counts.update([name]))

    async def go():
        async with httpx.AsyncClient() as http:
            return await client.acomplete(http, PAYLOAD, read)

    try:
        if path == "async":
            return asyncio.run(go()), counts
        with _http.sync_client() as http:
            return client.complete(http, PAYLOAD, read), counts
    except ModelEndpointError as exc:
        return exc, counts


@pytest.mark.parametrize("path", ["sync", "async"])
def test_retryable_statuses_are_retried_until_a_reply_is_read(stub, stub_url, path):
    stub.inject(Fault(status=429, retry_after="0"), Fault(status=503))
    value, counts = complete(stub_url, path)
    assert isinstance(value, str) and counts == {"requests": 3, "retries": 2}


@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_status_that_will_not_change_is_not_retried(stub, stub_url, path):
    stub.inject(Fault(status=400))
    error, counts = complete(stub_url, path)
    assert isinstance(error, ModelEndpointError) and not error.retryable and error.status == 400
    assert str(error).startswith("HTTP 400: ") and counts == {"requests": 1}


@pytest.mark.parametrize("path", ["sync", "async"])
def test_the_last_failure_is_raised_when_the_retries_run_out(stub, stub_url, path):
    stub.inject(*[Fault(status=500)] * 3)
    error, counts = complete(stub_url, path, max_retries=2)
    assert isinstance(error, ModelEndpointError) and error.retryable and error.status == 500
    assert counts == {"requests": 3, "retries": 2} and len(stub.requests) == 3


@pytest.mark.parametrize("path", ["sync", "async"])
def test_the_policy_decides_which_statuses_retry(stub, stub_url, path):
    stub.inject(Fault(status=501))
    error, _ = complete(stub_url, path)
    assert isinstance(error, ModelEndpointError) and not error.retryable  # 501 is not in RETRYABLE_STATUSES
    stub.inject(Fault(status=501))
    value, counts = complete(stub_url, path, retry_status=lambda status: status >= 500)
    assert isinstance(value, str) and counts["retries"] == 1


@pytest.mark.parametrize(("retryable", "requests"), [(True, 3), (False, 1)])
def test_the_reader_decides_whether_an_unusable_reply_is_retried(stub, stub_url, retryable, requests):
    def refuse(reply: _http.Reply) -> str:
        raise ModelEndpointError("garbled", status=reply.status, retryable=retryable)

    error, counts = complete(stub_url, "sync", read=refuse, max_retries=2)
    assert str(error) == "garbled" and error.retryable is retryable and counts["requests"] == requests


def test_failures_without_a_reply_carry_the_callers_prefix_and_the_slots_are_held_per_post():
    class Slots:
        held = 0

        def __enter__(self):
            Slots.held += 1

        def __exit__(self, *exc):
            return None

    client = ChatClient("http://127.0.0.1:9/v1/chat/completions", where="endpoint: ", deadline_s=2.0,
                        max_bytes=1024, policy=RetryPolicy(1, 0.0, 0.0), slots=Slots())
    with _http.sync_client() as http, pytest.raises(ModelEndpointError, match=r"^endpoint: cannot connect") as err:
        client.complete(http, PAYLOAD, content)
    assert err.value.retryable and err.value.status is None and Slots.held == 2


def test_the_agents_default_statuses():
    assert RETRYABLE_STATUSES == {408, 429, 500, 502, 503, 504}


def headers(retry_after: str | None) -> _http.Reply:
    return _http.Reply(503, httpx.Headers({} if retry_after is None else {"retry-after": retry_after}), b"")


@given(retry=st.integers(0, 30), backoff=st.floats(0, 10), cap=st.floats(0, 60), jitter=st.booleans())
def test_backoff_doubles_up_to_the_cap_with_optional_jitter(retry, backoff, cap, jitter):
    wait = RetryPolicy(5, backoff, cap, jitter=jitter).delay(retry, headers(None))
    ceiling = min(backoff * 2 ** retry, cap)
    assert (ceiling / 2 <= wait <= ceiling) if jitter else wait == ceiling


@given(said=st.one_of(st.floats().map(repr), st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12)),
       cap=st.floats(0, 60), honoured=st.booleans())
@example(said="nan", cap=5.0, honoured=True)
@example(said="inf", cap=5.0, honoured=True)
@example(said="2.5", cap=5.0, honoured=True)
def test_retry_after_is_honoured_when_a_finite_number_and_capped(said, cap, honoured):
    policy = RetryPolicy(5, 0.0, cap, retry_after=honoured, jitter=False)
    wait = policy.delay(0, headers(said))
    try:
        number = float(said)
    except ValueError:
        number = math.nan
    expected = min(max(number, 0.0), cap) if honoured and math.isfinite(number) else 0.0
    assert wait == expected
    assert policy.delay(0, None) == 0.0  # no reply (a dropped connection): the backoff alone
