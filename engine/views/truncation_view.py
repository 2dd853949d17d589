"""What the Truncation page shows besides the live leaderboard: the K it opens on, the two
sensitivity curves and the Table-2 protocol summary, as frames the page only draws.

The curves follow paper 000's protocol (half-tie Bradley-Terry on the kept graphs, Spearman
distance to the reference), whatever ranker the sidebar holds, so nothing here depends on it.
Each x carries ``engine.experiments.curves``' numbers: ``mean`` over draws of 80 % of the kept graphs
without replacement (the paper's 25 → 20) with its 95 % interval ``ci_low``/``ci_high``, and the
``point`` estimate from all kept graphs at once. The pool is the selection's originals and
paraphrases (paper 000's Trunc pool; sampling replicates stay out), the same pool the live
leaderboard truncates (``engine.views.appstate.SliderContext``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from engine.experiments.curves import FitCache
    from engine.graphs.stack import GraphStack
    from engine.store.connection import Store
    from engine.store.graph_tally import GraphTally
    from engine.views.appstate import SliderContext

MU_STEPS: list[float] = [float(f"{v:.3g}") for v in np.logspace(-2, 2, 17)]
"""The Truncation page's μ slider steps: 0.01 … 100 at four steps a decade, three significant digits
(the page, its warming grids, their tests and bench/app_roundtrip.py's floor app all step through these)."""

PAPER_KEEP = (25, 50)
"""Paper 000 keeps the 25 graphs of smallest S_mu out of each category's 50 (Table 2)."""

CURVE_DISTANCE = "spearman"
CURVE_COLUMNS = ["mean", "ci_low", "ci_high", "point", "q_low", "q_high", "n_kept", "n_draw"]


def default_keep_k(n_graphs: int) -> int:
    """The K the page opens on: the share of the pool paper 000 keeps (25 of 50, i.e. half)."""
    kept, pool = PAPER_KEEP
    return int(min(max(round(n_graphs * kept / pool), 1), n_graphs))


@dataclass(frozen=True)
class TruncationPool:
    """The page's counts before any slider: ``n_graphs`` (every graph of the selection), ``n_pool`` (the
    graphs keep-K chooses from: originals and paraphrases that can hold a cycle), ``n_no_cycle`` (pool
    graphs left out for holding no cycle); the rest are sampling replicates (``n_replicates``)."""

    n_graphs: int
    n_pool: int
    n_no_cycle: int

    @property
    def n_replicates(self) -> int:
        """Sampling-replicate graphs: never in the pool (paper 000's Trunc pool)."""
        return self.n_graphs - self.n_pool - self.n_no_cycle


def truncation_pool(big: SliderContext | None, tally: GraphTally) -> TruncationPool:
    """The counts ``SliderContext.of(every graph)`` gives, from the context of the selection's graphs of
    three or more models (``engine.views.leaderboard_first.cycle_context``; None when there is none) and
    the whole selection's ``engine.store.graph_tally``: a graph of fewer than three models holds no
    triple, so it is never in the pool and, unless a sampling replicate, counts as holding no cycle. Each
    graph's pool membership depends on its own verdicts, so the big graphs' own counts carry over."""
    from engine.graphs.truncation import is_sample

    if big is not None and big.pool != "perturbed":
        raise ValueError(f"truncation_pool counts the perturbed pool, not {big.pool!r}")
    big_graphs = 0 if big is None else big.stack.T
    big_samples = 0 if big is None else int(is_sample(big.stack.keys).sum())
    small_in_pool = (tally.graphs - big_graphs) - (tally.samples - big_samples)
    return TruncationPool(
        n_graphs=tally.graphs,
        n_pool=0 if big is None else big.n_pool,
        n_no_cycle=(0 if big is None else big.n_no_cycle) + small_in_pool,
    )


def selection_models(store: Store, dataset: str, *, judge: str | None = None,
                     category: str | None = None) -> int:
    """How many models the selection's graphs are built over (``engine.graphs.stack.graph_cells``: every
    name in a valid verdict), counted in SQL: with the tally's graph count, the size of the dense stack
    the sensitivity curves would need, known before a million one-pair graphs are built to refuse it."""
    from engine.store.sql import params

    rel = store.verdict_relation(dataset, judge=judge, category=category, valid_only=True)
    row = store.cursor().execute(
        f"SELECT count(DISTINCT m) FROM (SELECT model_a AS m FROM {rel} UNION ALL SELECT model_b FROM {rel})",
        params(rel),
    ).fetchone()
    return int(row[0]) if row else 0


def _pick(frame: pd.DataFrame, x: str) -> pd.DataFrame:
    f = frame[(frame["distance"] == CURVE_DISTANCE) & (frame["category"] == "all")]
    return f[[x, *[c for c in CURVE_COLUMNS if c in f.columns]]].sort_values(x).reset_index(drop=True)


def no_cycle_text(n_no_cycle: int, n_pool: int) -> str:
    """What the Truncation page says about graphs that cannot hold a cycle: why none can be kept
    when the pool is empty, else how many were left out ('' when none)."""
    if not n_no_cycle:
        return ""
    s = "s" if n_no_cycle != 1 else ""
    if n_pool == 0:
        return (
            f"No graph of this selection can hold a cycle ({n_no_cycle} graph{s}, each with fewer than 3 "
            "models "
            "or no compared triple), so keep-K has no score to keep graphs by."
        )
    return (
        f"{n_no_cycle} graph{s} cannot hold a cycle (fewer than 3 models, or no compared triple) and "
        f"{'are' if s else 'is'} left out of keep-K: a score of 0 there would not be evidence of "
        "consistency. "
        "Scores are scaled by coverage (docs/notes/cycles.md)."
    )


def keep_k_view(stack: GraphStack, reference, *, mu: float, resamples: int, seed: int,
                fits: FitCache | None = None) -> pd.DataFrame:
    """Spearman distance to the reference against K = 1 … T at this μ (columns k and
    ``CURVE_COLUMNS``), from ``engine.experiments.curves.keep_k_curve`` on the perturbed pool; ``fits``: the
    selection's ``FitCache`` (the cells earlier curves fitted, taken as they are)."""
    from engine.experiments.curves import keep_k_curve

    return _pick(keep_k_curve(stack, reference, mu=mu, per_category=False, pool="perturbed",
                              resamples=resamples, seed=seed, fits=fits), "k")


def mu_view(
    stack: GraphStack, reference, *, k: int, mus: Sequence[float], resamples: int, seed: int,
    fits: FitCache | None = None,
) -> pd.DataFrame:
    """Spearman distance against μ at this K (columns mu and ``CURVE_COLUMNS``), from
    ``engine.experiments.curves.mu_curve`` on the perturbed pool (μ values that keep the same graphs get the
    same numbers: its draws are common random numbers per graph); ``fits`` as ``keep_k_view``'s."""
    from engine.experiments.curves import mu_curve

    return _pick(
        mu_curve(
            stack,
            reference,
            [float(m) for m in mus],
            k=int(k),
            per_category=False,
            pool="perturbed",
            resamples=resamples,
            seed=seed,
            fits=fits,
        ),
        "mu",
    )


MIN_Y_SPAN = 0.05
"""Smallest y range of a sensitivity curve (Spearman distance): a flat curve stays a flat line in
a readable band instead of an axis zoomed onto rounding noise."""


def y_range(frame: pd.DataFrame, columns: Sequence[str] = ("ci_low", "ci_high", "mean", "point"),
            min_span: float = MIN_Y_SPAN) -> list[float]:
    """[low, high] for a curve's y axis: the data's range with 5 % padding, widened about its middle
    to at least ``min_span`` (and kept at or above 0 where the data are: a distance is never negative)."""
    # column by column (only the range is read): selecting a sub-frame first copied it on every slider move
    parts = [frame[c].to_numpy(np.float64) for c in columns if c in frame.columns]
    vals = np.concatenate(parts) if parts else np.empty(0)
    vals = vals[np.isfinite(vals)]
    if vals.size == 0:
        return [0.0, min_span]
    lo, hi = float(vals.min()), float(vals.max())
    pad = 0.05 * (hi - lo)
    lo, hi = lo - pad, hi + pad
    if hi - lo < min_span:
        mid = (lo + hi) / 2.0
        lo, hi = mid - min_span / 2.0, mid + min_span / 2.0
    if lo < 0 <= float(vals.min()):
        lo, hi = 0.0, hi - lo
    return [lo, hi]


def format_s_mu(value: float, mu: float) -> str:
    """S_mu = C3_bad + mu·C4_bad as text: a whole number when mu is (then so is S_mu), otherwise three
    significant digits without an exponent (0.0316, 12.6, 1235)."""
    v = float(value)
    if not np.isfinite(v):
        return "—"
    if float(mu).is_integer() or v == 0:
        return f"{round(v):d}" if float(mu).is_integer() else "0"
    decimals = max(0, 2 - int(np.floor(np.log10(abs(v)))))
    return f"{v:.{decimals}f}"


def best_k(curve: pd.DataFrame, column: str = "mean") -> int:
    """The smallest K where the curve (``mean`` by default) is at its minimum (a missing value is never it;
    a curve with no value at all has no such K: ValueError)."""
    values = curve[column].to_numpy(np.float64)
    present = ~np.isnan(values)
    if not present.any():
        raise ValueError(f"the curve has no {column} value: no best K")
    at = np.isclose(values, values[present].min())
    return int(curve["k"][at].min())  # the Series' min: a missing k is never the best one


_POOL = re.compile(r"pool has (\d+) < keep (\d+)")


def _summarise_notes(notes: Sequence[str]) -> str:
    """Category notes of one protocol, each distinct part once; 'pool has n < keep K' merged."""
    parts: list[str] = []
    pools: dict[int, list[int]] = {}
    for note in notes:
        for part in (p.strip() for p in str(note).split(";")):
            m = _POOL.fullmatch(part)
            if m:
                pools.setdefault(int(m.group(2)), []).append(int(m.group(1)))
            elif part and part not in parts:
                parts.append(part)
    merged = []
    for keep, sizes in pools.items():
        lo, hi = min(sizes), max(sizes)
        merged.append(f"pools of {lo}{'' if lo == hi else f'–{hi}'} graphs < keep {keep}")
    return "; ".join(merged + parts)


def protocol_sizes(params, frame: pd.DataFrame | None = None) -> str:
    """The sizes the protocol table runs with, for its caption: each protocol's label from the
    engine params (``engine.experiments.protocols.label``) and, once run (``frame``), the category pools
    truncation chose from."""
    from engine.experiments.protocols import MACRO, PROTOCOLS, label

    names = ", ".join(label(proto, params) for proto in PROTOCOLS)
    if frame is None or frame.empty:
        return names
    trunc = frame[(frame["protocol"] == "trunc") & (frame["category"] != MACRO)]
    pools = trunc.drop_duplicates("category")["n_pool"].dropna().astype(int)
    if pools.empty:
        where = ""
    else:
        lo, hi = int(pools.min()), int(pools.max())
        where = (f"; the {len(pools)} categor{'y' if len(pools) == 1 else 'ies'} here hold "
                 f"{lo}{'' if lo == hi else f'–{hi}'} graphs each to keep {params.keep} from")
    return f"{names}{where}"


def protocol_view(frame: pd.DataFrame, distance: str = "spearman", scale: float = 1000.0) -> pd.DataFrame:
    """``engine.experiments.protocol_runs.run_protocols`` output as the page's table: one row per protocol
    with
    the macro cell and every category's cell (mean ± half-width × ``scale``, as ``table2``), how
    many category cells have no resampling spread, and why (the engine's notes, summarised)."""
    from engine.experiments.protocol_runs import table2
    from engine.experiments.protocols import MACRO

    cells = table2(frame, distance=distance, scale=scale)
    f = frame[frame["distance"] == distance]
    rows = []
    for label in cells.index:
        mine = f[(f["label"] == label) & (f["category"] != MACRO)]
        rows.append({
            "protocol": label,
            "no spread": f"{int(mine['degenerate'].sum())} of {len(mine)}",
            "why": _summarise_notes(mine.loc[mine["degenerate"], "note"].tolist()) or "—",
        })
    side = pd.DataFrame(rows).set_index("protocol")
    cols = [MACRO] + [c for c in cells.columns if c != MACRO]
    out = cells[cols].rename_axis("protocol").join(side)
    return out.reset_index()[["protocol", MACRO, "no spread", "why", *cols[1:]]]
