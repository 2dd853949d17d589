"""The style-controlled leaderboard as the Leaderboard page shows it (LMArena's arrangement): the
controlled score with its interval and rank, the plain board's rank and the change, then beta per style
feature with its interval, and the words for the interval method. The engine's board
(``engine.ranking.style_board``) keeps the numbers; this module only derives display columns."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.ranking.board import Leaderboard
from engine.views.leaderboard_view import on_scale, score_digits

FEATURE_WORDS = {
    "tokens": "answer tokens",
    "headers": "markdown headers",
    "lists": "list items",
    "bold": "bold spans",
}


@dataclass(frozen=True)
class StyleView:
    """``frame``: rank, model, score, interval, rank_ub, rank_plain, rank_change (as +k / -k / 0), votes;
    ``betas``: feature, beta, ci_low, ci_high; ``ci_words``: how the intervals were made; ``notes``."""

    frame: pd.DataFrame
    betas: pd.DataFrame
    ci_words: str
    score_label: str
    notes: tuple[str, ...]
    digits: int = 3


def change_text(change) -> str:
    """A rank change as the page shows it: +2 (two places higher under style control), -1, 0."""
    k = int(change)
    return f"+{k}" if k > 0 else str(k)


def style_view(board: Leaderboard, *, ranker: str, elo_scale: bool = False) -> StyleView:
    """The display frames of a style-controlled board (``board.params["style"]``)."""
    p = board.params
    t = on_scale(board.table, ranker, elo_scale)
    digits = score_digits(t["score"])
    plus = (t["ci_high"] - t["score"]).clip(lower=0)
    minus = (t["score"] - t["ci_low"]).clip(lower=0)
    interval = ["—" if pd.isna(a) or pd.isna(b) else f"+{a:.{digits}f} / -{b:.{digits}f}"
                for a, b in zip(plus, minus, strict=True)]
    frame = pd.DataFrame({
        "rank": t["rank"].astype(np.int64), "model": t["model"], "score": t["score"].round(digits),
        "interval": interval,
        # LMArena's rank (UB) of the controlled intervals, as the CLI's CSV / JSON / table carry it
        **({"rank_ub": t["rank_ub"].astype("Int64")} if "rank_ub" in t else {}),
        "rank_plain": t["rank_plain"].astype(np.int64),
        "rank_change": [change_text(c) for c in t["rank_change"]], "votes": t["votes"],
    })
    st = p["style"]
    betas = pd.DataFrame([{"feature": FEATURE_WORDS.get(f, f), "beta": v["beta"], "ci_low": v["ci_low"],
                           "ci_high": v["ci_high"]} for f, v in st["features"].items()])
    level = f"{p.get('level', 0.95):.0%}"
    if p.get("ci_method") == "sandwich":
        ci_words = (f"{level} sandwich intervals (H^-1 G H^-1 of the fit, score -/+ z x standard error; "
                    "LMArena's default)")
    else:
        ci_words = f"{level} bootstrap intervals ({p.get('bootstrap')} resamples of the votes, each refitted)"
    score_label = ("Elo-like controlled score (400·log10 units, mean 1000)" if elo_scale
                   else f"controlled {ranker} score")
    notes = []
    if st.get("n_votes_without_features"):
        total = st["n_votes_fit"] + st["n_votes_without_features"]
        notes.append(f"{st['n_votes_without_features']:,} of {total:,} votes carry no style features and are "
                     "left out of both boards compared here.")
    if not st.get("converged", True):
        notes.append("The style-controlled fit did not converge; treat its numbers with care.")
    return StyleView(frame, betas, ci_words, score_label, tuple(notes), digits)
