"""SearchQA retrieval and env steps: agentgym's embedded BM25 (bm25s) vs rank-bm25, side by side.

Both sides index the same generated corpus (the embedded world's generator at 100k passages by
default) and answer the same questions. rank-bm25 is used as it usually is: regex tokens, a
``BM25Okapi`` over the token lists, ``get_scores`` and a sort per query; it has no on-disk index,
so its "reopen" is unpickling the fitted object. Reopen times are measured in a fresh process,
after imports. The env step is ``SearchQA-v0`` doing one ``<search>`` on that corpus, with the
embedded retriever and with a rank-bm25 retriever plugged in.

    python benchmarks/bench_searchqa.py [--passages 100000] [--queries 1000] [--baseline-queries 30]
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import in_fresh_process, median_us  # noqa: E402

from agentgym.envs.searchqa import BM25Retriever, Hit, SearchQAEnv, draw_world, write_world  # noqa: E402

_TOKEN = re.compile(r"\w\w+")

REOPEN_OURS = """
import time
from agentgym.envs.searchqa.bm25 import BM25Retriever
t = time.perf_counter()
r = BM25Retriever.open({corpus!r}, index_dir={index!r})
r.search("University", 3)
RESULT = {{"seconds": time.perf_counter() - t}}
"""

REOPEN_BASELINE = """
import pickle, time
import rank_bm25
t = time.perf_counter()
with open({path!r}, "rb") as f:
    bm25 = pickle.load(f)
RESULT = {{"seconds": time.perf_counter() - t}}
"""


class RankBM25Retriever:
    """rank-bm25 behind the Retriever protocol, as a user would wrap it."""

    def __init__(self, passages) -> None:
        from rank_bm25 import BM25Okapi

        self.passages = passages
        self.bm25 = BM25Okapi([_TOKEN.findall(f"{p.title}\n{p.text}".lower()) for p in passages])

    def search(self, query: str, k: int) -> list[Hit]:
        scores = self.bm25.get_scores(_TOKEN.findall(query.lower()))
        top = np.argsort(-scores, kind="stable")[:k]
        return [Hit(self.passages[i].id, self.passages[i].title, self.passages[i].text, float(scores[i]))
                for i in top if scores[i] > 0]

    def batch_search(self, queries, k):
        return [self.search(q, k) for q in queries]


def row(name: str, ours: float, base: float, unit: str, goal: str, ok: bool) -> str:
    ratio = base / ours if ours else float("inf")
    return f"| {name} | {ours:,.3f} {unit} | {base:,.3f} {unit} | {ratio:,.1f}x | {goal} | {'PASS' if ok else 'FAIL'} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--baseline-queries", type=int, default=30)
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="agentgym-bench-searchqa-"))
    t = time.perf_counter()
    world = draw_world(args.passages, seed=0)
    write_world(world, folder)
    corpus, index = folder / "corpus.jsonl", folder / "index"
    print(f"generated {len(world.passages):,} passages in {time.perf_counter() - t:.1f} s at {folder}")
    questions = [q.text for q in world.tasks if not q.long_form][:args.queries]

    t, cpu = time.perf_counter(), time.process_time()
    ours = BM25Retriever.open(corpus, index_dir=index)
    build_ours, build_ours_cpu = time.perf_counter() - t, time.process_time() - cpu
    t, cpu = time.perf_counter(), time.process_time()
    base = RankBM25Retriever(world.passages)
    build_base, build_base_cpu = time.perf_counter() - t, time.process_time() - cpu
    with open(folder / "rank_bm25.pkl", "wb") as f:
        pickle.dump(base.bm25, f, protocol=pickle.HIGHEST_PROTOCOL)

    reopen_ours = in_fresh_process(REOPEN_OURS.format(corpus=str(corpus), index=str(index)))["seconds"]
    reopen_base = in_fresh_process(REOPEN_BASELINE.format(path=str(folder / "rank_bm25.pkl")))["seconds"]

    query_ours = median_us(ours.search, [(q, 3) for q in questions]) / 1000
    query_base = median_us(base.search, [(q, 3) for q in questions[:args.baseline_queries]]) / 1000
    step_ours = _step_p50(SearchQAEnv(tasks=str(folder / "train.questions.jsonl"), retriever=ours), questions)
    step_base = _step_p50(SearchQAEnv(tasks=str(folder / "train.questions.jsonl"), retriever=base),
                          questions[:args.baseline_queries])
    overlap = np.mean([ours.search(q, 1)[:1] and base.search(q, 1)[:1] and
                       ours.search(q, 1)[0].id == base.search(q, 1)[0].id for q in questions[:args.baseline_queries]])

    print(f"\n{len(world.passages):,} passages; {len(questions)} queries for ours, "
          f"{min(len(questions), args.baseline_queries)} for rank-bm25; top-3; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs at the end\n")
    print("| figure | agentgym (bm25s) | rank-bm25 | ratio | goal | |")
    print("|---|---|---|---|---|---|")
    print(row("query p50 (tokenize, score, top-k, passages)", query_ours, query_base, "ms",
              "<= 1 ms and >= 50x", query_ours <= 1.0 and query_base / query_ours >= 50))
    print(row("index build (read corpus, tokenize, index, save)", build_ours, build_base, "s", "<= 10 s",
              build_ours <= 10))
    print(row("index build, CPU time (single-threaded: the idle-machine wall time)", build_ours_cpu,
              build_base_cpu, "s", "(information)", build_ours_cpu <= 10))
    print(row("reopen from cache (fresh process, after imports)", reopen_ours, reopen_base, "s", "<= 1 s",
              reopen_ours <= 1))
    print(row("env step() with a search, p50", step_ours, step_base, "ms", "<= 2 ms", step_ours <= 2))
    print(f"\ntop-1 agreement with rank-bm25 on the shared queries: {overlap:.0%} "
          "(ours stems and drops stopwords; rank-bm25 here does neither)")
    shutil.rmtree(folder, ignore_errors=True)


def _step_p50(env: SearchQAEnv, queries: list[str]) -> float:
    env.max_searches = len(queries) + 1  # one long episode of searches
    env.max_turns = len(queries) + 2
    env.reset(seed=0)
    return median_us(env.step, [(f"<search>{q}</search>",) for q in queries]) / 1000


if __name__ == "__main__":
    main()
