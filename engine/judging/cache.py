"""The DuckDB call cache: every model call is stored once, keyed by a hash of what was asked.

The key is sha256 over the canonical JSON of (backend identity, model, template id, template
version, rendered messages, decoding parameters), so a rerun finds each call it already made and a
changed template, model or decoding parameter makes a new call. The backend identity is its name
plus whatever changes its numbers: ``openai``, or ``transformers[cpu,float32]`` /
``transformers[cuda,bfloat16]`` for the local backend, so CPU results are never reused on a GPU.

Each completed call is committed as soon as it arrives, alone (``put``) or with the calls that
finished at the same moment (``put_many``, one transaction), so a run killed at any moment (SIGKILL)
keeps every call that was written and none twice; a call still in flight (or finished but not yet
written) is made again by the rerun.
"""

from __future__ import annotations

import hashlib
import json

import pandas as pd

from ..store import Store
from .backends import ChatRequest, ChatResult


def call_key(backend: str, model: str, req: ChatRequest) -> str:
    """sha256 hex of the canonical request; the same request always gets the same key.

    ``backend`` is the backend's ``identity`` (stored in ``judge_calls.backend``).
    """
    payload = json.dumps(
        {
            "backend": backend,
            "model": model,
            "template": [req.template_id, int(req.template_version)],
            "messages": [[r, c] for r, c in req.messages],
            "decoding": req.decoding.as_dict(),
        },
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _result_from_row(text, top, ptok, ctok, latency, attempts) -> ChatResult:
    return ChatResult(
        text=text or "",
        top_logprobs=tuple(json.loads(top)) if top else None,
        prompt_tokens=int(ptok or 0),
        completion_tokens=int(ctok or 0),
        latency_s=float(latency or 0.0),
        attempts=int(attempts or 1),
    )


class CallCache:
    """Reads and writes ``judge_calls``; the owning process is the only writer of the store."""

    def __init__(self, store: Store):
        self.store = store

    def get_many(self, keys: list[str]) -> dict[str, ChatResult]:
        """The cached results among ``keys`` (missing keys are absent from the dict)."""
        if not keys:
            return {}
        with self.store.session():  # a store opened with keep_open=False lets go of the file after the read
            cur = self.store.cursor()
            cur.register("_wanted", pd.DataFrame({"call_key": list(dict.fromkeys(keys))}))
            rows = cur.execute(
                "SELECT c.call_key, text, top_logprobs, prompt_tokens, completion_tokens, latency_s, attempts"
                " FROM judge_calls c JOIN _wanted w USING (call_key)"
            ).fetchall()
            cur.unregister("_wanted")
        return {r[0]: _result_from_row(*r[1:]) for r in rows}

    def put(
        self, key: str, backend: str, model: str, req: ChatRequest, res: ChatResult, run_id: int | None
    ) -> None:
        """Store one completed call, committed at once (a duplicate key is ignored, not doubled)."""
        self.put_many([(key, req, res)], backend, model, run_id)

    def put_many(
        self,
        calls: list[tuple[str, ChatRequest, ChatResult]],
        backend: str,
        model: str,
        run_id: int | None,
    ) -> None:
        """Store completed calls ``(key, request, result)`` in one transaction (duplicates ignored)."""
        if not calls:
            return
        cols = [
            "call_key",
            "backend",
            "model",
            "template_id",
            "template_version",
            "messages",
            "decoding",
            "text",
            "top_logprobs",
            "prompt_tokens",
            "completion_tokens",
            "latency_s",
            "attempts",
            "run_id",
        ]
        df = pd.DataFrame(
            [
                [
                    key,
                    backend,
                    model,
                    req.template_id,
                    int(req.template_version),
                    req.messages_json(),
                    json.dumps(req.decoding.as_dict(), sort_keys=True),
                    res.text,
                    json.dumps(list(res.top_logprobs)) if res.top_logprobs is not None else None,
                    int(res.prompt_tokens),
                    int(res.completion_tokens),
                    float(res.latency_s),
                    int(res.attempts),
                    run_id,
                ]
                for key, req, res in calls
            ],
            columns=cols,
        ).astype({"top_logprobs": "object", "run_id": "Int64"})
        with self.store.transaction() as cur:
            cur.register("_calls", df)
            cur.execute(
                f"INSERT INTO judge_calls ({', '.join(cols)}) SELECT {', '.join(cols)} FROM _calls"
                " ON CONFLICT DO NOTHING"
            )
            cur.unregister("_calls")


def call_summary(store: Store, prices: dict[str, tuple[float, float]] | None = None) -> pd.DataFrame:
    """What the cache holds: calls and tokens per backend, model and template, with estimated cost.

    ``prices`` maps a model to (USD per 1M prompt tokens, USD per 1M completion tokens); models
    without a price get cost 0 (local models, or unknown prices).
    """
    df = (
        store.cursor()
        .execute(
            "SELECT backend, model, template_id, template_version, count(*) AS calls,"
            " sum(prompt_tokens)::BIGINT AS prompt_tokens, sum(completion_tokens)::BIGINT AS completion_tokens,"
            " round(sum(latency_s), 3) AS seconds, min(created_at) AS first_call, max(created_at) AS last_call"
            " FROM judge_calls GROUP BY ALL ORDER BY backend, model, template_id, template_version"
        )
        .df()
    )
    prices = prices or {}
    df["est_cost_usd"] = [
        (pt * prices.get(m, (0.0, 0.0))[0] + ct * prices.get(m, (0.0, 0.0))[1]) / 1e6
        for m, pt, ct in zip(df["model"], df["prompt_tokens"], df["completion_tokens"], strict=True)
    ]
    return df
