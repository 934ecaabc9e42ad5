"""The retriever interface, its hit record, and the HTTP client for a Search-R1 ``/retrieve`` API.

A retriever maps queries to ranked passages. Two implementations ship: ``BM25Retriever``
(in-process, ``agentgym.envs.searchqa.bm25``) and ``HttpRetriever`` (this module), which speaks
the Search-R1 / FlashRAG retriever API::

    POST /retrieve  {"queries": [...], "topk": k, "return_scores": true}
    ->              {"result": [[{"document": {...}, "score": s}, ...], ...]}

so an env can use a shared server (``agentgym serve-retriever``, or Search-R1's own dense one).
A retriever raises ``RetrieverError`` when a search cannot be done; the env turns that into an
observation, never an exception.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

import httpx

from agentgym import _http
from agentgym.envs.searchqa.data import split_contents
from agentgym.errors import ConfigError, RetrieverError

__all__ = ["Hit", "Retriever", "RetrieverError", "HttpRetriever", "document_to_hit", "TOKEN_ENV_VAR"]

TOKEN_ENV_VAR = "AGENTGYM_RETRIEVER_TOKEN"
"""The bearer token ``HttpRetriever`` sends (an env's ``retriever=URL`` too), for a server with tokens."""


@dataclass(frozen=True)
class Hit:
    """One retrieved passage: its corpus id (may be empty for servers that send none), title, text, score.

    ``contents`` is the corpus's own ``contents`` string when it had one, unchanged."""

    id: str
    title: str
    text: str
    score: float | None = None
    contents: str | None = field(default=None, compare=False)

    def raw_contents(self) -> str:
        """The corpus's ``contents``, or the FlashRAG layout (quoted title, newline, text) when it had none."""
        return self.contents if self.contents is not None else f'"{self.title}"\n{self.text}'

    def to_document(self) -> dict[str, str]:
        """The document as a Search-R1 server returns it, ``contents`` passed through unchanged."""
        return {"id": self.id, "title": self.title, "text": self.text, "contents": self.raw_contents()}


@runtime_checkable
class Retriever(Protocol):
    """Anything that ranks passages for queries."""

    def search(self, query: str, k: int) -> list[Hit]:
        """The best ``k`` passages for ``query``, best first (fewer when fewer match)."""
        ...

    def batch_search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """``search`` for each query, in order; one round trip for remote retrievers."""
        ...


def document_to_hit(document: Any, score: Any = None) -> Hit:
    """Read a server's document (``id`` + ``contents``, or ``title`` + ``text``) into a ``Hit``."""
    if not isinstance(document, Mapping):
        raise RetrieverError(f"malformed response: a document is a {type(document).__name__}, not an object")
    contents = document.get("contents") if isinstance(document.get("contents"), str) else None
    if "title" in document or "text" in document:
        title, text = str(document.get("title") or ""), str(document.get("text") or "")
    elif contents is not None:
        title, text = split_contents(contents)
    else:
        raise RetrieverError("malformed response: a document has neither 'contents' nor 'title'/'text'")
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
        raise RetrieverError("malformed response: a score is not a number")
    pid = document.get("id", "")
    return Hit("" if pid is None else str(pid), title, text, None if score is None else float(score), contents)


class HttpRetriever:
    """A client of a Search-R1-style ``/retrieve`` server, with batching, timeouts and retries.

    ``url`` is the endpoint (``http://host:8000/retrieve``) or the server's root. Each request
    carries at most ``batch_size`` queries. A connection error, a timeout (``timeout`` seconds
    per attempt), HTTP 429 or 5xx is retried ``retries`` times with exponential backoff from
    ``backoff`` seconds; other failures and malformed replies raise ``RetrieverError`` at once.
    ``$AGENTGYM_RETRIEVER_TOKEN``, when set, is sent as a bearer token (unless ``headers`` has an
    ``Authorization``), for a ``serve-retriever --token`` server.
    """

    def __init__(self, url: str, *, timeout: float = 10.0, retries: int = 2, backoff: float = 0.25,
                 batch_size: int = 64, headers: Mapping[str, str] | None = None) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError("url", url, "an http(s) URL such as 'http://127.0.0.1:8000/retrieve'")
        if not timeout > 0 or not isinstance(retries, int) or retries < 0 or batch_size < 1:
            raise ConfigError("timeout/retries/batch_size", (timeout, retries, batch_size),
                              "timeout > 0, an int retries >= 0 and batch_size >= 1")
        self.url = url if parts.path not in ("", "/") else url.rstrip("/") + "/retrieve"
        self.timeout, self.retries, self.backoff, self.batch_size = timeout, retries, backoff, batch_size
        self.headers = dict(headers or {})
        token = os.environ.get(TOKEN_ENV_VAR, "").strip()
        if token and not any(name.lower() == "authorization" for name in self.headers):
            self.headers["Authorization"] = f"Bearer {token}"
        self._client: httpx.Client | None = None

    def search(self, query: str, k: int) -> list[Hit]:
        return self.batch_search([query], k)[0]

    def batch_search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        out: list[list[Hit]] = []
        for start in range(0, len(queries), self.batch_size):
            out.extend(self._post(list(queries[start:start + self.batch_size]), k))
        return out

    max_response_bytes = 64 << 20
    """Largest reply read; a longer one raises ``RetrieverError`` at once (``timeout`` bounds each
    attempt in total, however slowly the server sends)."""

    def _post(self, queries: list[str], k: int) -> list[list[Hit]]:
        body = {"queries": queries, "topk": k, "return_scores": True}
        failure = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                reply = _http.post_json(self._http(), self.url, body, deadline_s=self.timeout,
                                        max_bytes=self.max_response_bytes)
            except _http.CallFailed as exc:
                if not exc.retryable:
                    raise RetrieverError(f"the retriever at {self.url} failed: {exc.reason}") from None
                failure = exc.reason
                continue
            if reply.status == 429 or reply.status >= 500:
                failure = f"HTTP {reply.status}"
                continue
            if reply.status != 200:  # the server's reason names the limit a request passed
                raise RetrieverError(f"the retriever at {self.url} refused the request: HTTP {reply.status} "
                                     f"{_http.clip(reply.text, 300)}")
            return _parse_result(reply, len(queries))
        raise RetrieverError(f"the retriever at {self.url} failed after {self.retries + 1} attempt(s): {failure}")

    def _http(self) -> httpx.Client:
        if self._client is None:
            self._client = _http.sync_client(headers=self.headers)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> HttpRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        # A connection pool does not pickle; the copy opens its own on first use.
        return {**self.__dict__, "_client": None}

    def __repr__(self) -> str:
        return f"HttpRetriever({self.url!r})"


def _parse_result(reply: _http.Reply, n_queries: int) -> list[list[Hit]]:
    try:
        payload = reply.json()
    except ValueError as exc:
        raise RetrieverError(f"malformed response: the body is not JSON of bounded nesting ({exc})") from None
    result = payload.get("result") if isinstance(payload, dict) else None
    if not isinstance(result, list) or len(result) != n_queries:
        raise RetrieverError(f"malformed response: expected 'result' with {n_queries} list(s)")
    out = []
    for entry in result:
        if not isinstance(entry, list):
            raise RetrieverError("malformed response: an entry of 'result' is not a list")
        out.append([_hit(item) for item in entry])
    return out


def _hit(item: Any) -> Hit:
    # With return_scores the item is {"document": doc, "score": s}; without, the doc itself.
    if isinstance(item, Mapping) and "document" in item:
        return document_to_hit(item["document"], item.get("score"))
    return document_to_hit(item)
