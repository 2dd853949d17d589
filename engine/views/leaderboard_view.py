"""The leaderboard as the field shows it (LMArena-style): LMArena's rank (UB) from the score intervals
beside the ranker's own rank, the score with its interval as +x / -y, votes and prompts per model, an
Elo-like display scale on request, then this project's columns (bad triads, share on a bad triad,
reference rank).

The engine's table (``engine.ranking.leaderboard``) keeps the numbers; this module only derives the
display columns and the notes a reader needs (what rank is shown, small samples, what
"Δ vs reference" compares). Pages render the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from engine.rankers.elo_scale import to_elo_scale
from engine.ranking.board import NOT_ESTIMABLE

if TYPE_CHECKING:
    from engine.graphs.stack import GraphStack

SMALL_GRAPHS = 10
"""Fewer graphs than this in a selection gets a visible small-sample note."""

SMALL_VOTES = 20
"""A model with fewer votes than this is named in a small-sample note: with 20 votes the standard
error of a win rate is at least about 0.1, as large as most gaps between neighbouring models."""

DISPLAY_ORDER = (
    "rank", "model", "score", "interval", "votes", "rank_ub", "n_prompts", "rank_range", "n_graphs_model",
    "wins", "losses", "ties", "win_rate", "bad_triads", "cycle_share", "ref_rank", "ref_diff",
)
"""Most important first: rank, model, score ± interval and votes (what LMArena shows), LMArena's rank (UB)
beside them, then ours."""

MAIN_COLUMNS = ("rank", "model", "score", "interval", "votes")
"""The columns the app always shows, without sideways scroll at 1280 px (tests/test_browser_stress.py)."""

DEFAULT_EXTRA = ("rank_ub", "win_rate", "bad_triads", "ref_rank", "ref_diff")
"""The further columns shown until the reader picks others: they fit beside the main ones at 1280 px."""

NAME_ROOM_GIVE_UP = ("win_rate", "rank_ub")
"""The default columns left out at first, in this order, while the longest model name would be cut beside them
at 1280 px (with the reference columns the names had 194 px: 26-35 characters of the field's names were cut);
both stay under *More columns*."""



def _rank_columns(out: pd.DataFrame, unknown: np.ndarray, level: float | None) -> tuple[pd.DataFrame, str]:
    """(``out`` with ``rank_ub`` (LMArena's rank (UB) of the score intervals, the table's own column,
    else ``engine.ranking.board.rank_upper_bound`` of ci_low / ci_high) and ``rank_range`` (the rank
    interval as text), in the ranker's order (so the score column never rises going down; sorting by
    rank (UB) did not keep it so: a model with a wide interval can have a better rank (UB) than a
    higher-scored one, and on sparse data most models share rank (UB) 1); the sentence that says what
    the rank columns are). Without any score interval there is no rank (UB): the column is left out
    and the ranker's rank stands alone."""
    from engine.ranking.board import rank_upper_bound

    has_ci = "ci_low" in out.columns and "ci_high" in out.columns and (
        bool(out["ci_low"].notna().any()) or bool(unknown.any()))
    if "rank_ub" not in out.columns and has_ci:
        bounds = [out[c].astype("Float64").to_numpy(np.float64, na_value=np.nan)
                  for c in ("ci_low", "ci_high")]
        out["rank_ub"] = rank_upper_bound(*bounds)
    if "rank_ub" not in out.columns or not out["rank_ub"].notna().any():
        out = out.drop(columns=["rank_ub"], errors="ignore").assign(rank_range="—")
        out = out.sort_values(["rank", "model"], kind="stable").reset_index(drop=True)
        return out, ("rank = the ranker's own order of the point scores (no bootstrap, so no score intervals "
                     "and no rank (UB)).")
    out["rank_ub"] = out["rank_ub"].astype("Int64")
    if "rank_low" in out.columns and "rank_high" in out.columns:
        out["rank_range"] = [
            NOT_ESTIMABLE if u else "—" if pd.isna(a) or pd.isna(b) else f"{int(a)}–{int(b)}" if a != b
            else f"{int(a)}" for a, b, u in zip(out["rank_low"], out["rank_high"], unknown, strict=True)]
    pct = f"{level:.0%}" if level else "the"
    note = (f"Rows in the ranker's order of the point scores (rank). rank (UB) = 1 + the number of models "
            f"whose {pct} score interval lies wholly above this model's (their lower bound above its upper "
            "bound), LMArena's rank (UB): the best rank the intervals allow, so models whose intervals "
            "overlap can share it.")
    if unknown.any():
        note += (" A model whose interval is not estimable (the resamples hold no variation for it) could "
                 "lie anywhere: no model counts as wholly above it and it counts above none.")
    out = out.sort_values(["rank", "model"], kind="stable").reset_index(drop=True)
    return out, note


PENDING = "computing…"
"""What an interval cell shows while its bootstrap runs."""


def elo_factor(ranker: str) -> float | None:
    """The factor to 400·log10 units for ``ranker``, or None when its score has no such reading
    (``Ranker.elo_factor``, owned by the ranker's object)."""
    from engine.rankers import ranker_object

    return ranker_object(ranker).elo_factor


def on_scale(table: pd.DataFrame, ranker: str, elo_scale: bool) -> pd.DataFrame:
    """``table`` with score and interval on the Elo-like scale (1000 + 400·log10 units) when asked."""
    if not elo_scale:
        return table
    factor = elo_factor(ranker)
    if factor is None:
        raise ValueError(f"the {ranker} score has no Elo-like reading")
    cols = [c for c in ("score", "ci_low", "ci_high") if c in table.columns]
    return table.assign(**{c: to_elo_scale(table[c].astype(np.float64), factor) for c in cols})


def participation(stack: GraphStack) -> pd.DataFrame:
    """Per model of ``stack``: ``votes`` (compared pairs summed over graphs: one vote per pair and
    graph, the vote unit of a per-prompt tournament) and ``n_prompts`` (distinct prompts of the
    graphs it was compared in). Used when the engine's table does not carry them."""
    obs = np.asarray(stack.observed, dtype=bool)  # (T, n, n)
    n = len(stack.models)
    off = ~np.eye(n, dtype=bool)
    votes = (obs & off[None]).sum(axis=(0, 2))
    present = np.asarray(obs.any(axis=2))  # (T, n)
    prompts = stack.keys["prompt_id"].astype(str).to_numpy()
    n_prompts = [len(set(prompts[present[:, i]])) for i in range(n)]
    return pd.DataFrame({"votes": votes.astype(np.int64), "n_prompts": np.asarray(n_prompts, dtype=np.int64)},
                        index=pd.Index(list(stack.models), name="model"))


def with_participation(table: pd.DataFrame, stack: GraphStack) -> pd.DataFrame:
    """``table`` with ``votes`` and ``n_prompts`` filled from ``stack`` where the engine left them out."""
    missing = [c for c in ("votes", "n_prompts") if c not in table.columns]
    if not missing:
        return table
    part = participation(stack)
    out = table.copy()
    for col in missing:
        out[col] = out["model"].map(part[col]).astype("Int64")
    return out


def _fmt(v: float, digits: int) -> str:
    return f"{v:.{digits}f}"


def score_digits(values) -> int:
    """Decimals that keep a score column short: 1 from 100 up, 2 from 10, else 3."""
    x = np.abs(np.asarray(values, dtype=np.float64))
    top = float(np.nanmax(x)) if x.size and np.isfinite(x).any() else 0.0
    return 1 if top >= 100 else 2 if top >= 10 else 3


@dataclass(frozen=True)
class BoardView:
    """The display table (``DISPLAY_ORDER`` columns present), the score's unit and decimals, what the
    rank column means, and the notes to show above the table."""

    frame: pd.DataFrame
    score_label: str
    digits: int
    rank_note: str
    notes: tuple[str, ...]
    delta_note: str | None


FEW_SHARED = 3
"""Fewer models on the reference than this make its rank distance say little: over 2 models an order is either
the reference's or its reverse (0 or 1), over 1 it is 0 whatever the scores."""


def spearman_value(distances: dict) -> str:
    """The Leaderboard's headline distance to the reference: ``(1 − ρ)/2`` to 3 decimals, with the count of
    models it is over when that count is under ``FEW_SHARED`` (a distance of 0.000 over 2 models read like a
    perfect agreement; audit38)."""
    value = f"{distances['spearman']:.3f}"
    n = int(distances["n_shared"])
    return value if n >= FEW_SHARED else f"{value} ({n} model{'s' if n != 1 else ''})"


def spearman_help(distances: dict) -> str:
    """The help beside ``spearman_value``: what the number is, and the count of models it is over where the
    value does not already name it (the help said "over the 2 models" beside "0.000 (2 models)")."""
    n = int(distances["n_shared"])
    over = f"the {n} models" if n >= FEW_SHARED else "the models"
    return f"(1 − ρ)/2 over {over} on the reference; 0 = same order."


def board_view(table: pd.DataFrame, *, ranker: str, n_graphs: int, elo_scale: bool = False,
               reference_note: str | None = None, level: float | None = 0.95,
               pending: bool = False) -> BoardView:
    """The leaderboard in the field's conventions (see the module docstring) from an app or CLI table
    with at least ``rank, model, score, ci_low, ci_high, rank_low, rank_high``; ``pending``: the table is
    the point board whose bootstrap is still running, so the interval columns say so (never a "—" that
    reads as "no interval")."""
    out = on_scale(table, ranker, elo_scale).copy()
    score_label = "Elo-like score (400·log10 units, mean 1000)" if elo_scale else f"{ranker} score"
    unknown = (out["ci_note"].fillna("") == NOT_ESTIMABLE).to_numpy() if "ci_note" in out.columns else (
        np.zeros(len(out), dtype=bool))
    has_ci = (out["ci_low"].notna().any() if "ci_low" in out.columns else False) or bool(unknown.any())
    digits = score_digits(out["score"])
    if has_ci:
        plus = (out["ci_high"] - out["score"]).clip(lower=0)
        minus = (out["score"] - out["ci_low"]).clip(lower=0)
        out["interval"] = [NOT_ESTIMABLE if u else "—" if pd.isna(p) or pd.isna(m)
                           else f"+{_fmt(p, digits)} / -{_fmt(m, digits)}"
                           for p, m, u in zip(plus, minus, unknown, strict=True)]
    else:
        out["interval"] = "—"
    out, rank_note = _rank_columns(out, unknown, level)
    if pending:
        out["interval"] = PENDING
        out["rank_range"] = PENDING
        rank_note = ("rank = the ranker's own order of the point scores; the 95 % score intervals, the rank "
                     "interval and LMArena's rank (UB) are being computed.")
    notes: list[str] = []
    if n_graphs < SMALL_GRAPHS:
        notes.append(
            f"Small sample: this selection has only {n_graphs} graph(s) (fewer than {SMALL_GRAPHS}); "
            "the order can change with a few more prompts."
        )
    if "votes" in out.columns:
        few = out.loc[out["votes"].astype("Float64") < SMALL_VOTES, "model"].astype(str).tolist()
        if few:
            shown = ", ".join(few[:8]) + (f" and {len(few) - 8} more" if len(few) > 8 else "")
            notes.append(f"Few votes: {shown} {'has' if len(few) == 1 else 'have'} fewer than {SMALL_VOTES} "
                         "votes; treat their places as preliminary.")
    if "component" in out.columns and out["component"].nunique() > 1:
        from engine.ranking.board_notes import components_note

        groups = out.sort_values(["component", "model"]).groupby("component", sort=True)["model"]
        notes.append(components_note([list(g) for _, g in groups]))
    delta_note = None
    if "ref_rank" in out.columns and out["ref_rank"].notna().any():
        n_mapped = int(out["ref_rank"].notna().sum())
        delta_note = (
            f"Δ vs reference = this model's rank among the {n_mapped} models that are on the reference, "
            "minus its rank there (+2: two places lower here). Ranks are counted among those "
            f"{n_mapped} models only, so they can differ from the rank column"
            + (f"; {reference_note}." if reference_note else ".")
        )
    cols = [c for c in DISPLAY_ORDER if c in out.columns]
    return BoardView(out[cols], score_label, digits, rank_note, tuple(notes), delta_note)
