"""Search-augmented QA (Search-R1 style): ``SearchQA-v0`` and ``SearchQA-LongForm-v0``.

    import gymnasium, agentgym
    env = gymnasium.make("SearchQA-v0")                      # the embedded synthetic world, offline
    env = gymnasium.make("SearchQA-v0", tasks="hotpotqa_dev500.questions.jsonl",
                         corpus="hotpotqa_dev500.corpus.jsonl")  # FlashRAG files, BM25 built once
    env = gymnasium.make("SearchQA-v0", tasks=..., retriever="http://host:8000/retrieve")
"""

from agentgym._deprecated import module_aliases as _module_aliases
from agentgym.envs.searchqa.bm25 import BM25Retriever
from agentgym.envs.searchqa.data import Passage, QATask, load_passages, load_tasks
from agentgym.envs.searchqa.env import LongFormSearchQAEnv, SearchQAEnv
from agentgym.envs.searchqa.retrievers import Hit, HttpRetriever, Retriever, RetrieverError
from agentgym.envs.searchqa.synthetic import SyntheticWorld, draw_world, write_world

__all__ = [
    "SearchQAEnv", "LongFormSearchQAEnv", "Retriever", "RetrieverError", "Hit", "BM25Retriever", "HttpRetriever",
    "Passage", "QATask", "load_passages", "load_tasks", "SyntheticWorld", "draw_world", "write_world",
]

__getattr__ = _module_aliases(__name__, {"Question": "QATask", "load_questions": "load_tasks"})
