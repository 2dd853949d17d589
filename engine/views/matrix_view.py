"""Model × model matrices (LMArena's win-fraction and battle-count heatmaps, the win probabilities the
ranker's fit predicts, plus this project's bad triads per pair), ordered by the current ranking, and the
heatmap geometry that keeps them readable from 5 to 200 models.

A pair never compared is NaN in every matrix (drawn grey, "not compared" on hover), never 0: a
white "0 bad triads" cell for a pair that was never judged made sparsely compared models look more
consistent than they are. Pages draw; this module computes the numbers and the sizes.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from engine.graphs.stack import GraphStack

NOT_COMPARED = "not compared"
"""Hover text of a cell whose two models never met in the selection."""

MIN_FONT_PX = 9
"""Smallest tick label drawn; below this a label is not legible on a normal screen."""

LINE_FACTOR = 1.25
"""Shown labels are at least this many font sizes apart (no overlap, one line of text each)."""

MAX_PLOT_PX = 520
"""The matrix area never grows past this: with its labels (up to 220 px) and colour bar it fits the
main column beside the sidebar at 1280 px (about 750 px)."""

KINDS = {
    "win fraction": "Share of the row model's battles against the column model that it won (ties count "
                    "half).",
    "battles": "Pairs judged between the two models, summed over graphs (one per pair and graph).",
    "bad triads": "Bad triads containing the pair, summed over graphs.",
}
"""The three matrices of the verdicts and what a cell holds."""

LABEL_EM = 0.62
"""A tick label character's width as a share of its font size: an upper bound for the lower-case letters,
digits and punctuation of model names in Plotly's default sans-serif (``label_px`` widens the rest)."""
WIDE_EM = {"M": 0.95, "W": 0.95, "@": 0.95, "%": 0.95, "m": 0.95, "w": 0.8}
"""Characters wider than ``LABEL_EM`` (``label_px``); a wide East Asian character counts 1 em."""


def label_px(text: str, font_px: float) -> float:
    """An upper bound of the width a tick label takes at ``font_px``: ``LABEL_EM`` a character, ``WIDE_EM``
    for the wide Latin letters and signs, 1 em for a wide or fullwidth East Asian character. What the heatmap
    margins and the column labels' angle are sized by: a label wider than its column goes upright."""
    import unicodedata

    return font_px * sum(1.0 if unicodedata.east_asian_width(ch) in "WF" else WIDE_EM.get(ch, LABEL_EM)
                         for ch in str(text))
TITLE_EM = 0.6
"""The same for a title's characters."""

PREDICTED = "predicted"
"""The kind of the matrix the ranker's fit predicts (``PairMatrices.predicted``)."""

PREDICTED_HELP = (
    "Share of the row model's battles against the column model that the ranker's fit expects it to win "
    "(ties count half), for every pair, compared or not: where it departs from the win fraction, the fit "
    "does not explain the pair (a cycle, or a matchup that favours one model more than their strengths say)."
)

PREDICTED_MODELS_MAX = 1000
"""Most models ``predicted_pairs`` lists: one row per ordered pair, so 999,000 rows at this limit."""


@dataclass(frozen=True)
class PairMatrices:
    """``win_fraction``, ``battles`` and ``bad_triads``: model × model frames in ranking order,
    NaN where the two models were never compared (and on the diagonal). ``predicted``: the win
    probabilities of the ranker's fit for every pair (NaN on the diagonal and for a model the fit did
    not rank), None when the ranker predicts none; ``predicted_note`` says what it is or why there is
    none."""

    models: tuple[str, ...]
    win_fraction: pd.DataFrame
    battles: pd.DataFrame
    bad_triads: pd.DataFrame
    predicted: pd.DataFrame | None = None
    predicted_note: str = ""

    @property
    def kinds(self) -> dict[str, str]:
        """The matrices there are (``KINDS``, and ``PREDICTED`` when the fit predicts) and their help."""
        return {**KINDS, PREDICTED: PREDICTED_HELP} if self.predicted is not None else dict(KINDS)

    def get(self, kind: str) -> pd.DataFrame:
        """The matrix named by a key of ``kinds``."""
        frames = {"win fraction": self.win_fraction, "battles": self.battles, "bad triads": self.bad_triads}
        if self.predicted is not None:
            frames[PREDICTED] = self.predicted
        return frames[kind]


def predicted_win_matrix(board) -> tuple[pd.DataFrame | None, str]:
    """(model × model win probabilities of the ranker's fit in the board's order, or None; what they are,
    or why there are none) for a leaderboard (``engine.ranking.board.Leaderboard`` or the app's board:
    a ``table`` with model and score, ``params`` with ranker, ranker_params and ranker_details). The
    ranker's object computes them (``Ranker.win_probabilities``) from the fitted scores, so any model
    whose scores are BT ratings (a style-controlled fit: the prediction at zero style difference) can
    answer through its own object."""
    from engine.rankers import ranker_object

    p = board.params
    ranker = str(p["ranker"])
    models = board.table["model"].astype(str).tolist()
    scores = board.table["score"].to_numpy(np.float64)
    out = ranker_object(ranker).win_probabilities(scores, dict(p.get("ranker_details") or {}),
                                                  dict(p.get("ranker_params") or {}))
    if out is None:
        return None, (f"The {ranker} ranker's score is not a model of who wins, so it predicts no win "
                      "probability; Bradley-Terry, Davidson and Elo do.")
    probs, words = out
    note = f"Predicted: {words}."
    comps = p.get("components")
    if comps:
        note += (" The comparison graph has several components; between two of them the prediction rests on "
                 "the regularisation alone, as their scores do.")
    return pd.DataFrame(probs, index=models, columns=models), note


def predicted_pairs(stack, board) -> pd.DataFrame:
    """The fit's predicted win probabilities beside the observed win fractions, one row per ordered pair
    of the board's models in its order: model_a, model_b, predicted (``predicted_win_matrix``: model_a's
    expected share against model_b), win_fraction ((W + T/2) / battles of model_a against model_b in
    ``stack``'s graphs, as the Cycles page's matrix; NaN where never compared), battles (0 there). Refuses
    (LensError, one sentence) a ranker without a prediction, and beyond ``PREDICTED_MODELS_MAX`` models
    before any model × model array is built."""
    from engine.errors import LensError

    check_predicted_size(max(len(board.table), len(stack.models)))
    predicted, note = predicted_win_matrix(board)
    if predicted is None:
        raise LensError(note)
    names = list(predicted.index)
    frac, games = observed_matrices(stack)
    pos = pd.Index(list(stack.models)).get_indexer(names)
    frac, games = frac[np.ix_(pos, pos)], games[np.ix_(pos, pos)]
    i, j = np.nonzero(~np.eye(len(names), dtype=bool))
    label = np.asarray(names, dtype=object)
    return pd.DataFrame({
        "model_a": label[i], "model_b": label[j], "predicted": predicted.to_numpy(np.float64)[i, j],
        "win_fraction": frac[i, j], "battles": games[i, j].astype(np.int64),
    })


def check_predicted_size(n: int) -> None:
    """Refuse, in one sentence, a predicted table of more than ``PREDICTED_MODELS_MAX`` models (asked before
    the fit, so the refusal costs nothing)."""
    from engine.errors import LensError

    if n > PREDICTED_MODELS_MAX:
        raise LensError(
            f"The predicted table has one row per ordered pair of models: {n:,} models make {n * (n - 1):,} "
            f"rows, above the limit of {PREDICTED_MODELS_MAX:,} models; select fewer models (--judge)."
        )


def observed_matrices(stack) -> tuple[np.ndarray, np.ndarray]:
    """(win fraction (W + T/2) / battles, NaN where never compared and on the diagonal; battles) per
    ordered pair of ``stack``'s models (a ``GraphStack`` or ``GraphBuckets``: each pair counts once per
    graph), in stack model order."""
    return observed_matrices_from(*stack.win_tie_matrices())


def observed_matrices_from(W, T) -> tuple[np.ndarray, np.ndarray]:
    """``observed_matrices`` from the (n, n) counts W (graphs where i beat j) and T (graphs where they
    tied)."""
    W, T = np.asarray(W, dtype=np.float64), np.asarray(T, dtype=np.float64)
    games = W + W.T + T
    met = games > 0
    np.fill_diagonal(met, False)
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(met, (W + 0.5 * T) / games, np.nan)
    return frac, games


def pair_matrices(stack: GraphStack, order, bad_per_pair=None, board=None) -> PairMatrices:
    """The three matrices of ``stack`` with rows and columns in ``order`` (the ranking; models of the
    stack not in it go last by name), and with ``board`` (the leaderboard the order came from) the
    win probabilities its fit predicts (``predicted_win_matrix``). ``bad_per_pair``: (n, n) bad triads
    per pair summed over graphs in stack model order (``engine.graphs.cycles.pair_cycle_counts``),
    computed here when not given (a ``GraphStack``; pass it for ``GraphBuckets``)."""
    if bad_per_pair is None:
        from engine.graphs.cycles import pair_cycle_counts

        bad_per_pair = pair_cycle_counts(stack.adj)["c3_bad"].sum(axis=0)
    W, T = stack.win_tie_matrices()
    return pair_matrices_from(list(stack.models), W, T, order, bad_per_pair, board)


def pair_matrices_from(models: list[str], W, T, order, bad_per_pair, board=None) -> PairMatrices:
    """``pair_matrices`` from the (n, n) graph counts in ``models`` order: W (graphs where i beat j), T
    (graphs where they tied) and the bad triads per pair; what the Cycles page builds from SQL counts
    (``engine.views.cycles_view.selection_win_ties``) without the graphs."""
    first = [m for m in order if m in set(models)]
    names = first + sorted(m for m in models if m not in set(first))
    frac, games = observed_matrices_from(W, T)
    bad = np.asarray(bad_per_pair, dtype=np.float64)
    met = games > 0
    np.fill_diagonal(met, False)
    pos = {m: i for i, m in enumerate(models)}
    idx = [pos[m] for m in names]

    def frame(a: np.ndarray) -> pd.DataFrame:
        a = np.where(met, a, np.nan)[np.ix_(idx, idx)]
        return pd.DataFrame(a, index=names, columns=names)

    predicted, note = (None, "") if board is None else predicted_win_matrix(board)
    if predicted is not None:
        predicted = predicted.reindex(index=names, columns=names)
    return PairMatrices(tuple(names), frame(frac), frame(games), frame(bad), predicted, note)


def select_models(order, top_n: int, extra=()) -> list[str]:
    """The first ``top_n`` models of the ranking plus the ``extra`` ones searched for, in ranking order."""
    order = list(order)
    keep = set(order[: max(0, int(top_n))]) | set(extra)
    return [m for m in order if m in keep]


def hover_text(frame: pd.DataFrame, fmt: str) -> list[list[str]]:
    """Per cell: "row vs column: value" with ``fmt`` (e.g. ``".2f"``), or "…: not compared" where the
    value is NaN; names escaped for plotly (``engine.views.viz.plot_labels``)."""
    from engine.views.viz import plot_labels

    rows, cols = plot_labels(frame.index), plot_labels(frame.columns)
    return [[f"{r} vs {c}: " + (NOT_COMPARED if pd.isna(v) else format(float(v), fmt))
             for c, v in zip(cols, values, strict=True)]
            for r, values in zip(rows, frame.to_numpy(), strict=True)]


@dataclass(frozen=True)
class HeatmapGeometry:
    """Pixel sizes of a heatmap: cell edge, plot width/height (including label margins), tick font
    size, which labels are shown (every ``x_step``-th column, ``y_step``-th row) and the column labels'
    angle (``x_angle``: 0, across, only where the longest shown one fits its column; else -90, upright)."""

    cell_px: float
    width_px: int
    height_px: int
    font_px: int
    x_step: int
    y_step: int
    left_px: int
    bottom_px: int
    x_angle: int = -90

    def ticks(self, labels, axis: str) -> tuple[list[int], list[str]]:
        """(tick positions, tick labels) of the shown labels along ``axis`` ('x' or 'y')."""
        step = self.x_step if axis == "x" else self.y_step
        labels = list(labels)
        pos = list(range(0, len(labels), step))
        return pos, [labels[i] for i in pos]


def heatmap_geometry(row_labels, col_labels, max_plot_px: int = MAX_PLOT_PX) -> HeatmapGeometry:
    """Square cells of 28 px for a few models, shrinking as models are added so the matrix stays
    within ``max_plot_px``; tick labels keep at least ``MIN_FONT_PX`` and are thinned (every k-th)
    so shown labels are ``LINE_FACTOR`` font sizes apart. Margins fit the longest shown label."""
    rows, cols = list(row_labels), list(col_labels)
    n = max(len(rows), len(cols), 1)
    cell = min(28.0, max_plot_px / n)
    font = int(max(MIN_FONT_PX, min(12, math.floor(cell * 0.8))))
    step = max(1, math.ceil(LINE_FACTOR * font / cell))
    longest_y = max((label_px(s, font) for s in rows[::step]), default=font)
    longest_x = max((label_px(s, font) for s in cols[::step]), default=font)
    left = int(min(220, 12 + longest_y))
    # column labels across only where the longest fits its column (with 4 px to spare), else upright (-90°):
    # across, six names such as "vicuna-13b-v1.3" in 28 px columns ran into each other
    across = longest_x + 4 <= cell * step
    bottom = int(12 + font) if across else int(min(220, 12 + longest_x))
    width = int(left + cell * len(cols) + 110)  # + the colour bar
    height = int(50 + cell * len(rows) + bottom)
    return HeatmapGeometry(cell, width, height, font, step, step, left, bottom, 0 if across else -90)


TITLE_PX = 14
"""The heatmaps' title font size (px)."""


def wrapped_title(title: str, width_px: int, font_px: int = TITLE_PX) -> tuple[str, int]:
    """``title`` broken at spaces (Plotly's ``<br>``) into lines that fit ``width_px`` at ``font_px``
    (``TITLE_EM`` of the font size a character, an upper bound of the heatmaps' font), and the number of
    lines: a figure as narrow as a few models' matrix cut a one-line title at its right edge."""
    per_line = max(12, int((width_px - 20) / (TITLE_EM * font_px)))
    lines = textwrap.wrap(title, per_line, break_long_words=False, break_on_hyphens=False) or [""]
    return "<br>".join(lines), len(lines)
