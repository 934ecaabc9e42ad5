"""``serve-retriever`` bounds what one request may cost before it searches (issue 30, item 1).

Real uvicorn on loopback; the retriever behind it records what it was asked, so "refused before
searching" is checked as "the retriever was never called".
"""

from __future__ import annotations

import subprocess
import sys
import threading

import httpx
import pytest

from agentgym import ConfigError
from agentgym.envs.searchqa import Hit, HttpRetriever, RetrieverError
from agentgym.envs.searchqa.retriever_app import RetrieverConfig, create_app

TOKEN_A, TOKEN_B = "retriever-alice", "retriever-bob"


class Passages:
    """``k`` passages of ``size`` characters per query; records the queries; may block on ``gate``."""

    def __init__(self, size: int = 100) -> None:
        self.size, self.queries, self.gate = size, [], None

    def search(self, query, k):
        return self.batch_search([query], k)[0]

    def batch_search(self, queries, k):
        self.queries.extend(queries)
        if self.gate is not None:
            self.gate.wait(10)
        return [[Hit(str(i), f"title {i}", "x" * self.size, 1.0) for i in range(k)] for _ in queries]


def _post(url: str, body: dict, token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(url + "/retrieve", json=body, headers=headers, timeout=30)


def test_queries_times_topk_past_max_results_is_refused_before_searching(loopback_server):
    """200 queries x topk 1000 was an 8 KB request answered with 227 MB (and +1 GB of server memory)."""
    passages = Passages()
    with loopback_server(create_app(passages)) as server:
        refused = _post(server.url, {"queries": ["capital"] * 200, "topk": 1000})
        assert refused.status_code == 422 and "max_results" in refused.json()["error"]
        assert "200 queries x topk 1000 = 200000 results; the limit is 10000" in refused.json()["error"]
        assert passages.queries == []
        default_k = _post(server.url, {"queries": ["capital"] * 3334})  # x the default topk 3 = 10,002
        assert default_k.status_code == 422 and passages.queries == []
        fits = _post(server.url, {"queries": ["capital"] * 2560, "topk": 3})  # Search-R1's first turn
        assert fits.status_code == 200 and len(fits.json()["result"]) == 2560


def test_total_query_characters_past_the_limit_are_refused_before_searching(loopback_server):
    """300 queries of 100,000 characters took 106 s of CPU in one request."""
    passages = Passages()
    with loopback_server(create_app(passages)) as server:
        refused = _post(server.url, {"queries": ["word " * 20_000] * 11, "topk": 1})
        assert refused.status_code == 422 and "max_total_query_chars" in refused.json()["error"]
        one = _post(server.url, {"queries": ["w" * 100_001], "topk": 1})
        assert one.status_code == 422 and "max_query_chars" in one.json()["error"]
        assert passages.queries == []
        body = httpx.post(server.url + "/retrieve", content=b'{"queries": ["' + b"w" * (9 << 20) + b'"]}')
        assert body.status_code == 413 and "max_body_bytes" in body.json()["error"]


def test_a_reply_past_max_reply_bytes_is_refused_not_built(loopback_server):
    config = RetrieverConfig(max_reply_bytes=100_000, max_results=100_000)
    with loopback_server(create_app(Passages(size=1000), config=config)) as server:
        refused = _post(server.url, {"queries": ["q"] * 1000, "topk": 10})  # about 20 MB of passages
        assert refused.status_code == 422 and "max_reply_bytes" in refused.json()["error"]
        assert "after 256 of 1000 queries" in refused.json()["error"]  # it stopped at the first chunk past it
        fits = _post(server.url, {"queries": ["q"] * 10, "topk": 2, "return_scores": True})
        assert fits.status_code == 200 and int(fits.headers["content-length"]) == len(fits.content)
        assert [hit["score"] for hit in fits.json()["result"][0]] == [1.0, 1.0]


def test_one_token_cannot_take_every_search_slot_and_health_answers_meanwhile(loopback_server):
    passages = Passages()
    passages.gate = threading.Event()
    config = RetrieverConfig(tokens=(TOKEN_A, TOKEN_B), max_searches=2, queue_timeout_s=0.3)
    with loopback_server(create_app(passages, config=config)) as server:
        busy = threading.Thread(target=_post, args=(server.url, {"queries": ["held"]}, TOKEN_A))
        busy.start()
        try:
            while "held" not in passages.queries:
                threading.Event().wait(0.01)
            assert httpx.get(server.url + "/health", timeout=5).json()["status"] == "ok"  # while it searches
            queued = _post(server.url, {"queries": ["more"]}, TOKEN_A)
            assert queued.status_code == 429 and "max_searches_per_client" in queued.json()["error"]
            assert queued.headers["retry-after"] == "1"
            passages.gate = None  # B's request is searched at once, beside A's
            other = _post(server.url, {"queries": ["mine"]}, TOKEN_B)
            assert other.status_code == 200 and "more" not in passages.queries
        finally:
            passages.gate = None
            busy.join()


def test_tokens_guard_the_route_and_http_retriever_sends_one(loopback_server, monkeypatch):
    config = RetrieverConfig(tokens=(TOKEN_A,))
    with loopback_server(create_app(Passages(), config=config)) as server:
        anonymous = _post(server.url, {"queries": ["q"]})
        assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"] == "Bearer"
        assert _post(server.url, {"queries": ["q"]}, "wrong").status_code == 401
        assert httpx.get(server.url + "/health").status_code == 200
        with pytest.raises(RetrieverError, match="HTTP 401 .*Bearer"):
            HttpRetriever(server.url).search("q", 1)
        monkeypatch.setenv("AGENTGYM_RETRIEVER_TOKEN", TOKEN_A)
        assert len(HttpRetriever(server.url).search("q", 2)) == 2


def test_a_refusal_reaches_the_env_with_the_limit_named(loopback_server):
    config = RetrieverConfig(max_results=2)
    with loopback_server(create_app(Passages(), config=config)) as server:
        with pytest.raises(RetrieverError, match="HTTP 422 .*max_results"):
            HttpRetriever(server.url).search("q", 3)


@pytest.mark.parametrize(("fields", "field"), [
    ({"max_results": 0}, "max_results"), ({"max_searches": -1}, "max_searches"),
    ({"default_topk": 5, "max_topk": 4}, "default_topk"), ({"max_reply": 1}, "max_reply"),
    ({"queue_timeout_s": "soon"}, "queue_timeout_s"),
])
def test_configuration_mistakes_raise_config_error_naming_the_field(fields, field):
    with pytest.raises(ConfigError) as raised:
        RetrieverConfig(**fields)
    assert raised.value.field == field and str(raised.value).startswith(f"{field}=")


def test_the_command_refuses_a_bad_limit_in_one_line_before_loading_the_index():
    out = subprocess.run([sys.executable, "-m", "agentgym.cli", "serve-retriever", "synthetic", "--max-results", "0"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "max_results=0" in out.stderr and "Traceback" not in out.stderr
