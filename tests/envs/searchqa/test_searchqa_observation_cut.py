"""The observation cut without a tokenizer, measured against a real BPE trained here on real data.

Search-R1 cuts each observation to 500 tokens of the policy's tokenizer. The reference here is a
byte-level BPE (32k merges, Qwen2's pre-tokenizer split) trained on the other shared corpora, cutting
the wiki-18 sample's top-3 observations (each passage's title as the query).
"""

from __future__ import annotations

import json
import statistics

import pytest

from agentgym.envs.searchqa import BM25Retriever
from agentgym.envs.searchqa._render import render_search_r1
from agentgym.envs.searchqa.observation import cut_to_estimate, estimate_tokens

QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")
TRAINING = ["hotpotqa_dev500", "hotpotqa_train100", "musique_train100", "longform_alce8"]


def train_bpe(texts, vocab_size):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return bpe


def _rows(folder, name):
    with open(folder / f"{name}.corpus.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_the_cut_without_a_tokenizer_is_within_a_few_percent_of_500_bpe_tokens(searchqa_data, tmp_path):
    pytest.importorskip("tokenizers")
    bpe = train_bpe([r["contents"] for name in TRAINING for r in _rows(searchqa_data, name)], 32_000)
    wiki = _rows(searchqa_data, "wiki18_sample1000")
    retriever = BM25Retriever.open([{"id": r["id"], "contents": r["contents"]} for r in wiki], cache_dir=tmp_path)
    observations = [render_search_r1(retriever.search(r["title"], 3)) for r in wiki]

    def errors(cut):
        out = []
        for text in observations:
            reference = min(500, len(bpe.encode(text).ids))
            out.append((len(bpe.encode(cut(text)).ids) - reference) / reference)
        return out

    ours, by_chars = errors(lambda t: cut_to_estimate(t, 500)), errors(lambda t: t[:2000])
    assert abs(statistics.mean(ours)) < 0.03  # measured: +2.0%
    assert statistics.mean(map(abs, ours)) < 0.03  # measured: 2.2%
    assert statistics.mean(map(abs, ours)) < statistics.mean(map(abs, by_chars))  # 4 characters a token: 3.2%
    assert sum(len(bpe.encode(t).ids) > 500 for t in observations) > 300  # the cut matters on this sample


@pytest.mark.parametrize("text", ["x" * 1_000_000, "((" * 500_000, " " * 1_000_000 + "a", "7" * 1_000_000,
                                  "Zürich " * 100_000])
def test_a_megabyte_is_cut_at_once_and_keeps_about_the_limit(text):
    cut = cut_to_estimate(text, 500)
    assert 0 < estimate_tokens(cut) <= 500 or not cut.strip()
    assert text.startswith(cut) and len(cut) < 5000
