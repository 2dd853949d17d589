"""Model × model matrices (engine.views.matrix_view) against pandas counts and brute-force bad triads on
the shipped data, and the heatmap geometry's legibility rules from 5 to 200 models."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

# ruff: noqa: F811 - the fixtures imported from apphelpers are requested by name
from apphelpers import app_at, bad_triads_bruteforce, combined_outcomes, graph_digraph  # noqa: F401

from engine.views.matrix_view import (
    LINE_FACTOR,
    MAX_PLOT_PX,
    MIN_FONT_PX,
    NOT_COMPARED,
    heatmap_geometry,
    hover_text,
    pair_matrices,
    select_models,
)


@pytest.fixture
def claude(shipped_store):
    from engine.graphs.stack import build_stack

    verdicts = shipped_store.verdicts("vicuna80", judge="gpt-4")  # claude met 4 of its 8 opponents
    return build_stack(verdicts), combined_outcomes(verdicts)


def test_matrices_match_pandas_counts_and_bruteforce_triads(claude):
    stack, pairs = claude
    order = sorted(stack.models, reverse=True)
    mats = pair_matrices(stack, order)
    assert list(mats.models) == order and list(mats.win_fraction.index) == order
    won = {}
    games = {}
    for lo, hi, out in pairs[["lo", "hi", "outcome"]].itertuples(index=False):
        for a, b in ((lo, hi), (hi, lo)):
            games[a, b] = games.get((a, b), 0) + 1
            credit = 0.5 if out == "tie" else float((out == "lo") == (a == lo))
            won[a, b] = won.get((a, b), 0.0) + credit
    bad = {}
    for _, g in pairs.groupby(["prompt_id", "variant", "turn"]):
        for tri in bad_triads_bruteforce(graph_digraph(g)):
            for a, b in itertools.permutations(tri, 2):
                bad[a, b] = bad.get((a, b), 0) + 1
    n_missing = 0
    for a, b in itertools.permutations(order, 2):
        if (a, b) not in games:
            n_missing += 1
            assert np.isnan(mats.win_fraction.loc[a, b]) and np.isnan(mats.battles.loc[a, b])
            assert np.isnan(mats.bad_triads.loc[a, b])  # not compared, not "0 bad triads"
            continue
        assert mats.battles.loc[a, b] == games[a, b]
        assert mats.win_fraction.loc[a, b] == pytest.approx(won[a, b] / games[a, b])
        assert mats.bad_triads.loc[a, b] == bad.get((a, b), 0)
    assert n_missing > 0 and np.isnan(np.diag(mats.battles.to_numpy())).all()
    text = hover_text(mats.battles, ".0f")
    missing = np.argwhere(mats.battles.isna().to_numpy())
    assert all(text[i][j].endswith(NOT_COMPARED) for i, j in missing)


def test_select_models_keeps_ranking_order():
    order = [f"m{i}" for i in range(10)]
    assert select_models(order, 3, ["m7", "m1"]) == ["m0", "m1", "m2", "m7"]


@pytest.mark.parametrize("n", [5, 9, 20, 40, 70, 100, 200])
def test_geometry_keeps_labels_legible(n):
    names = [f"model-{i:03d}-long-name" for i in range(n)]
    g = heatmap_geometry(names, names)
    assert g.font_px >= MIN_FONT_PX
    assert g.cell_px * g.y_step >= LINE_FACTOR * g.font_px - 1e-9  # shown labels never overlap
    assert g.cell_px * n <= MAX_PLOT_PX + 1e-9
    pos, labels = g.ticks(names, "y")
    assert pos[0] == 0 and labels[0] == names[0] and len(labels) == len(range(0, n, g.y_step))
    if n <= 20:
        assert g.y_step == 1  # every label up to 20 models


def test_geometry_grows_with_n_until_the_cap():
    sizes = [heatmap_geometry(range(n), range(n)).cell_px * n for n in (5, 10, 20, 27, 40, 100, 200)]
    assert sizes == sorted(sizes) and sizes[-1] == pytest.approx(MAX_PLOT_PX)


def test_cycles_page_matrix_is_grey_where_not_compared(app_at):
    import json

    from apphelpers import assert_clean

    at = app_at("app_pages/3_cycles.py", judge="gpt-4")
    assert_clean(at)
    for kind in ("win fraction", "battles", "bad triads"):
        next(b for b in at.get("button_group") if b.key == "cycles_matrix").set_value(kind).run()
        spec = json.loads(at.get("plotly_chart")[0].proto.spec)
        trace = spec["data"][0]
        assert trace["zmin"] == 0 and spec["layout"]["plot_bgcolor"] == "#c3c8d1"
        texts = [t for row in trace["text"] for t in row]
        assert sum(t.endswith(NOT_COMPARED) for t in texts) > 9  # more than the diagonal
    assert pd.Series(texts).str.contains(" vs ").all()


@pytest.mark.parametrize(("names", "angle"), [
    (["gpt-4", "claude-v1", "gpt-3.5-turbo", "vicuna-13b-v1.3", "alpaca-13b", "llama-13b"], -90),  # MT-Bench
    (["a", "b", "c", "d", "e", "f"], 0),
    (["m1", "m2", "m3"], 0),
    ([f"m{i}" for i in range(40)], -90),
    (["MMM", "WWW", "MWM"], -90),  # three wide letters are wider than a 28 px column
    (["模型一", "模型二"], -90),  # three wide East Asian characters, 1 em each
])
def test_column_labels_go_across_only_where_they_fit_their_column(names, angle):
    """Across (0°) only while the longest shown column label, at ``LABEL_EM`` of the font a character, fits
    its column with 4 px to spare; else upright with a bottom margin for the longest. MT-Bench's six model
    names across 28 px columns ran into each other (audit48)."""
    from engine.views.matrix_view import label_px

    g = heatmap_geometry(["row"], names)
    assert g.x_angle == angle
    longest = max(label_px(n, g.font_px) for n in names[:: g.x_step])
    if angle == 0:
        assert longest + 4 <= g.cell_px * g.x_step and g.bottom_px == 12 + g.font_px
    else:
        assert longest + 4 > g.cell_px * g.x_step and g.bottom_px >= min(220, int(12 + longest))


def test_a_long_title_is_wrapped_to_the_figure_and_counts_its_lines():
    from engine.views.matrix_view import TITLE_EM, TITLE_PX, wrapped_title

    title = "Share of graphs where the model is on a bad triad, per category"
    text, lines = wrapped_title(title, 300)
    parts = text.split("<br>")
    assert lines == len(parts) > 1 and " ".join(parts) == title
    assert all(len(p) * TITLE_EM * TITLE_PX <= 300 - 20 for p in parts)
    assert wrapped_title(title, 2000) == (title, 1)
    hyphened = "Bad triads of claude-instant-v1 and gpt-3.5-turbo-0613 per category"
    text, lines = wrapped_title(hyphened, 260)
    assert lines > 1 and " ".join(text.split("<br>")) == hyphened  # broken at spaces only, never a name
