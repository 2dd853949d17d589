"""The Cycles page's figures are made once per content (app_pages._cycles_figures, st.cache_resource): the
same matrices again give the same figure object, any changed value, label or selection gives a new one with
its own numbers (never a stale figure), and a cached figure's spec is the spec a fresh build gives."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import plotly.io
import pytest


@pytest.fixture
def figures():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bare mode: no script run context (Streamlit warns, caches work)
        from app_pages import _cycles_figures as f
        for fn in (f.matrix_figure, f.observed_predicted_figure, f.histogram_figure):
            fn.clear()
        yield f
        for fn in (f.matrix_figure, f.observed_predicted_figure, f.histogram_figure):
            fn.clear()


def _share(models, seed):
    rng = np.random.default_rng(seed)
    z = rng.random((len(models), len(models)))
    np.fill_diagonal(z, np.nan)
    return pd.DataFrame(z, index=models, columns=models)


def _spec(fig) -> dict:
    return json.loads(plotly.io.to_json(fig, validate=False))


def test_the_same_matrices_give_the_same_figure_and_a_change_a_new_one(figures):
    models = ["m1", "m2", "m3", "m4"]
    observed, predicted = _share(models, 1), _share(models, 2)
    first = figures.observed_predicted_figure(observed, predicted)
    again = figures.observed_predicted_figure(observed.copy(), predicted.copy())  # equal content, new frames
    assert again is first
    fresh = _spec(first)
    figures.observed_predicted_figure.clear()
    assert _spec(figures.observed_predicted_figure(observed, predicted)) == fresh  # what a new build gives
    changed = observed.copy()
    changed.iloc[0, 1] = 0.123456
    other = figures.observed_predicted_figure(changed, predicted)
    assert other is not first and other.data[0].z[0][1] == pytest.approx(0.123456)
    renamed = figures.observed_predicted_figure(observed.set_axis(["a", "b", "c", "d"], axis=0)
                                                .set_axis(["a", "b", "c", "d"], axis=1), predicted)
    assert renamed is not first and "a" in renamed.layout.yaxis.ticktext


def test_heatmaps_and_histograms_are_keyed_by_every_input(figures):
    frame = _share(["x", "y", "z"], 3)
    a = figures.matrix_figure(frame, "Battles per pair", "battles", ".0f", "Blues", None)
    assert figures.matrix_figure(frame.copy(), "Battles per pair", "battles", ".0f", "Blues", None) is a
    for args in (("Bad triads per pair", "battles", ".0f", "Blues", None),
                 ("Battles per pair", "battles", ".2f", "Blues", None),
                 ("Battles per pair", "battles", ".0f", "Reds", None),
                 ("Battles per pair", "battles", ".0f", "Blues", 1.0)):
        assert figures.matrix_figure(frame, *args) is not a, args
    k, n = np.arange(4), np.array([3, 0, 2, 1])
    fit = pd.DataFrame({"k": k, "expected": [2.5, 1.5, 1.0, 0.5]})
    h = figures.histogram_figure("c3_bad", k, n, fit)
    assert figures.histogram_figure("c3_bad", k.copy(), n.copy(), fit.copy()) is h
    assert figures.histogram_figure("c4_bad", k, n, fit) is not h
    bare = figures.histogram_figure("c3_bad", k, n, None)
    assert bare is not h and len(_spec(bare)["data"]) == 1 and len(_spec(h)["data"]) == 2
    moved = figures.histogram_figure("c3_bad", k, np.array([3, 1, 2, 1]), fit)
    assert list(moved.data[0].y) == [3, 1, 2, 1]


@pytest.mark.parametrize("models", [["gpt-4", "claude-v1", "gpt-3.5-turbo", "vicuna-13b-v1.3"],
                                    ["a", "b", "c"]])
def test_the_figures_set_column_labels_at_the_geometrys_angle_and_wrap_a_long_title(figures, models):
    """Both heatmap figures draw their column labels at ``heatmap_geometry``'s angle (upright for names wider
    than their column, across for short ones), and a title longer than a narrow figure is wrapped with the
    figure grown by its extra lines."""
    from engine.views.matrix_view import MAX_PLOT_PX, heatmap_geometry, wrapped_title

    share = _share(models, 1)
    title = "Share of graphs where the model is on a bad triad, per category"
    one = _spec(figures.matrix_figure(share, title, "share", ".2f"))
    geo = heatmap_geometry(models, models)
    assert one["layout"]["xaxis"]["tickangle"] == geo.x_angle
    text, lines = wrapped_title(title, geo.width_px)
    assert one["layout"]["title"]["text"] == text and lines > 1
    assert one["layout"]["height"] - geo.height_px == one["layout"]["margin"]["t"] - 40 > 0
    pair = _spec(figures.observed_predicted_figure(share, share))
    half = heatmap_geometry(models, models, max_plot_px=MAX_PLOT_PX // 2 - 20)
    assert {pair["layout"][k]["tickangle"] for k in ("xaxis", "xaxis2")} == {half.x_angle}
