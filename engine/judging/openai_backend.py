"""OpenAI-compatible chat backend: OpenAI itself, or any vLLM / llama.cpp / TGI server.

Judging scales past one machine by pointing this backend at several servers: ``base_url`` may be a
comma-separated list, and requests are spread over them in turn. The client's own retries are off;
the runner retries transient failures (429, 5xx, timeouts, dropped connections) with backoff and
stops at once on an authentication error.
"""

from __future__ import annotations

import itertools
import os
import threading
import time

from ..errors import LensError
from .backends import AuthenticationFailed, ChatRequest, ChatResult, RetryableError


def _split_urls(base_url: str | list[str] | None) -> list[str | None]:
    if base_url is None:
        base_url = os.environ.get("OPENAI_BASE_URL")
    if not base_url:
        return [None]  # the openai package's default endpoint
    if isinstance(base_url, str):
        base_url = [u.strip() for u in base_url.split(",")]
    urls = [u for u in base_url if u]
    if not urls:
        raise LensError("The --base-url option was given but names no URL.")
    return urls


class OpenAIBackend:
    """Chat completions over HTTP with the ``openai`` client (one request per call, thread-safe)."""

    name = "openai"
    batch_size = 1

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | list[str] | None = None,
        api_key: str | None = None,
        timeout_s: float = 120.0,
    ):
        from openai import OpenAI

        self.model = model or os.environ.get("LENS_JUDGE_MODEL") or ""
        if not self.model:
            raise LensError("No model was named for the OpenAI-compatible backend (use --model).")
        key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"  # local servers ignore it
        self.base_urls = _split_urls(base_url)
        self._clients = [
            OpenAI(api_key=key, base_url=u, max_retries=0, timeout=timeout_s) for u in self.base_urls
        ]
        self._next = itertools.cycle(range(len(self._clients)))
        self._lock = threading.Lock()

    def _client(self):
        with self._lock:
            return self._clients[next(self._next)]

    def complete(self, requests: list[ChatRequest]) -> list[ChatResult]:
        return [self._one(r) for r in requests]

    def _one(self, req: ChatRequest) -> ChatResult:
        import openai

        d = req.decoding
        kwargs: dict = {
            "model": self.model,
            "messages": req.message_dicts(),
            "temperature": d.temperature,
            "top_p": d.top_p,
            "max_tokens": d.max_tokens,
        }
        if d.seed is not None:
            kwargs["seed"] = d.seed
        if d.top_logprobs > 0:
            kwargs["logprobs"] = True
            kwargs["top_logprobs"] = d.top_logprobs
        start = time.perf_counter()
        try:
            resp = self._client().chat.completions.create(**kwargs)
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise AuthenticationFailed(
                f"The server refused the API key ({exc.status_code}); set OPENAI_API_KEY or --api-key."
            ) from exc
        except openai.RateLimitError as exc:
            raise RetryableError(f"rate limited (429): {exc}") from exc
        except openai.APITimeoutError as exc:
            raise RetryableError(f"timed out: {exc}") from exc
        except openai.APIConnectionError as exc:
            raise RetryableError(f"connection failed: {exc}") from exc
        except openai.APIStatusError as exc:
            if exc.status_code >= 500 or exc.status_code == 408:
                raise RetryableError(f"server error {exc.status_code}") from exc
            raise LensError(
                f"The server rejected a request with status {exc.status_code}: {exc.message}"
            ) from exc
        latency = time.perf_counter() - start
        if not resp.choices:
            raise RetryableError("the server returned no choices")
        choice = resp.choices[0]
        text = choice.message.content or ""
        top = None
        lp = getattr(choice, "logprobs", None)
        if lp is not None and getattr(lp, "content", None):
            top = tuple(
                {t.token: float(t.logprob) for t in (tok.top_logprobs or [])}
                or {tok.token: float(tok.logprob)}
                for tok in lp.content
            )
        usage = resp.usage
        return ChatResult(
            text=text,
            top_logprobs=top,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            latency_s=latency,
        )
