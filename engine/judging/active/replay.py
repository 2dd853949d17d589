"""The replay backend: every judge call is answered by a stored verdict of a source dataset (SRC).

``judge --backend replay --from-dataset SRC [--from-judge J]`` makes the pool SRC's verdicts, one item
per stored verdict (``pool_from_verdicts``): a battle log's battles, each presentation order of a
pair on a prompt, each judge's or annotator's vote. So a pair SRC never judged is never offered, and
asking an item is answered with exactly SRC's verdict for it (its winner, order and prob_a).

The calls go through the judge runner like a model's: each is a ``ChatRequest`` whose one message is
the JSON identity of the SRC verdict (dataset, verdict id, judge, prompt instance, models, order),
on backend ``replay`` with SRC's name as the model, so it has a call key, is cached and journaled,
and a replay killed mid-way and run again reads its calls back instead of asking them again. The
reply is the verdict as JSON (``{"winner": "A", "prob_a": null}``), and the stored row keeps SRC's
judge name, so ``leaderboard --dataset OUT`` ranks the revealed verdicts as SRC's judge's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.errors import LensError
from engine.judging.active.pool import Pool, pool_from_verdicts
from engine.judging.backends import ChatRequest, ChatResult, Decoding
from engine.store.connection import Store

REPLAY_COLUMNS = ("judge", "prompt_id", "variant", "variant_kind", "turn", "category", "model_a", "model_b",
                  "winner", "order", "prob_a")
"""The SRC verdict columns a replay reads (besides verdict_id)."""

REPLAY_DECODING = Decoding(temperature=None, max_tokens=None, seed=None)
"""No decoding is involved: every parameter is left out of the call key."""


@dataclass(frozen=True, eq=False)
class ReplaySource:
    """SRC's verdicts as a pool, with the answer of every item: its verdict id, winner and prob_a."""

    dataset: str
    pool: Pool
    verdict_id: np.ndarray
    winner: np.ndarray
    prob_a: np.ndarray

    def request(self, i: int) -> ChatRequest:
        """The call that asks item ``i``: the identity of SRC's verdict, as one JSON message."""
        p = self.pool
        inst = p.prompt_table.iloc[int(p.prompt[i])]
        order = {0: "AB", 1: "BA"}.get(int(p.order[i]))
        ident = {
            "replay": self.dataset, "verdict_id": int(self.verdict_id[i]), "judge": p.judges[p.judge[i]],
            "prompt_id": str(inst["prompt_id"]), "variant": int(inst["variant"]), "turn": int(inst["turn"]),
            "model_a": p.models[p.a[i]], "model_b": p.models[p.b[i]], "order": order,
        }  # fmt: skip
        return ChatRequest(
            (("user", json.dumps(ident, sort_keys=True, ensure_ascii=False)),), REPLAY_DECODING, "replay", 1
        )

    def row(self, i: int, reply: ChatResult) -> dict:
        """The verdict row (protocols.ROW_COLUMNS) a replayed call stores for item ``i``."""
        p = self.pool
        inst = p.prompt_table.iloc[int(p.prompt[i])]
        answer = parse_reply(reply.text)
        category = inst["category"]
        return {
            "prompt_id": str(inst["prompt_id"]), "variant": int(inst["variant"]),
            "variant_kind": inst["variant_kind"] if isinstance(inst["variant_kind"], str) else "original",
            "turn": int(inst["turn"]), "category": category if isinstance(category, str) else None,
            "model_a": p.models[p.a[i]], "model_b": p.models[p.b[i]], "winner": answer["winner"],
            "order": {0: "AB", 1: "BA"}.get(int(p.order[i])), "prob_a": answer["prob_a"],
            "explanation": f"replayed from {self.dataset} verdict {int(self.verdict_id[i])}",
        }  # fmt: skip

    def unit(self, i: int):
        """The runner unit that asks item ``i`` and returns (i, rows) (no row when the call failed)."""
        (res,) = yield [self.request(i)]
        return i, [] if res is None else [self.row(i, res)]


def parse_reply(text: str) -> dict:
    """The verdict in a replay reply: winner (A, B, tie or invalid) and prob_a (None when absent)."""
    try:
        got = json.loads(text)
        winner = got["winner"]
        prob = got.get("prob_a")
    except (ValueError, TypeError, KeyError):
        return {"winner": "invalid", "prob_a": None}
    ok = winner in ("A", "B", "tie", "invalid")
    return {"winner": winner if ok else "invalid",
            "prob_a": float(prob) if isinstance(prob, (int, float)) and ok else None}


class ReplayBackend:
    """A backend (``engine.judging.backends.Backend``) that answers each replay call from SRC's verdicts.

    A request that names another dataset or a verdict SRC does not hold is an error of the program
    (the pool offers only SRC's verdicts), raised as such rather than answered."""

    name = identity = "replay"
    batch_size = 4096

    def __init__(self, source: ReplaySource):
        self.source = source
        self.model = source.dataset
        self._order = np.argsort(source.verdict_id, kind="stable")
        self._sorted = source.verdict_id[self._order]

    def complete(self, requests: list[ChatRequest]) -> list[ChatResult]:
        return [self._answer(r) for r in requests]

    def _answer(self, req: ChatRequest) -> ChatResult:
        ident = json.loads(req.messages[0][1])
        if ident.get("replay") != self.source.dataset:
            raise LensError(
                f"A replay call names dataset {ident.get('replay')!r}, not {self.source.dataset!r}."
            )
        vid = int(ident["verdict_id"])
        at = int(np.searchsorted(self._sorted, vid))
        if at >= len(self._sorted) or self._sorted[at] != vid:
            raise LensError(f"Dataset {self.source.dataset!r} holds no verdict {vid} to replay.")
        i = int(self._order[at])
        prob = self.source.prob_a[i]
        text = json.dumps({"winner": str(self.source.winner[i]),
                           "prob_a": None if not np.isfinite(prob) else float(prob)})
        return ChatResult(text)


def load_replay_source(
    store: Store, dataset: str, *, judge: str | None = None, models: list[str] | None = None
) -> ReplaySource:
    """SRC's verdicts (of ``judge``; between ``models``, when given) as a replay source; one sentence
    when SRC does not exist, holds pair counts or no verdicts, or lacks the judge or models.

    The pool is numbered in DuckDB (``engine.store.verdict_codes``: every item's codes as numbers, the
    instance text as Arrow) rather than from a frame of every verdict's strings, which took ~3-4 s of CPU
    at 1M verdicts. ``source_from_frame`` builds the same source from a frame (tests compare the two);
    it is still the path for verdicts with a NULL key (attached Parquet), which it types as text."""
    if not store.has_dataset(dataset):
        raise LensError(f"There is no dataset named {dataset!r} to replay (--from-dataset) in {store.path}.")
    from engine.store.pair_counts import is_pair_count_dataset

    if is_pair_count_dataset(store, dataset):
        raise LensError(
            f"Dataset {dataset!r} holds pair counts (outcomes summed per model pair), not verdicts: a replay "
            "answers each call with one stored verdict; expand the counts into a battle log first."
        )
    from engine.store.sql import in_values
    from engine.store.verdict_codes import coded_verdicts, distinct_text, null_keys

    with store.session():
        rel = store.verdict_relation(dataset)
        con = store.cursor()
        have = distinct_text(con, rel, "judge")
        if not have:
            raise LensError(f"Dataset {dataset!r} holds no verdicts to replay.")
        if judge is not None:
            if judge not in have:
                raise LensError(
                    f"Dataset {dataset!r} has no verdicts of judge {judge!r} to replay; its judges: "
                    f"{', '.join(have[:12])}{' …' if len(have) > 12 else ''}."
                )
            rel = rel.filtered([in_values("judge", [judge])])
        if models:
            named = set(distinct_text(con, rel, "model_a")) | set(distinct_text(con, rel, "model_b"))
            unknown = [m for m in models if m not in named]
            if unknown:
                raise LensError(f"Dataset {dataset!r} has no verdicts of model {unknown[0]!r} to replay.")
            rel = rel.filtered([in_values("model_a", models), in_values("model_b", models)])
        nulls, pairs = null_keys(con, rel)
        if nulls:
            v = store.verdicts(dataset, columns=list(REPLAY_COLUMNS))
            v = v[v["judge"] == judge] if judge is not None else v
            if models:
                v = v[v["model_a"].isin(models) & v["model_b"].isin(models)]
            v = v[v["model_a"] != v["model_b"]]
        if (nulls and v.empty) or not pairs:
            raise LensError(f"Dataset {dataset!r} holds no verdict between two different models to replay.")
        if nulls:
            return source_from_frame(v, dataset)
        return _source_from_codes(coded_verdicts(con, rel.filtered([("model_a <> model_b", ())])), dataset)


def source_from_frame(v: pd.DataFrame, dataset: str) -> ReplaySource:
    """A replay source from a frame of SRC's verdicts (REPLAY_COLUMNS and verdict_id, in verdict order,
    no verdict of a model against itself): the path the coded read must agree with."""
    v = v.reset_index(drop=True)
    pool = pool_from_verdicts(v, what=f"Dataset {dataset!r}")
    prob = pd.to_numeric(v["prob_a"], errors="coerce").to_numpy(np.float64)
    return ReplaySource(dataset, pool, v["verdict_id"].to_numpy(np.int64), v["winner"].astype(str).to_numpy(),
                        prob)


def _source_from_codes(coded, dataset: str) -> ReplaySource:
    """The replay source of coded verdicts (``engine.store.verdict_codes.CodedVerdicts``): the arrays as
    read, and the prompt table from each instance's first verdict (its Arrow text made a frame only
    there), typed as ``pool_from_verdicts`` types it."""
    from engine.judging.active.pool import INSTANCE_COLUMNS, instance_table
    from engine.store.schema import VERDICT_DTYPES

    rows = coded.rows
    prompt = rows.column("prompt").to_numpy().astype(np.int32)
    _, first = np.unique(prompt, return_index=True)  # each instance's first verdict, in instance order
    heads = rows.select(list(INSTANCE_COLUMNS)).take(first).to_pandas()
    table = instance_table(heads.astype({c: VERDICT_DTYPES[c] for c in INSTANCE_COLUMNS}))

    def ints(name: str, dtype) -> np.ndarray:
        return rows.column(name).to_numpy().astype(dtype)

    pool = Pool(coded.models, coded.judges, table, prompt, ints("a", np.int32), ints("b", np.int32),
                ints("order", np.int8), ints("judge", np.int32))
    winner = np.asarray(coded.winners, dtype=object)[ints("winner", np.int64)]
    prob = rows.column("prob_a").to_numpy(zero_copy_only=False).astype(np.float64)
    return ReplaySource(dataset, pool, ints("verdict_id", np.int64), winner, prob)
