"""OpenAI-compatible chat backend: OpenAI itself, or any vLLM / llama.cpp / TGI server.

Two HTTP clients send the same requests and classify replies the same way: by default a plain
asyncio client (``async_http``: one event-loop thread, ``aiohttp``, the JSON reply read as a dict),
which costs well under a millisecond of CPU per call, so one process keeps a fleet of servers busy;
with ``sdk=True`` (``--backend openai-sdk``) the ``openai`` package in worker threads, for providers
that need its extras (about 4 ms of CPU per call and 1.4 s to import). The backend's identity is
``openai`` either way, so both find the same cached calls.

Judging scales past one machine by pointing this backend at several servers: ``base_url`` may be a
comma-separated list, and requests are spread over them in turn. The client's own retries are off;
the runner retries transient failures with backoff (and jitter): 429 (honouring ``Retry-After``),
408, 5xx, timeouts, dropped connections, and replies that are not a well-formed chat completion (a
200 whose body is not JSON, or lacks choices or message content). 401 and 403 (the key) and 404
(an unknown model, or no chat endpoint at that URL) stop the run with one sentence; any other 4xx
fails that one call. A connection that cannot be made at all (refused, a host name that does not
resolve, no route) is a ``ConnectionFailed`` naming the URL and the cause, so the runner can stop a
run whose first calls all end that way. Without an API key *and* without a base URL (the client
would send keyless calls to api.openai.com) the backend is refused before any call. Only decoding
parameters that are set (not ``None``) are sent, and the token
limit goes in the field the decoding names (``max_tokens`` or ``max_completion_tokens``).

``timeout_s`` bounds the whole request (``deadline_http``), not each read: a reply that has not
fully arrived by then is a ``NoReply`` (retried; the runner stops a run whose first attempts all end
so). A key inside a URL (``http://user:KEY@host``, ``?api-key=KEY``, ``#KEY``) is used for the request
but shown and stored only redacted (``urls``), and every error text that came from the server or the
client has its URLs redacted and the API key masked; ``server`` (the URL list without credentials or
fragment) is part of every call's key.
"""

from __future__ import annotations

import base64
import email.utils
import errno
import itertools
import json
import os
import re
import socket
import threading
import time
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

import aiohttp

from engine.errors import LensError
from engine.ingest.limits import TEXT_MAX_CHARS
from engine.judging.async_http import LoopThread
from engine.judging.backends import (
    AuthenticationFailed,
    ChatRequest,
    ChatResult,
    ConnectionFailed,
    ModelNotFound,
    NoReply,
    RetryableError,
)
from engine.judging.urls import redact_url, scrub, secrets_in, server_label

DEFAULT_URL = "https://api.openai.com/v1"  # where the openai client goes without a base URL


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
    seen: set[str] = set()
    for u in urls:
        if not re.match(r"(?i)^https?://[^/\s]", u):
            raise LensError(
                f"The server URL {redact_url(u)!r} does not start with http:// or https:// and a host."
            )
        same = u.rstrip("/")
        if same in seen:
            raise LensError(
                f"The server URL {redact_url(u)!r} is named twice in --base-url; name each server once."
            )
        seen.add(same)
    return list[str | None](urls)


def retry_after_s(headers) -> float | None:
    """The server's requested wait in seconds: ``retry-after-ms``, else ``retry-after`` (seconds or
    an HTTP date); ``None`` when absent or unreadable."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue
        return seconds if seconds >= 0 and seconds != float("inf") else None
    value = headers.get("retry-after")
    if value:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        return max(0.0, when.timestamp() - time.time())
    return None


def connect_cause(exc: BaseException) -> str | None:
    """Why no connection was made, in plain words, or ``None`` when one was (a dropped or timed-out
    connection is not this). Walks the exception chain the client builds (its ``ConnectError``
    wraps the socket error)."""
    seen: list[BaseException] = []
    x: BaseException | None = exc
    while x is not None and x not in seen and len(seen) < 12:
        seen.append(x)
        inner = getattr(x, "os_error", None)  # aiohttp's ClientConnectorError keeps the socket error here
        x = inner if isinstance(inner, BaseException) and inner not in seen else x.__cause__ or x.__context__
    for e in seen:
        if isinstance(e, ConnectionRefusedError):
            return "connection refused"
        if isinstance(e, socket.gaierror):
            return "the host name does not resolve"
        if isinstance(e, OSError) and e.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
            return "no route to host" if e.errno == errno.EHOSTUNREACH else "network unreachable"
    for e in seen:
        if type(e).__name__ in ("ConnectError", "ClientConnectorError", "ClientConnectorDNSError"):
            return f"connection failed ({str(e) or type(e).__name__})"
    return None


def _detail(exc) -> str:
    """The server's own error message, without the client's "Error code: NNN - " prefix."""
    return re.sub(r"^Error code: \d+ - ", "", str(getattr(exc, "message", exc))).strip().rstrip(".")


def split_query(url: str | None) -> tuple[str | None, dict[str, str] | None]:
    """A base URL as the client takes it: the URL without query and fragment, and the query's
    parameters (sent with every request; the client would otherwise append its paths after the query,
    ``/v1?key=K/chat/completions``). A fragment is never sent."""
    if url is None:
        return None, None
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True)) or None
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")), query


def basic_auth_endpoint(
    url: str, query: dict[str, str] | None, key: str
) -> tuple[str, dict[str, str] | None, dict[str, str]]:
    """(URL without its user part, query parameters, request headers) for the loop client: the key as
    a bearer token, or Basic authorisation from the URL's ``user:password@`` when it has one."""
    parts = urlsplit(url)
    auth = f"Bearer {key}"
    if "@" in parts.netloc:
        userinfo, host = parts.netloc.rsplit("@", 1)
        user, _, password = userinfo.partition(":")
        token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()
        auth = f"Basic {token}"
        url = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    headers = {
        "Authorization": auth,
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": "tournament-lens",
    }
    return url, query, headers


def request_kwargs(model: str, req: ChatRequest) -> dict:
    """The chat-completions arguments for ``req``: only the decoding parameters that are set."""
    d = req.decoding
    kwargs: dict = {"model": model, "messages": req.message_dicts()}
    if d.temperature is not None:
        kwargs["temperature"] = d.temperature
    if d.top_p is not None:
        kwargs["top_p"] = d.top_p
    if d.max_tokens is not None:
        kwargs[d.max_tokens_field] = d.max_tokens
    if d.seed is not None:
        kwargs["seed"] = d.seed
    if d.top_logprobs > 0:
        kwargs["logprobs"] = True
        kwargs["top_logprobs"] = d.top_logprobs
    return kwargs


def capped_reply(text: str) -> str:
    """A reply cut to the store's text limit (``import_limits.TEXT_MAX_CHARS``) with a stated marker, so
    a runaway server cannot bloat the store and the stored text still re-imports; a verdict tag that
    fell past the cut leaves the reply unparsable, stored invalid with its text, never a tie."""
    if len(text) <= TEXT_MAX_CHARS:
        return text
    marker = f"\n[reply cut here: {len(text):,} characters, over the {TEXT_MAX_CHARS:,}-character limit]"
    return text[: TEXT_MAX_CHARS - len(marker)] + marker


def read_completion(resp, latency: float) -> ChatResult:
    """A ChatResult from a chat-completion reply; a malformed reply is a RetryableError."""
    try:
        choices = resp.choices
        if not choices:
            raise RetryableError("the server's reply has no choices")
        message = choices[0].message
        text = getattr(message, "content", None)
        if not isinstance(text, str):
            raise RetryableError("the server's reply has no message content")
        text = capped_reply(text)
        top = None
        lp = getattr(choices[0], "logprobs", None)
        if lp is not None and getattr(lp, "content", None):
            top = tuple(
                {t.token: float(t.logprob) for t in (tok.top_logprobs or [])}
                or {tok.token: float(tok.logprob)}
                for tok in lp.content
            )
        usage = getattr(resp, "usage", None)
        return ChatResult(
            text=text,
            top_logprobs=top,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            latency_s=latency,
        )
    except RetryableError:
        raise
    except (AttributeError, TypeError, IndexError, KeyError, ValueError) as exc:
        raise RetryableError(f"the server's reply is not a chat completion ({exc})") from exc


def read_completion_json(doc, latency: float) -> ChatResult:
    """``read_completion`` for a reply parsed as plain JSON (dicts and lists, no model objects)."""
    try:
        choices = doc.get("choices") if isinstance(doc, dict) else None
        if not choices:
            raise RetryableError("the server's reply has no choices")
        first = choices[0]
        text = (first.get("message") or {}).get("content")
        if not isinstance(text, str):
            raise RetryableError("the server's reply has no message content")
        text = capped_reply(text)
        top = None
        lp = first.get("logprobs")
        if lp and lp.get("content"):
            top = tuple(
                {t["token"]: float(t["logprob"]) for t in (tok.get("top_logprobs") or [])}
                or {tok["token"]: float(tok["logprob"])}
                for tok in lp["content"]
            )
        usage = doc.get("usage") or {}
        return ChatResult(
            text=text,
            top_logprobs=top,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            latency_s=latency,
        )
    except RetryableError:
        raise
    except (AttributeError, TypeError, IndexError, KeyError, ValueError) as exc:
        raise RetryableError(f"the server's reply is not a chat completion ({exc!r})") from exc


def error_detail(body: bytes) -> str:
    """The server's own error message from an error reply's body (its ``error.message`` when the body
    is OpenAI's error JSON, else the text), without a trailing full stop."""
    text = body.decode("utf-8", "replace").strip()
    try:
        doc = json.loads(text)
    except ValueError:
        return text.rstrip(".")
    err = doc.get("error", doc) if isinstance(doc, dict) else doc
    msg = err.get("message") if isinstance(err, dict) else None
    return str(msg if msg else doc).strip().rstrip(".")


_BUILD_LOCK = threading.Lock()
_SAMPLE_REPLY = {
    "id": "warm-up",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": "x"},
            "logprobs": {
                "content": [
                    {
                        "token": "x",
                        "logprob": 0.0,
                        "bytes": None,
                        "top_logprobs": [{"token": "x", "logprob": 0.0, "bytes": None}],
                    }
                ]
            },
        }
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}


def build_reply_models() -> None:
    """Build the ``openai`` package's reply models once, in this thread, before any worker thread
    parses a reply: their schemas are built lazily on first use, and two threads doing that at once
    can fail with pydantic's "BaseModel cannot be instantiated directly" (seen once in a full test run:
    a judge run's first replies parsed by concurrent workers)."""
    from openai._models import construct_type
    from openai.types.chat import ChatCompletion

    with _BUILD_LOCK:
        construct_type(type_=ChatCompletion, value=_SAMPLE_REPLY)


class OpenAIBackend:
    """Chat completions over HTTP, one request per call: the loop client by default (``complete_async``
    on ``self.http``'s loop), the ``openai`` package in worker threads with ``sdk=True``."""

    name = "openai"
    identity = "openai"
    batch_size = 1

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | list[str] | None = None,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        sdk: bool = False,
    ):
        self.model = model or os.environ.get("LENS_JUDGE_MODEL") or ""
        if not self.model:
            raise LensError("No model was named for the OpenAI-compatible backend (use --model).")
        if not timeout_s > 0:  # also refuses NaN
            raise LensError(f"--timeout must be a number of seconds above 0, not {timeout_s:g}.")
        self.timeout_s = float(timeout_s)
        key = api_key or os.environ.get("OPENAI_API_KEY")
        self.base_urls = _split_urls(base_url)
        if not key and self.base_urls == [None]:  # api.openai.com without a key: every call would fail
            raise LensError(
                "The openai backend has no API key and no server URL: set OPENAI_API_KEY or --api-key "
                "for api.openai.com, or --base-url for your own OpenAI-compatible server."
            )
        key = key or "EMPTY"  # local servers ignore it
        # only to mask them where a server echoes them back in an error body
        self._secrets = frozenset({key}.union(*(secrets_in(u) for u in self.base_urls)))
        shown = [(u or DEFAULT_URL).rstrip("/") for u in self.base_urls]
        self.shown_urls = [redact_url(u) for u in shown]  # for messages: never a credential
        self.server = server_label(shown)
        self._next = itertools.cycle(range(len(self.base_urls)))
        self._lock = threading.Lock()
        self.sdk = sdk
        self.http: LoopThread | None = None
        if sdk:
            from openai import OpenAI

            from engine.judging.deadline_http import http_client

            self._clients = [
                OpenAI(
                    api_key=key,
                    base_url=endpoint,
                    default_query=query,
                    max_retries=0,
                    timeout=timeout_s,
                    http_client=http_client(timeout_s),
                )
                for endpoint, query in map(split_query, self.base_urls)
            ]
            build_reply_models()
        else:
            # what the openai client sends: POST {base}/chat/completions, the query of the base URL
            # as parameters, the key as a bearer token, or, where the URL has a user part, that user
            # and password as Basic authorisation instead (as httpx does for the openai client)
            self._endpoints = [
                basic_auth_endpoint((endpoint or DEFAULT_URL).rstrip("/") + "/chat/completions", query, key)
                for endpoint, query in map(split_query, self.base_urls)
            ]

    def start(self, concurrency: int) -> LoopThread | None:
        """The loop the runner submits ``complete_async`` to (made for ``concurrency`` connections);
        ``None`` for the SDK client, whose calls run in worker threads."""
        if self.sdk:
            return None
        with self._lock:
            if self.http is None or self.http.limit < concurrency:
                old, self.http = self.http, LoopThread(concurrency)
                if old is not None:
                    old.close()
            return self.http

    def close(self) -> None:
        """Stop the loop client's thread and connections (the SDK clients need nothing)."""
        if self.http is not None:
            self.http.close()
            self.http = None

    def _safe(self, text: str) -> str:
        """A server's or client's message with every URL redacted and the API key masked (a server
        may quote the key it refused, or the request it got, in its error body)."""
        return scrub(text, self._secrets)

    def _turn(self) -> int:
        """The next server in turn (requests are spread over the ``--base-url`` list round robin)."""
        with self._lock:
            return next(self._next)

    def _client(self):
        i = self._turn()
        return self._clients[i], self.shown_urls[i]

    def complete(self, requests: list[ChatRequest]) -> list[ChatResult]:
        """One result per request, each sent on its own (the server batches concurrent requests)."""
        if self.sdk:
            return [self._one(r) for r in requests]
        loop = self.start(1)
        assert loop is not None
        return [loop.submit(self.complete_async(r)).result() for r in requests]

    async def complete_async(self, req: ChatRequest) -> ChatResult:
        """One call on the loop client (``start`` first), its reply classified as ``_one`` does for
        the SDK: the same errors, the same sentences."""
        assert self.http is not None, "start() the loop client first"
        i = self._turn()
        (endpoint, query, headers), url = self._endpoints[i], self.shown_urls[i]
        body = json.dumps(request_kwargs(self.model, req), ensure_ascii=False).encode()
        start = time.perf_counter()
        try:
            status, reply_headers, data = await self.http.post_json(
                endpoint, body, headers, query, self.timeout_s
            )
        except TimeoutError as exc:
            raise NoReply(
                f"no complete reply from {url} within {self.timeout_s:g} s", url=url, timeout_s=self.timeout_s
            ) from exc
        except aiohttp.ClientError as exc:
            cause = connect_cause(exc)
            if cause is not None:
                cause = self._safe(cause)
                raise ConnectionFailed(f"cannot reach {url}: {cause}", url=url, cause=cause) from exc
            raise RetryableError(f"connection failed: {self._safe(str(exc) or type(exc).__name__)}") from exc
        if status >= 400:
            raise self._status_error(status, reply_headers, data, url)
        try:
            doc = json.loads(data)
        except ValueError as exc:  # a 200 whose body is not JSON
            raise RetryableError(f"the server's reply is not JSON ({self._safe(str(exc))})") from exc
        return read_completion_json(doc, time.perf_counter() - start)

    def _status_error(self, status: int, headers, body: bytes, url: str) -> Exception:
        """The error an HTTP error status stands for (module docstring), as ``_one`` classifies the
        SDK's exceptions."""
        detail = self._safe(error_detail(body))
        if status in (401, 403):
            return AuthenticationFailed(
                f"The server refused the API key ({status}); set OPENAI_API_KEY or --api-key."
            )
        if status == 404:
            return ModelNotFound(
                f"The server at {url} answered 404 for model {self.model!r} ({detail}); "
                "check --model and --base-url."
            )
        if status == 429:
            return RetryableError(f"rate limited (429): {detail}", retry_after=retry_after_s(headers))
        if status >= 500 or status == 408:
            return RetryableError(f"server error {status}", retry_after=retry_after_s(headers))
        return LensError(f"The server rejected a request with status {status} ({detail}).")

    def _one(self, req: ChatRequest) -> ChatResult:
        import openai

        from engine.judging.deadline_http import deadline

        client, url = self._client()
        start = time.perf_counter()
        try:
            with deadline(self.timeout_s):
                resp = client.chat.completions.create(**request_kwargs(self.model, req))
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise AuthenticationFailed(
                f"The server refused the API key ({exc.status_code}); set OPENAI_API_KEY or --api-key."
            ) from exc
        except openai.NotFoundError as exc:
            raise ModelNotFound(
                f"The server at {url} answered 404 for model {self.model!r} "
                f"({self._safe(_detail(exc))}); check --model and --base-url."
            ) from exc
        except openai.RateLimitError as exc:
            raise RetryableError(
                f"rate limited (429): {self._safe(exc.message)}",
                retry_after=retry_after_s(exc.response.headers),
            ) from exc
        except openai.APITimeoutError as exc:
            raise NoReply(
                f"no complete reply from {url} within {self.timeout_s:g} s", url=url, timeout_s=self.timeout_s
            ) from exc
        except openai.APIConnectionError as exc:
            cause = connect_cause(exc)
            if cause is not None:
                cause = self._safe(cause)
                raise ConnectionFailed(f"cannot reach {url}: {cause}", url=url, cause=cause) from exc
            raise RetryableError(f"connection failed: {self._safe(str(exc))}") from exc
        except openai.APIResponseValidationError as exc:
            raise RetryableError(
                f"the server's reply is not a chat completion ({self._safe(exc.message)})"
            ) from exc
        except openai.APIStatusError as exc:
            if exc.status_code >= 500 or exc.status_code == 408:
                raise RetryableError(
                    f"server error {exc.status_code}", retry_after=retry_after_s(exc.response.headers)
                ) from exc
            raise LensError(
                f"The server rejected a request with status {exc.status_code} ({self._safe(_detail(exc))})."
            ) from exc
        except ValueError as exc:  # a 200 whose body is not JSON (json.JSONDecodeError)
            raise RetryableError(f"the server's reply is not JSON ({self._safe(str(exc))})") from exc
        return read_completion(resp, time.perf_counter() - start)
