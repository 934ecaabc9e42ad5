"""Search-augmented QA (Search-R1 style): ``SearchQA-v0`` and ``SearchQA-LongForm-v0``.

    import gymnasium, agentgym
    env = gymnasium.make("SearchQA-v0")                      # the embedded synthetic world, offline
    env = gymnasium.make("SearchQA-v0", questions="hotpotqa_dev500.questions.jsonl",
                         corpus="hotpotqa_dev500.corpus.jsonl")  # FlashRAG files, BM25 built once
    env = gymnasium.make("SearchQA-v0", questions=..., retriever="http://host:8000/retrieve")
"""

from agentgym.envs.searchqa.bm25 import BM25Retriever
from agentgym.envs.searchqa.data import Passage, Question, load_passages, load_questions
from agentgym.envs.searchqa.env import LongFormSearchQAEnv, SearchQAEnv
from agentgym.envs.searchqa.retrievers import Hit, HttpRetriever, Retriever, RetrieverError
from agentgym.envs.searchqa.synthetic import SyntheticWorld, draw_world, write_world

__all__ = [
    "SearchQAEnv", "LongFormSearchQAEnv", "Retriever", "RetrieverError", "Hit", "BM25Retriever", "HttpRetriever",
    "Passage", "Question", "load_passages", "load_questions", "SyntheticWorld", "draw_world", "write_world",
]
