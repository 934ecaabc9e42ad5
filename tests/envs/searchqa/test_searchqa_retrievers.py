"""BM25Retriever builds once and memory-maps after; HttpRetriever talks to real loopback servers."""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import socket
import subprocess
import sys
import time

import httpx
import pytest

from agentgym import ConfigError, DataError
from agentgym.envs.searchqa import BM25Retriever, Hit, HttpRetriever, Retriever, RetrieverError
from agentgym.envs.searchqa.retriever_app import create_app
from agentgym.envs.searchqa.synthetic import draw_world, write_world

ROWS = [
    {"id": "d0", "contents": '"Qirand"\nQirand is a country whose capital is Zhemcarport.'},
    {"id": "d1", "title": "Zhemcarport", "text": "Zhemcarport is a city founded in 1248 on a salt lake."},
    {"id": "d2", "title": "Velmora Works", "text": "Velmora Works was founded by Ada Krin in 1901."},
    {"id": "d3", "title": "Velmora Works", "text": "Velmora Works was founded by Ada Krin in 1901."},
]


@pytest.fixture(scope="module")
def world_dir(tmp_path_factory):
    return write_world(draw_world("small", seed=1), tmp_path_factory.mktemp("world"))


def test_bm25_ranks_stems_and_breaks_ties_by_corpus_order(tmp_path):
    r = BM25Retriever.build(ROWS, tmp_path / "idx")
    assert isinstance(r, Retriever) and len(r) == 4
    hits = r.search("capital of Qirand", 3)
    assert hits[0] == Hit("d0", "Qirand", "Qirand is a country whose capital is Zhemcarport.", hits[0].score)
    assert [h.id for h in r.search("Velmora", 3)] == ["d2", "d3"]  # equal scores: corpus order
    assert {h.id for h in r.search("founding", 5)} == {"d1", "d2", "d3"}  # "founding" and "founded" share a stem
    scores = [h.score for h in r.search("Velmora Zhemcarport Qirand", 10)]
    assert scores == sorted(scores, reverse=True) and len(scores) == 4


def test_bm25_returns_nothing_for_queries_without_known_words(tmp_path):
    r = BM25Retriever.build(ROWS, tmp_path / "idx")
    assert r.search("", 3) == [] and r.search("the of and", 3) == [] and r.search("xylophone", 3) == []
    assert r.search("\x00 🙂 東京", 3) == [] and r.search("Qirand", 0) == []


def test_index_is_saved_in_the_cache_never_next_to_the_corpus_and_reused(world_dir, tmp_path):
    corpus = world_dir / "corpus.jsonl"
    before = sorted(os.listdir(world_dir))
    first = BM25Retriever.open(corpus, cache_dir=tmp_path / "cache")
    assert str(first.index_dir).startswith(str(tmp_path / "cache")) and sorted(os.listdir(world_dir)) == before
    first = BM25Retriever.open(corpus, cache_dir=tmp_path / "cache")
    meta = first.index_dir / "agentgym-index.json"
    stamp = meta.stat().st_mtime_ns
    again = BM25Retriever.open(corpus, cache_dir=tmp_path / "cache")
    assert again is first and meta.stat().st_mtime_ns == stamp  # opened, not rebuilt
    copy = pickle.loads(pickle.dumps(first))
    assert copy.search("University", 3) == first.search("University", 3)


def test_a_changed_corpus_is_reindexed(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:2]))
    assert BM25Retriever.open(corpus).search("Velmora", 3) == []
    time.sleep(0.01)
    corpus.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    assert [h.id for h in BM25Retriever.open(corpus).search("Velmora", 3)] == ["d2", "d3"]


def test_a_read_only_corpus_folder_gets_its_index_in_the_cache(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    folder.chmod(0o555)
    try:
        r = BM25Retriever.open(folder / "c.jsonl", cache_dir=tmp_path / "cache")
        assert str(r.index_dir).startswith(str(tmp_path / "cache")) and os.listdir(folder) == ["c.jsonl"]
    finally:
        folder.chmod(0o755)


def test_in_memory_rows_are_cached_by_content(tmp_path):
    a = BM25Retriever.open(ROWS, cache_dir=tmp_path)
    b = BM25Retriever.open([dict(r) for r in ROWS], cache_dir=tmp_path)
    c = BM25Retriever.open(ROWS[:3], cache_dir=tmp_path)
    assert a is b and c.index_dir != a.index_dir


def test_bad_corpora_raise_data_errors(tmp_path):
    with pytest.raises(DataError, match="no passages"):
        BM25Retriever.build([], tmp_path / "x")
    with pytest.raises(DataError, match="no such corpus"):
        BM25Retriever.open(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "contents": "ok"}\nnot json\n')
    with pytest.raises(DataError, match="bad.jsonl:2"):
        BM25Retriever.open(bad)
    with pytest.raises(ConfigError, match="stemmer"):
        BM25Retriever.open(ROWS, stemmer="porter")


# -- the real server, started as the CLI does --------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cli_server(world_dir):
    """``agentgym serve-retriever <corpus>`` in a subprocess on 127.0.0.1 and a free port."""
    pytest.importorskip("uvicorn", reason="the server tests need uvicorn (pip install 'agentgym-rl[server]')")
    port = _free_port()
    cmd = [sys.executable, "-c", "from agentgym.cli import main; main()", "serve-retriever",
           str(world_dir / "corpus.jsonl"), "--port", str(port), "--topk", "2", "--log-level", "warning"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait_healthy(proc, f"http://127.0.0.1:{port}")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _wait_healthy(proc: subprocess.Popen, url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"serve-retriever exited: {proc.stderr.read()}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError("serve-retriever did not come up within 60 s")


def test_http_retriever_matches_the_embedded_one(cli_server, world_dir):
    local = BM25Retriever.open(world_dir / "corpus.jsonl")
    queries = ["University", "In which city was the founder born?", "capital", "", "xylophone"]
    with HttpRetriever(cli_server, batch_size=2) as remote:  # the root URL; 3 requests of <= 2 queries
        assert remote.url == cli_server + "/retrieve"
        got = remote.batch_search(queries, 3)
        assert got == [local.search(q, 3) for q in queries]
        assert remote.search("University", 3) == got[0]


def test_the_server_speaks_the_search_r1_api(cli_server):
    url = cli_server + "/retrieve"
    with_scores = httpx.post(url, json={"queries": ["University", "capital"], "topk": 3, "return_scores": True}).json()
    assert len(with_scores["result"]) == 2 and len(with_scores["result"][0]) == 3
    first = with_scores["result"][0][0]
    assert set(first) == {"document", "score"} and set(first["document"]) == {"id", "title", "text", "contents"}
    assert first["document"]["contents"] == f'"{first["document"]["title"]}"\n{first["document"]["text"]}'
    plain = httpx.post(url, json={"queries": ["University"], "topk": None}).json()  # default --topk 2, no scores
    assert plain["result"][0] == [hit["document"] for hit in with_scores["result"][0][:2]]
    for body in [{"queries": "University"}, {"queries": [1]}, {"queries": ["q"], "topk": -1}, [1, 2],
                 {"queries": ["q"], "return_scores": "yes"}]:
        response = httpx.post(url, json=body)
        assert response.status_code == 422 and "error" in response.json(), body
    assert httpx.post(url, content=b"{oops", headers={"content-type": "application/json"}).status_code == 422


def test_an_env_plays_against_the_server(cli_server, world_dir):
    import gymnasium

    questions = world_dir / "train.questions.jsonl"
    remote = gymnasium.make("SearchQA-v0", tasks=str(questions), retriever=cli_server + "/retrieve")
    local = gymnasium.make("SearchQA-v0", tasks=str(questions), corpus=str(world_dir / "corpus.jsonl"))
    for env in (remote, local):
        env.reset(options={"task_index": 0})
    step = "<search>University</search>"
    assert remote.step(step)[0] == local.step(step)[0]
    gold = remote.unwrapped.task.golden_answers[0]
    assert remote.step(f"<answer>{gold}</answer>")[1] == 1.0


# -- misbehaving servers ---------------------------------------------------------------------
def _misbehaving_app():
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, PlainTextResponse, Response
    from starlette.routing import Route

    calls = {"error": 0, "flaky": 0}

    async def slow(request):
        await asyncio.sleep(1.0)
        return JSONResponse({"result": [[]]})

    async def error(request):
        calls["error"] += 1
        return PlainTextResponse("boom", status_code=500)

    async def flaky(request):
        calls["flaky"] += 1
        if calls["flaky"] == 1:
            return PlainTextResponse("busy", status_code=503)
        doc = {"contents": '"T"\nbody'}  # Search-R1 BM25 documents may carry no id
        return JSONResponse({"result": [[{"document": doc, "score": 1.5}]]})

    async def malformed(request):
        return Response(b"{not json", media_type="application/json")

    async def wrong_shape(request):
        return JSONResponse({"result": [[{"document": {"id": 1}}]]})

    async def refused(request):
        return PlainTextResponse("no", status_code=403)

    routes = [Route(f"/{f.__name__}/retrieve", f, methods=["POST"])
              for f in (slow, error, flaky, malformed, wrong_shape, refused)]
    return Starlette(routes=routes), calls


@pytest.fixture(scope="module")
def bad_server(loopback_server):
    app, calls = _misbehaving_app()
    with loopback_server(app) as server:
        yield server.url, calls


@pytest.mark.parametrize("route, message", [
    ("slow", "no answer within 0.2 s"),
    ("error", "HTTP 500"),
    ("malformed", "not JSON"),
    ("wrong_shape", "neither 'contents' nor"),
    ("refused", "HTTP 403"),
])
def test_a_misbehaving_server_raises_retriever_error(bad_server, route, message):
    url, _ = bad_server
    retriever = HttpRetriever(f"{url}/{route}/retrieve", timeout=0.2, retries=1, backoff=0.01)
    with pytest.raises(RetrieverError, match=message):
        retriever.search("q", 3)


def test_5xx_is_retried_and_a_retry_can_succeed(bad_server):
    url, calls = bad_server
    before = calls["error"]
    with pytest.raises(RetrieverError, match="3 attempt"):
        HttpRetriever(f"{url}/error/retrieve", retries=2, backoff=0.01).search("q", 3)
    assert calls["error"] - before == 3
    assert HttpRetriever(f"{url}/flaky/retrieve", retries=1, backoff=0.01).search("q", 3) == [Hit("", "T", "body", 1.5)]


def test_nobody_listening_is_a_retriever_error():
    retriever = HttpRetriever(f"http://127.0.0.1:{_free_port()}/retrieve", timeout=1, retries=0)
    with pytest.raises(RetrieverError, match="cannot connect"):
        retriever.search("q", 3)
    assert pickle.loads(pickle.dumps(retriever)).url == retriever.url


def test_an_env_on_a_failing_server_gets_an_observation(bad_server):
    import gymnasium

    url, _ = bad_server
    env = gymnasium.make("SearchQA-v0", retriever=f"{url}/malformed/retrieve")
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step("<search>University</search>")
    assert info["error"]["code"] == "retriever_failed" and "search failed" in obs and not terminated


def test_http_retriever_rejects_bad_config():
    with pytest.raises(ConfigError, match="url"):
        HttpRetriever("127.0.0.1:8000")
    with pytest.raises(ConfigError):
        HttpRetriever("http://127.0.0.1:8000", timeout=0)


def test_create_app_serves_any_retriever(loopback_server):
    class Echo:
        def search(self, query, k):
            return [Hit(str(i), query, "text", 1.0) for i in range(k)]

        def batch_search(self, queries, k):
            return [self.search(q, k) for q in queries]

    with loopback_server(create_app(Echo(), default_topk=2)) as server:
        assert HttpRetriever(server.url).batch_search(["a", "b"], 0) == [Echo().search("a", 2), Echo().search("b", 2)]
