"""The one small interface every model backend implements, and the request/result records.

A backend turns a batch of chat requests into completions. Requests carry their decoding
parameters (deterministic by default: temperature 0, seed 0), which are part of every cache key and
stored with every call. A parameter left as ``None`` is not sent at all, so a server's own default
applies (OpenAI's reasoning models refuse ``temperature``, ``top_p`` and ``max_tokens``).
``max_tokens_field`` names the request field that carries the token limit: ``max_tokens`` (most
servers) or ``max_completion_tokens`` (OpenAI's reasoning models). Errors are classified so the
runner can retry (429, 5xx, timeouts, malformed replies, failed connections) or stop the whole run
at once (authentication, an unknown model, a server that no first call could reach).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Protocol

from engine.errors import LensError

MAX_TOKENS_FIELDS = ("max_tokens", "max_completion_tokens")


@dataclass(frozen=True)
class Decoding:
    """Decoding parameters; the defaults give deterministic (greedy) decoding. ``None`` = not sent."""

    temperature: float | None = 0.0
    max_tokens: int | None = 512
    top_p: float | None = None
    top_logprobs: int = 0  # >0: return the k most likely tokens (and logprobs) at each step
    seed: int | None = 0
    max_tokens_field: str = "max_tokens"
    # Strings whose logprobs are reported at every step besides the top k, wherever they rank (the
    # soft protocol's letters). Only a backend that sees the whole next-token distribution can
    # (``Backend.full_logprobs``: the local one); for the others the runner drops the field, so it
    # is neither in their call keys nor stored with their calls.
    logprob_tokens: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.max_tokens_field not in MAX_TOKENS_FIELDS:
            raise LensError(
                f"The token-limit field must be one of {', '.join(MAX_TOKENS_FIELDS)}, "
                f"not {self.max_tokens_field!r}."
            )

    def as_dict(self) -> dict:
        """The decoding parameters as plain JSON values: part of the call-cache key and the stored call."""
        d: dict[str, object] = {
            "temperature": None if self.temperature is None else float(self.temperature),
            "max_tokens": None if self.max_tokens is None else int(self.max_tokens),
            "top_p": None if self.top_p is None else float(self.top_p),
            "top_logprobs": int(self.top_logprobs),
            "seed": self.seed,
            "max_tokens_field": self.max_tokens_field,
        }
        if self.logprob_tokens:  # only when set, so every other call key stays what it was
            d["logprob_tokens"] = list(self.logprob_tokens)
        return d

    def group_key(self) -> str:
        """A string that is equal exactly when two decodings are (for grouping a batch)."""
        return json.dumps(self.as_dict(), sort_keys=True)


@dataclass(frozen=True)
class ChatRequest:
    """One model call: rendered messages, decoding parameters and the template that made them."""

    messages: tuple[tuple[str, str], ...]  # (role, content) pairs
    decoding: Decoding = field(default_factory=Decoding)
    template_id: str = "raw"
    template_version: int = 1

    def messages_json(self) -> str:
        """The messages as a JSON list of role/content objects, as stored in judge_calls."""
        return json.dumps([{"role": r, "content": c} for r, c in self.messages], ensure_ascii=False)

    def message_dicts(self) -> list[dict[str, str]]:
        """The messages as role/content dicts, the shape chat APIs take."""
        return [{"role": r, "content": c} for r, c in self.messages]

    def size(self) -> int:
        """Characters in the messages: a cheap proxy of the prompt's token length."""
        return sum(len(c) for _, c in self.messages)


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
    """A transient failure (rate limit, server error, timeout, malformed reply): retried with backoff.

    ``retry_after`` is the server's own wait in seconds (a ``Retry-After`` header), when it gave one.
    """

    def __init__(self, message: str, *, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class ConnectionFailed(RetryableError):
    """No connection to the server could be made (refused, a name that does not resolve, no route).

    ``url`` is the server's base URL and ``cause`` a few plain words (``connection refused``); the
    runner stops a run whose first calls all end like this (``ServerUnreachable``).
    """

    def __init__(self, message: str, *, url: str, cause: str):
        super().__init__(message)
        self.url, self.cause = url, cause


class NoReply(RetryableError):
    """The server took the request but sent no complete reply within the timeout (``url``, ``timeout_s``);
    the runner stops a run whose first attempts all end like this (``ServerStalled``)."""

    def __init__(self, message: str, *, url: str, timeout_s: float):
        super().__init__(message)
        self.url, self.timeout_s = url, timeout_s


class BackendStopped(LensError):
    """Retrying cannot help any call of this run (bad key, unknown model): the run stops at once."""


class AuthenticationFailed(BackendStopped):
    """The backend refused our credentials."""


class ModelNotFound(BackendStopped):
    """The server does not know the model (or has no chat endpoint at that URL)."""


class ServerUnreachable(BackendStopped):
    """The first calls of a run all failed to connect after their retries: the server is not there."""


class Backend(Protocol):
    """What a backend provides. ``complete`` keeps the order of ``requests``.

    ``batch_size`` > 1 means the backend is fastest when handed several requests at once (local
    batched generation); API backends take one request per call and gain from concurrency instead.
    ``identity`` is what the call cache keys on besides the model: the backend's name plus whatever
    changes its numbers (the local backend adds device type and dtype). ``full_logprobs`` (optional,
    default False): the backend reports ``Decoding.logprob_tokens`` (it sees every token's logit).
    """

    name: str
    identity: str
    model: str
    batch_size: int

    def complete(self, requests: list[ChatRequest]) -> list[ChatResult]:
        """One result per request, in order (a backend may batch them)."""
