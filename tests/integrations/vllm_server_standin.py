"""A stand-in for a vLLM OpenAI-compatible server (``vllm serve``) on 127.0.0.1: vLLM needs a GPU.

It loads a model folder with transformers and answers what TRL's async worker and trainer ask:

* ``GET /health``; ``GET /v1/models`` (``max_model_len``); ``POST /pause``, ``/resume``;
* ``POST /v1/completions`` with token ids as ``prompt``: sampled at ``temperature`` from the model,
  as vLLM does where the rollout depends on it: ``return_token_ids`` gives ``choices[0].token_ids``,
  ``logprobs: 0`` the sampled tokens' processed log-probs in ``logprobs.token_logprobs``; a stop
  string (``stop``, kept with ``include_stop_str_in_output``) ends the completion with no
  end-of-turn token after it (``finish_reason`` ``stop``, ``stop_reason`` the string); an
  end-of-turn id ends it (``stop_reason`` None); ``max_tokens`` ends it (``finish_reason``
  ``length``). ``seed`` seeds the draw.

``script(prompt_ids) -> text | None`` replaces the draw with a fixed reply (None: sample), as a
scripted policy whose reward is known; its tokens get the model's own log-probs.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import torch


class VLLMServerStandIn:
    def __init__(self, model_dir: str, tokenizer: Any, *, max_model_len: int = 2048, script: Any = None) -> None:
        from transformers import AutoModelForCausalLM

        self.model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
        self.tokenizer = tokenizer
        eos = self.model.generation_config.eos_token_id
        self.eos_ids = set([eos] if isinstance(eos, int) else list(eos or [])) | {self.tokenizer.eos_token_id}
        self.max_model_len, self.requests, self.served, self.script = max_model_len, [], [], script
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as vLLM's server: clients reuse connections

            def do_GET(self) -> None:
                if self.path.startswith("/health"):
                    return self._reply({})
                if self.path.startswith("/v1/models"):
                    return self._reply({"data": [{"id": "standin", "max_model_len": outer.max_model_len}]})
                self.send_error(404)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if self.path.startswith("/v1/completions"):
                    with lock:
                        outer.requests.append(body)
                        return self._reply(outer._complete(body))
                return self._reply({})  # /pause, /resume: nothing to do, the weights never change here

            def _reply(self, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    @torch.no_grad()
    def _complete(self, body: dict) -> dict:
        prompt, stops = list(body["prompt"]), list(body.get("stop") or [])
        temperature = float(body.get("temperature") or 1.0)
        generator = torch.Generator().manual_seed(int(body.get("seed", 0)) % (2 ** 63))
        ids: list[int] = []
        logprobs: list[float] = []
        finish, stop_reason = "length", None
        reply = self.script(prompt) if self.script is not None else None
        forced = self.tokenizer.encode(reply, add_special_tokens=False) + [self.tokenizer.eos_token_id] \
            if reply is not None else None
        past, feed = None, prompt
        while len(ids) < int(body.get("max_tokens", 16)):
            out = self.model(torch.tensor([feed]), past_key_values=past, use_cache=True)
            past = out.past_key_values
            logits = out.logits[0, -1].float() / temperature
            dist = torch.log_softmax(logits, dim=-1)
            token = forced[len(ids)] if forced is not None else int(torch.multinomial(dist.exp(), 1, generator=generator))
            ids.append(token)
            feed = [token]
            logprobs.append(float(dist[token]))
            if token in self.eos_ids:
                finish = "stop"
                break
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            hit = next((s for s in stops if text.endswith(s)), None)
            if hit is not None:
                finish, stop_reason = "stop", hit
                break
        self.served.append((tuple(prompt), tuple(ids)))
        return {"choices": [{"index": 0, "text": self.tokenizer.decode(ids), "token_ids": ids,
                             "logprobs": {"token_logprobs": logprobs}, "finish_reason": finish,
                             "stop_reason": stop_reason}]}
