"""The one small interface every model backend implements, and the request/result records.

A backend turns a batch of chat requests into completions. Requests carry their decoding
parameters (deterministic by default: temperature 0), which are part of every cache key and stored
with every call. Errors are classified so the runner can retry (429, 5xx, timeouts) or stop at once
(authentication).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Protocol

from ..errors import LensError


@dataclass(frozen=True)
class Decoding:
    """Decoding parameters; the defaults give deterministic (greedy) decoding."""

    temperature: float = 0.0
    max_tokens: int = 512
    top_p: float = 1.0
    top_logprobs: int = 0  # >0: return the k most likely tokens (and logprobs) at each step
    seed: int | None = 0

    def as_dict(self) -> dict:
        return {
            "temperature": float(self.temperature),
            "max_tokens": int(self.max_tokens),
            "top_p": float(self.top_p),
            "top_logprobs": int(self.top_logprobs),
            "seed": self.seed,
        }


@dataclass(frozen=True)
class ChatRequest:
    """One model call: rendered messages, decoding parameters and the template that made them."""

    messages: tuple[tuple[str, str], ...]  # (role, content) pairs
    decoding: Decoding = field(default_factory=Decoding)
    template_id: str = "raw"
    template_version: int = 1

    def messages_json(self) -> str:
        return json.dumps([{"role": r, "content": c} for r, c in self.messages], ensure_ascii=False)

    def message_dicts(self) -> list[dict[str, str]]:
        return [{"role": r, "content": c} for r, c in self.messages]


@dataclass(frozen=True)
class ChatResult:
    """A completed call: the text, optional per-token top logprobs, and token counts."""

    text: str
    top_logprobs: tuple[dict[str, float], ...] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    attempts: int = 1


class RetryableError(Exception):
    """A transient failure (rate limit, server error, timeout): the runner retries with backoff."""


class AuthenticationFailed(LensError):
    """The backend refused our credentials: retrying cannot help, so the run stops."""


class Backend(Protocol):
    """What a backend provides. ``complete`` keeps the order of ``requests``.

    ``batch_size`` > 1 means the backend is fastest when handed several requests at once (local
    batched generation); API backends take one request per call and gain from concurrency instead.
    """

    name: str
    model: str
    batch_size: int

    def complete(self, requests: list[ChatRequest]) -> list[ChatResult]: ...
