"""Dense retrieval in Search-R1's layout: wiki-18.jsonl (id, contents) + e5_Flat.index + an e5-style encoder.

No downloads: a tiny BERT is built from a config (random weights, seeded) with a word-level
tokenizer made in the test, saved as a local model folder, and a FAISS Flat inner-product index
is built in the test from embeddings computed here with plain transformers (e5's recipe:
"passage: " / "query: " prefixes, attention-masked mean pooling, L2 norm). The retriever's own
loading code (corpus offsets, faiss.read_index, AutoModel.from_pretrained) then runs on those files.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

faiss = pytest.importorskip("faiss", reason="dense retrieval needs faiss-cpu (pip install 'agentgym-rl[dense]')")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from agentgym import ConfigError, DataError  # noqa: E402
from agentgym.envs.searchqa.dense import DenseRetriever  # noqa: E402

WORDS = ("river city founded capital painter novel bridge mountain harbor museum queen engineer railway "
         "festival island library ").split()


def _rows() -> list[dict]:
    rng = np.random.default_rng(0)
    rows = []
    for i in range(40):
        words = " ".join(rng.choice(WORDS, size=8))
        rows.append({"id": str(i), "contents": f'"Place {i}"\nPlace {i} has a {words}.'})
    return rows


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("e5-tiny")
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
    vocab = {t: i for i, t in enumerate(specials + sorted({w for r in _rows() for w in _words(r["contents"])}
                                                          | {"query", "passage", ":"}))}
    core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    core.normalizer = normalizers.Lowercase()  # an uncased model, as e5-base-v2 is
    core.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace(), pre_tokenizers.Punctuation()])
    core.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]",
                                                        special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    PreTrainedTokenizerFast(tokenizer_object=core, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]",
                            sep_token="[SEP]").save_pretrained(folder)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)
    BertModel(config).eval().save_pretrained(folder)
    return folder


def _words(text: str) -> list[str]:
    import re

    return re.findall(r"\w+|[^\w\s]", text.lower())


def _embed(folder, texts: list[str]) -> np.ndarray:
    """e5's recipe written out here, independently of agentgym's encoder."""
    from transformers import AutoModel, AutoTokenizer

    tok, model = AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder).eval()
    batch = tok(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    pooled = (hidden * mask).sum(1) / mask.sum(1)
    return torch.nn.functional.normalize(pooled, dim=-1).numpy().astype(np.float32)


@pytest.fixture(scope="module")
def search_r1_layout(tmp_path_factory, encoder_dir):
    folder = tmp_path_factory.mktemp("search-r1")
    rows = _rows()
    (folder / "wiki-18.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    index = faiss.IndexFlatIP(32)
    index.add(_embed(encoder_dir, ["passage: " + r["contents"] for r in rows]))
    faiss.write_index(index, str(folder / "e5_Flat.index"))
    return folder


def _expected(encoder_dir, folder, query: str, k: int) -> list[str]:
    index = faiss.read_index(str(folder / "e5_Flat.index"))
    vectors = index.reconstruct_n(0, index.ntotal)
    scores = vectors @ _embed(encoder_dir, ["query: " + query])[0]
    return [str(i) for i in np.argsort(-scores, kind="stable")[:k]]


QUERIES = ["river bridge", "Place 7 museum queen", "who founded the railway festival?"]


def test_search_r1_layout_loads_and_ranks_as_e5_does(search_r1_layout, encoder_dir, tmp_path):
    retriever = DenseRetriever.open(search_r1_layout / "wiki-18.jsonl", index=search_r1_layout / "e5_Flat.index",
                                    encoder=str(encoder_dir), cache_dir=tmp_path)
    assert len(retriever) == 40
    for query in QUERIES:
        hits = retriever.search(query, 3)
        assert [h.id for h in hits] == _expected(encoder_dir, search_r1_layout, query, 3)
        assert all(h.contents.startswith('"Place ') for h in hits)  # the raw contents, quotes kept
        assert hits[0].score >= hits[1].score >= hits[2].score
    assert retriever.batch_search(QUERIES, 3) == [retriever.search(q, 3) for q in QUERIES]


def test_a_small_corpus_gets_its_own_flat_index_in_the_cache(search_r1_layout, encoder_dir, tmp_path):
    built = DenseRetriever.open(search_r1_layout / "wiki-18.jsonl", encoder=str(encoder_dir), cache_dir=tmp_path)
    assert any((tmp_path / "searchqa" / "dense").iterdir())
    for query in QUERIES:
        assert [h.id for h in built.search(query, 3)] == _expected(encoder_dir, search_r1_layout, query, 3)


def test_the_env_plays_search_r1_over_the_dense_retriever(search_r1_layout, encoder_dir, tmp_path):
    import gymnasium

    import agentgym  # noqa: F401

    retriever = DenseRetriever.open(search_r1_layout / "wiki-18.jsonl", index=search_r1_layout / "e5_Flat.index",
                                    encoder=str(encoder_dir), cache_dir=tmp_path)
    env = gymnasium.make("SearchQA-v0", action_format="search-r1", retriever=retriever,
                         tasks=[{"question": "Which place has a museum", "golden_answers": ["Place 7"]}])
    env.reset(seed=0)
    obs, *_ = env.step("<think>search</think><search>museum queen</search>")
    first = _expected(encoder_dir, search_r1_layout, "museum queen", 1)[0]
    assert obs.startswith(f'\n\n<information>Doc 1(Title: "Place {first}") Place {first} has a ')


def test_mismatched_files_are_refused(search_r1_layout, encoder_dir, tmp_path):
    short = tmp_path / "short.jsonl"
    short.write_text("".join(json.dumps(r) + "\n" for r in _rows()[:5]))
    with pytest.raises(DataError, match="row i of the index must be line i"):
        DenseRetriever.open(short, index=search_r1_layout / "e5_Flat.index", encoder=str(encoder_dir),
                            cache_dir=tmp_path)
    bad = tmp_path / "bad.index"
    bad.write_bytes(b"not an index")
    with pytest.raises(DataError, match="not a readable FAISS index"):
        DenseRetriever.open(search_r1_layout / "wiki-18.jsonl", index=bad, encoder=str(encoder_dir),
                            cache_dir=tmp_path)
    with pytest.raises(ConfigError, match="encoder"):
        DenseRetriever.open(search_r1_layout / "wiki-18.jsonl", index=search_r1_layout / "e5_Flat.index",
                            encoder=str(tmp_path / "no-model"), cache_dir=tmp_path)


def _search_r1_fp16_queries(folder, queries: list[str]) -> np.ndarray:
    """Search-R1's server encoder as its code reads (written here): the model in half precision,
    "query: " prefix, masked mean over the last hidden states, L2 norm, then float32."""
    from transformers import AutoModel, AutoTokenizer

    tok, model = AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder).eval().half()
    batch = tok([f"query: {q}" for q in queries], max_length=256, padding=True, truncation=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch, return_dict=True).last_hidden_state
    hidden = hidden.masked_fill(~batch["attention_mask"][..., None].bool(), 0.0)
    pooled = hidden.sum(dim=1) / batch["attention_mask"].sum(dim=1)[..., None]
    return torch.nn.functional.normalize(pooled, dim=-1).cpu().numpy().astype(np.float32)


def test_fp16_query_encoding_is_search_r1s_server_default(search_r1_layout, encoder_dir, tmp_path):
    from agentgym.envs.searchqa.dense import E5Encoder

    half, full = E5Encoder(str(encoder_dir), fp16=True), E5Encoder(str(encoder_dir))
    expected = _search_r1_fp16_queries(encoder_dir, QUERIES)
    assert np.array_equal(half.encode(QUERIES, is_query=True), expected)
    assert not np.array_equal(full.encode(QUERIES, is_query=True), expected)  # the option changes the vectors
    assert np.array_equal(half.encode(["x y"], is_query=False), full.encode(["x y"], is_query=False))
    retriever = DenseRetriever.open(search_r1_layout / "wiki-18.jsonl", index=search_r1_layout / "e5_Flat.index",
                                    encoder=str(encoder_dir), cache_dir=tmp_path, fp16=True)
    index = faiss.read_index(str(search_r1_layout / "e5_Flat.index"))
    scores, rows = index.search(expected, 3)
    for query, want, want_scores in zip(QUERIES, rows, scores):
        hits = retriever.search(query, 3)
        assert [h.id for h in hits] == [str(i) for i in want] and [h.score for h in hits] == want_scores.tolist()
    with pytest.raises(ConfigError, match="fp16"):
        E5Encoder(str(encoder_dir), fp16="yes")
