"""Search-R1-scale retrieval: one /retrieve request of 2,560 queries, and dense top-3 over FAISS Flat.

1. ``/retrieve`` (``agentgym serve-retriever``'s app under uvicorn on loopback), embedded BM25
   over 100k generated passages. Ours: the 2,560 queries of a default Search-R1 GRPO batch
   (512 prompts x 5 rollouts) in one request, as Search-R1's client sends them. Baseline: the same
   queries as 1,024-query requests, the most the server accepted before (3 round trips).
   Also printed: the same batch in process (``batch_search``), to show what HTTP adds.
2. Dense top-3: a FAISS Flat inner-product index of 100k random unit vectors of e5-base's width
   (768), behind ``DenseRetriever`` (faiss search plus reading the passages from the jsonl corpus
   by offset). The query encoder is replaced by precomputed random query vectors, as e5 itself
   cannot be downloaded here; its CPU cost comes on top. Baseline: exact numpy search
   (one matrix-vector product and an argpartition per query).

    python benchmarks/bench_searchqa_retrieve.py [--passages 100000] [--queries 2560] [--dense 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from agentgym.envs.searchqa import BM25Retriever, draw_world, write_world  # noqa: E402
from agentgym.envs.searchqa.retriever_app import create_app  # noqa: E402


def _row(name: str, ours: float, base: float, unit: str, goal: str, ok: bool) -> str:
    ratio = base / ours if ours else float("inf")
    return f"| {name} | {ours:,.3f} {unit} | {base:,.3f} {unit} | {ratio:,.1f}x | {goal} | {'PASS' if ok else 'FAIL'} |"


def _serve(app):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "searchqa"))
    from conftest import LoopbackServer

    return LoopbackServer(app)


def bench_retrieve(folder: Path, n_passages: int, n_queries: int) -> list[str]:
    t = time.perf_counter()
    world = draw_world(n_passages, seed=0)
    write_world(world, folder)
    print(f"generated {len(world.passages):,} passages in {time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    retriever = BM25Retriever.open(folder / "corpus.jsonl", cache_dir=folder / "cache")
    print(f"indexed in {time.perf_counter() - t:.1f} s")
    pool = [q.question for q in world.questions if not q.long_form]
    queries = [pool[i % len(pool)] for i in range(n_queries)]

    retriever.batch_search(queries, 3)  # warm the mapped pages, as a serving index is
    t = time.perf_counter()
    retriever.batch_search(queries, 3)
    in_process = time.perf_counter() - t
    with _serve(create_app(retriever)) as server, httpx.Client(timeout=600) as client:
        url = server.url + "/retrieve"
        t = time.perf_counter()
        reply = client.post(url, json={"queries": queries, "topk": 3, "return_scores": True})
        one = time.perf_counter() - t
        assert reply.status_code == 200 and len(reply.json()["result"]) == n_queries, reply.text[:200]
        t = time.perf_counter()
        for start in range(0, n_queries, 1024):
            part = client.post(url, json={"queries": queries[start:start + 1024], "topk": 3, "return_scores": True})
            assert part.status_code == 200
        capped = time.perf_counter() - t
        size = len(reply.content)
    print(f"\n/retrieve: {n_queries:,} queries, top-3, {len(world.passages):,} passages; reply {size / 1e6:.1f} MB\n")
    print(f"in process (batch_search, no HTTP): {in_process:.3f} s = {n_queries / in_process:,.0f} queries/s; "
          f"one request: {n_queries / one:,.0f} queries/s")
    return [_row(f"{n_queries:,} queries: one request vs 1,024-query requests", one, capped, "s",
                 "answered in full in one request", True)]


class _Vectors:
    """The encoder's stand-in: precomputed unit query vectors, handed out in order."""

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors, self.at, self.dim, self.name = vectors, 0, vectors.shape[1], "random-768"

    def encode(self, texts, *, is_query: bool) -> np.ndarray:
        out = self.vectors[self.at:self.at + len(texts)]
        self.at = (self.at + len(texts)) % (len(self.vectors) - len(texts))
        return out


def bench_dense(folder: Path, n: int, dim: int = 768, n_queries: int = 200) -> list[str]:
    import faiss

    from agentgym.envs.searchqa.dense import DenseRetriever, JsonlCorpus

    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((n, dim), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = rng.standard_normal((n_queries + 600, dim), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    corpus = folder / "wiki-18.jsonl"
    with corpus.open("w") as f:
        for i in range(n):
            f.write(json.dumps({"id": str(i), "contents": f'"Doc {i}"\nPassage number {i} of the benchmark.'}) + "\n")
    index = faiss.IndexFlatIP(dim)
    index.add(vectors)
    faiss.write_index(index, str(folder / "e5_Flat.index"))
    retriever = DenseRetriever(JsonlCorpus(corpus, cache_dir=folder / "cache"),
                               faiss.read_index(str(folder / "e5_Flat.index")), _Vectors(queries))

    ours, base = [], []
    for i in range(n_queries):
        t = time.perf_counter()
        hits = retriever.search("q", 3)
        ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        scores = vectors @ queries[(i + 1) % n_queries]
        top = np.argpartition(-scores, 3)[:3]
        top = top[np.argsort(-scores[top])]
        base.append(time.perf_counter() - t)
        assert len(hits) == 3
    retriever.encoder.at = 0
    t = time.perf_counter()
    retriever.batch_search(["q"] * 512, 3)
    batch = time.perf_counter() - t
    t = time.perf_counter()
    scores = queries[:512] @ vectors.T
    np.argpartition(-scores, 3, axis=1)[:, :3]
    batch_base = time.perf_counter() - t
    p50, p50_base = statistics.median(ours) * 1e3, statistics.median(base) * 1e3
    print(f"\ndense: FAISS Flat (inner product), {n:,} x {dim} float32, top-3; "
          f"faiss threads {faiss.omp_get_max_threads()}\n")
    return [
        _row("top-3 latency p50, one query (search + passages)", p50, p50_base, "ms", "(information)", True),
        _row("512 queries in one batch", batch, batch_base, "s", "(information)", True),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=2560)
    parser.add_argument("--dense", type=int, default=100_000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="agentgym-bench-retrieve-"))
    try:
        rows = bench_retrieve(folder / "bm25", args.passages, args.queries)
        rows += bench_dense(Path(tempfile.mkdtemp(dir=folder)), args.dense)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"\nload average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs at the end\n")
    print("| figure | agentgym | baseline | ratio | goal | |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
