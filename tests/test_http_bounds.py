"""The shared bounded-HTTP helper (agentgym/_http.py) and JSON limits, and the HTTP retriever over them,
against a hostile server on 127.0.0.1 (issue 12, finding 10).

Time bounds are loose on purpose (the deadline plus several seconds: the suite shares two cores);
the server drips or hangs for 20 s, so a client whose timeout applies per read fails them by far.
"""

from __future__ import annotations

import json
import time

import httpx
import pytest
from hostile_http import HUGE, HostileServer
from hypothesis import given
from hypothesis import strategies as st

from agentgym import _http, _json_limits
from agentgym.envs.searchqa.retrievers import HttpRetriever, RetrieverError


@pytest.fixture(scope="module")
def hostile():
    with HostileServer() as server:
        yield server


@pytest.mark.parametrize("route", ["drip-body", "drip-headers", "hang"])
def test_the_retriever_gives_up_at_its_total_deadline(hostile, route):
    retriever = HttpRetriever(f"{hostile.url}/{route}/retrieve", timeout=1.0, retries=1, backoff=0.0)
    start = time.monotonic()
    with pytest.raises(RetrieverError, match="failed after 2 attempt"):
        retriever.search("q", 3)
    assert time.monotonic() - start < 2 * 1.0 + 4.0


@pytest.mark.parametrize("route", ["huge", "huge-declared"])
def test_the_retriever_stops_reading_at_its_cap_and_does_not_retry(hostile, route, monkeypatch):
    retriever = HttpRetriever(f"{hostile.url}/{route}/retrieve", retries=3, backoff=0.0)
    monkeypatch.setattr(retriever, "max_response_bytes", 1 << 20)
    before, requests = hostile.sent[route], hostile.requests[route]
    with pytest.raises(RetrieverError, match="bytes allowed"):
        retriever.search("q", 3)
    assert hostile.requests[route] - requests == 1 and hostile.sent[route] - before < HUGE // 4


def test_the_retriever_refuses_a_deeply_nested_reply(hostile):
    with pytest.raises(RetrieverError, match="nested deeper"):
        HttpRetriever(f"{hostile.url}/nested/retrieve", retries=0).search("q", 3)


def test_a_reused_connection_still_honours_the_deadline(hostile):
    """The deadline is per call, also on a keep-alive connection an earlier call opened."""
    hostile.keep_alive, connections = True, hostile.connections
    try:
        with _http.sync_client() as client:
            assert _http.post_json(client, f"{hostile.url}/ok", {}, deadline_s=5, max_bytes=1 << 16).status == 200
            start = time.monotonic()
            with pytest.raises(_http.CallFailed, match="no answer within 0.5 s") as failure:
                _http.post_json(client, f"{hostile.url}/drip-headers", {}, deadline_s=0.5, max_bytes=1 << 16)
            assert failure.value.retryable and time.monotonic() - start < 0.5 + 4.0
    finally:
        hostile.keep_alive = False
    assert hostile.connections - connections == 1  # both calls went over one connection


def test_a_connection_refused_is_a_retryable_failure():
    with socket_free_port() as port, _http.sync_client() as client:
        with pytest.raises(_http.CallFailed, match="cannot connect") as failure:
            _http.post_json(client, f"http://127.0.0.1:{port}/", {}, deadline_s=2, max_bytes=1024)
    assert failure.value.retryable


class socket_free_port:
    def __enter__(self) -> int:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    def __exit__(self, *exc: object) -> None:
        pass


def test_an_async_client_of_the_callers_own_honours_the_deadline(hostile):
    import asyncio

    async def go():
        async with httpx.AsyncClient() as client:
            await _http.apost_json(client, f"{hostile.url}/drip-headers", {}, deadline_s=0.5, max_bytes=1024)

    start = time.monotonic()
    with pytest.raises(_http.CallFailed, match="no answer within 0.5 s"):
        asyncio.run(go())
    assert time.monotonic() - start < 0.5 + 4.0


# -- JSON limits ----------------------------------------------------------------------------------
def depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    return 0


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab', max_size=6),
                           lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text('[]{}"\\ab', max_size=3), c,
                                                                              max_size=3), max_leaves=30)


@given(json_values, st.integers(0, 12))
def test_the_depth_check_agrees_with_the_parsed_nesting(value, limit):
    text = json.dumps(value)
    assert _json_limits.exceeds_depth(text, limit) == (depth(value) > limit)
    if depth(value) <= limit:
        assert _json_limits.loads(text, max_depth=limit) == value
    else:
        with pytest.raises(_json_limits.JSONLimitError):
            _json_limits.loads(text, max_depth=limit)


@pytest.mark.parametrize("text", ["[" * 200_000, '{"a":' * 100_000, '"' + "\\" * 100_000, '["\\"' * 50_000])
def test_degenerate_json_raises_a_value_error_never_a_recursion_error(text):
    with pytest.raises(ValueError):
        _json_limits.loads(text)
