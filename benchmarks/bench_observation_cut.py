"""The observation cut without a tokenizer vs Search-R1's 500-token cut, on the wiki-18 sample.

Search-R1 cuts each observation to 500 tokens of the policy's tokenizer. Here the reference is a
byte-level BPE trained in this run (Qwen2's pre-tokenizer split; 32k and 64k merges) on the other
shared corpora; the observations are the wiki-18 sample's top-3 BM25 results for each passage's
title, rendered as Search-R1 renders them. Side by side: agentgym's estimate
(``observation.cut_to_estimate``) and the former baseline, 4 characters per token. For each: the
mean signed and absolute error of the kept text's BPE length against the BPE's own cut
(min(500, length)), the 90th percentile of the absolute error, and the time per observation.

    AGENTGYM_SHARED_DATA=/path/to/shared/data python benchmarks/bench_observation_cut.py
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "searchqa"))
from test_searchqa_observation_cut import TRAINING, train_bpe  # noqa: E402

from agentgym.envs.searchqa import BM25Retriever  # noqa: E402
from agentgym.envs.searchqa._render import render_search_r1  # noqa: E402
from agentgym.envs.searchqa.observation import cut_to_estimate  # noqa: E402


def main() -> None:
    folder = Path(os.environ.get("AGENTGYM_SHARED_DATA", "../shared/data")) / "searchqa"
    rows = {name: [json.loads(line) for line in open(folder / f"{name}.corpus.jsonl", encoding="utf-8")]
            for name in [*TRAINING, "wiki18_sample1000"]}
    wiki = rows["wiki18_sample1000"]
    with tempfile.TemporaryDirectory() as cache:
        retriever = BM25Retriever.open([{"id": r["id"], "contents": r["contents"]} for r in wiki], cache_dir=cache)
        observations = [render_search_r1(retriever.search(r["title"], 3)) for r in wiki]
    cuts = {"agentgym estimate": lambda t: cut_to_estimate(t, 500), "4 chars/token (baseline)": lambda t: t[:2000]}
    timing = {}
    for name, cut in cuts.items():
        started = time.perf_counter()
        for text in observations:
            cut(text)
        timing[name] = (time.perf_counter() - started) / len(observations) * 1e6
    print(f"{len(observations)} observations, mean {statistics.mean(map(len, observations)):.0f} characters")
    for vocab in (32_000, 64_000):
        bpe = train_bpe([r["contents"] for name in TRAINING for r in rows[name]], vocab)
        lengths = [len(bpe.encode(t).ids) for t in observations]
        print(f"\nBPE {vocab // 1000}k: {sum(n > 500 for n in lengths)} observations over 500 tokens, "
              f"{sum(map(len, observations)) / sum(lengths):.2f} characters per token")
        print(f"{'cut':26} {'mean error':>10} {'mean |error|':>12} {'p90 |error|':>11} {'us/obs':>7}")
        for name, cut in cuts.items():
            errors = [(len(bpe.encode(cut(t)).ids) - min(500, n)) / min(500, n) for t, n in zip(observations, lengths)]
            absolute = sorted(map(abs, errors))
            print(f"{name:26} {statistics.mean(errors):>+10.1%} {statistics.mean(absolute):>12.1%} "
                  f"{absolute[int(0.9 * len(absolute))]:>11.1%} {timing[name]:>7.1f}")
    print(f"\nestimate / baseline time: {timing['agentgym estimate'] / timing['4 chars/token (baseline)']:.0f}x")


if __name__ == "__main__":
    main()
