"""Synthetic battle logs for the product benchmark, written in bounded-memory chunks.

Two shapes:

- ``arena``: Chatbot-Arena style. One model pair per prompt; models drawn with a popularity skew
  (a few models fight far more often than the rest); outcomes from a Davidson model on log
  strengths with a realistic spread (sd 0.8, i.e. roughly 550 Elo points from best to worst at 100
  models), about 20 % ties, a third of them "tie (bothbad)"; about 0.5 % of battles repeat an
  earlier prompt and pair with a fresh outcome and their own ``battle_id``; ``tstamp`` grows
  with the row (seconds since the epoch, about 40 battles a minute from 2024-01-01).
- ``tournament``: per-prompt tournaments. Every prompt compares every pair of ``n`` models in
  both presentation orders (``order`` AB and BA, same model_a / model_b), with a prompt effect on
  the strengths and a small first-position bias.

Rows are produced ``chunk`` at a time from a seeded generator, so a 10M-row file needs a few
hundred MB however large it is. ``write(kind, path, …)`` writes Parquet (``.parquet``) or CSV
(``.csv``) with pyarrow writers.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

ARENA_T0 = 1_704_067_200.0  # 2024-01-01 00:00 UTC
NU = 0.55  # Davidson tie parameter: about 20 % ties at this skill spread
REPEAT_SHARE = 0.005
POSITION_BIAS = 0.15  # log-odds bonus of the answer shown first (tournaments)


def model_names(n: int) -> np.ndarray:
    """Names that do not give the strength order away."""
    return np.array([f"model-{(k * 37) % 1000:03d}-{k:03d}" for k in range(n)], dtype=object)


def strengths(n: int, seed: int) -> np.ndarray:
    """True log strengths, mean zero, sd 0.8 (a public arena's spread)."""
    rng = np.random.default_rng([seed, 1])
    theta = rng.normal(0.0, 0.8, n)
    return theta - theta.mean()


def _popularity(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng([seed, 2])
    w = 1.0 / (1.0 + rng.permutation(n)) ** 0.7
    return w / w.sum()


def _davidson(rng: np.random.Generator, d: np.ndarray) -> np.ndarray:
    """Outcome codes 0 = first wins, 1 = second wins, 2 = tie, for log-strength differences d."""
    pa_, pb = np.exp(d / 2), np.exp(-d / 2)
    pt = NU
    u = rng.random(d.size) * (pa_ + pb + pt)
    return np.where(u < pa_, 0, np.where(u < pa_ + pb, 1, 2))


STYLE_BETA = (0.6, 0.1, 0.2, 0.1)
"""Log-odds per unit of (a - b)/(a + b) of tokens, headers, lists, bold in the style logs (``style=True``)."""


def style_counts(rng: np.random.Generator, a: np.ndarray, b: np.ndarray, verbosity: np.ndarray) -> np.ndarray:
    """(m, 8) per-side counts tokens, headers, lists, bold of model_a's then model_b's answer: tokens
    lognormal around the model's verbosity, markdown counts Poisson (many answers have none)."""
    out = np.empty((a.size, 8))
    for side, who in ((0, a), (4, b)):
        out[:, side] = np.round(np.exp(rng.normal(np.log(300.0) + verbosity[who], 0.6)))
        out[:, side + 1:side + 4] = rng.poisson(np.exp(verbosity[who])[:, None] * [0.8, 2.0, 1.5])
    return out


def arena_chunks(n_battles: int, n_models: int, seed: int = 0, chunk: int = 500_000,
                 short_winners: bool = False, style: bool = False) -> Iterator[pa.Table]:
    """Chatbot-Arena-shaped battles as pyarrow tables of at most ``chunk`` rows.

    Winners are spelled as the Arena logs do (``model_a``, ``model_b``, ``tie``, ``tie (bothbad)``),
    or with ``short_winners`` as ``A``, ``B``, ``tie`` (the same battles otherwise). ``style``: each
    battle also carries the explicit per-side style columns ``tokens_a`` ... ``bold_b`` (each model has
    its own verbosity) and its outcome also follows ``STYLE_BETA`` . (a - b)/(a + b) (other battles).
    """
    spellings = ["A", "B", "tie", "tie"] if short_winners else ["model_a", "model_b", "tie", "tie (bothbad)"]
    names, theta, pop = model_names(n_models), strengths(n_models, seed), _popularity(n_models, seed)
    for start in range(0, n_battles, chunk):
        m = min(chunk, n_battles - start)
        rng = np.random.default_rng([seed, 3, start])
        a = rng.choice(n_models, m, p=pop)
        b = rng.choice(n_models, m, p=pop)
        same = a == b
        while same.any():
            b[same] = rng.choice(n_models, int(same.sum()), p=pop)
            same = a == b
        ids = np.arange(start, start + m)
        prompt = ids.copy()
        rep = np.flatnonzero(rng.random(m) < REPEAT_SHARE)
        rep = rep[rep > 0]
        src = (rng.random(rep.size) * rep).astype(np.int64)  # an earlier row of this chunk
        prompt[rep], a[rep], b[rep] = prompt[src], a[src], b[src]
        d = theta[a] - theta[b]
        counts = None
        if style:
            verbosity = np.random.default_rng([seed, 5]).normal(0.0, 0.4, n_models)
            counts = style_counts(rng, a, b, verbosity)
            total = counts[:, :4] + counts[:, 4:]
            rel = (counts[:, :4] - counts[:, 4:]) / np.where(total == 0, 1, total)
            d = d + rel @ np.asarray(STYLE_BETA)
        code = _davidson(rng, d)
        bothbad = rng.random(m) < 1 / 3
        winner = np.array(spellings, dtype=object)[
            np.where((code == 2) & bothbad, 3, code)]
        tstamp = ARENA_T0 + ids * 1.5 + rng.random(m)
        columns = {
            "battle_id": pa.array(np.char.add("b", ids.astype(str)).astype(object), pa.string()),
            "prompt_id": pa.array(np.char.add("q", prompt.astype(str)).astype(object), pa.string()),
            "model_a": pa.array(names[a], pa.string()),
            "model_b": pa.array(names[b], pa.string()),
            "winner": pa.array(winner, pa.string()),
            "tstamp": pa.array(tstamp, pa.float64()),
        }
        if counts is not None:
            names8 = [f"{f}_{s}" for s in "ab" for f in ("tokens", "headers", "lists", "bold")]
            for k, name in enumerate(names8):
                columns[name] = pa.array(counts[:, k], pa.float64())
        yield pa.table(columns)


def tournament_chunks(
    n_prompts: int, n_models: int, seed: int = 0, prompts_per_chunk: int = 1000
) -> Iterator[pa.Table]:
    """Per-prompt round robins in both presentation orders, ``prompts_per_chunk`` prompts a table."""
    names, theta = model_names(n_models), strengths(n_models, seed)
    iu, ju = np.triu_indices(n_models, 1)
    iu2, ju2 = np.concatenate([iu, iu]), np.concatenate([ju, ju])
    order = np.repeat(np.array(["AB", "BA"], dtype=object), iu.size)
    bias = np.where(order == "AB", POSITION_BIAS, -POSITION_BIAS)
    for start in range(0, n_prompts, prompts_per_chunk):
        p = min(prompts_per_chunk, n_prompts - start)
        rng = np.random.default_rng([seed, 4, start])
        th = theta[None, :] + rng.normal(0.0, 0.5, (p, n_models))  # the prompt's own strengths
        d = (th[:, iu2] - th[:, ju2] + bias[None, :]).ravel()
        code = _davidson(rng, d)
        winner = np.array(["A", "B", "tie"], dtype=object)[code]
        prompt = np.repeat(np.arange(start, start + p), iu2.size)
        yield pa.table({
            "prompt_id": pa.array(np.char.add("p", prompt.astype(str)).astype(object), pa.string()),
            "model_a": pa.array(np.tile(names[iu2], p), pa.string()),
            "model_b": pa.array(np.tile(names[ju2], p), pa.string()),
            "order": pa.array(np.tile(order, p), pa.string()),
            "winner": pa.array(winner, pa.string()),
            "judge": pa.array(np.full(p * iu2.size, "synthetic-judge", dtype=object), pa.string()),
        })


def write_tables(tables: Iterator[pa.Table], path: Path) -> int:
    """Stream ``tables`` into one Parquet or CSV file (by suffix); returns the row count."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    writer, rows = None, 0
    try:
        for t in tables:
            if writer is None:
                writer = (pq.ParquetWriter(tmp, t.schema, compression="zstd") if path.suffix == ".parquet"
                          else pacsv.CSVWriter(tmp, t.schema))
            writer.write_table(t)
            rows += t.num_rows
    finally:
        if writer is not None:
            writer.close()
    tmp.replace(path)
    return rows


def write(kind: str, path: Path, n: int, n_models: int, seed: int = 0, short_winners: bool = False,
          style: bool = False) -> int:
    """Write an ``arena`` log of ``n`` battles (``style``: with per-side style columns) or a ``tournament``
    set of ``n`` prompts to ``path``."""
    chunks = (arena_chunks(n, n_models, seed, short_winners=short_winners, style=style) if kind == "arena"
              else tournament_chunks(n, n_models, seed))
    return write_tables(chunks, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=["arena", "tournament"])
    ap.add_argument("path", type=Path)
    ap.add_argument("--n", type=int, required=True, help="battles (arena) or prompts (tournament)")
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--short-winners", action="store_true", help="arena winners as A/B/tie instead of model_a/…"
    )
    ap.add_argument("--style", action="store_true",
                    help="arena: with per-side style columns tokens_a ... bold_b")
    a = ap.parse_args()
    print(write(a.kind, a.path, a.n, a.models, a.seed, a.short_winners, a.style), "rows written to", a.path)


if __name__ == "__main__":
    main()
