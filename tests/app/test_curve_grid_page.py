"""The Truncation page draws, after slider moves, the sensitivity curves made from scratch, whether a move
made its curve, found it made by the curve grid's warming thread, or waited for it
(``engine.views.curve_grid``; the engine side is tests/test_curve_grid.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from apphelpers import assert_clean, new_app
from curve_svg_read import page_curves, read_curve, read_setting
from stall_watch import watched_join

from engine.experiments.curves import DEFAULT_MU_GRID
from engine.graphs.buckets import build_buckets
from engine.graphs.stack import GRAPH_COLUMNS
from engine.ranking.reference import reference_for
from engine.views.truncation_view import MU_STEPS, keep_k_view, mu_view


def test_the_page_draws_the_curves_made_from_scratch_after_moves(shipped_db, monkeypatch):
    """The Truncation page (AppTest, vicuna80 gpt-4): after a μ move (its keep-K curve made then; the
    first move starts the warming) and two keep-K moves whose μ curves the warming thread has made, both
    SVG curves are the ones drawn from curves made from scratch (``curve_svg`` of ``keep_k_view`` /
    ``mu_view``), every trace and marker: the numbers the page kept beside its markup (``curve_rows``, on
    the server) bit for bit, and the markup at the digits it shows."""
    from app_pages import _lens
    from app_pages._curve_figure import CURVES_DRAWN, curve_rows, curve_svg, setting_svg
    from engine.views.appstate import CacheKey
    from engine.views.truncation_view import best_k

    at = new_app(shipped_db, monkeypatch, page="app_pages/2_truncation.py",
                 query={"dataset": "vicuna80", "judge": "gpt-4"})
    assert_clean(at)
    with _lens.store_session():
        store = _lens.get_store()
        stack = build_buckets(store.verdicts("vicuna80", columns=GRAPH_COLUMNS, judge="gpt-4")).dense()
        reference = reference_for("vicuna80", None, store)[0]
        grid = _lens.curve_grid_for(CacheKey.of(store, "vicuna80", "gpt-4", None))
    assert not grid.has("mu", at.slider(key="keep_k").value - 1)  # an open page starts no warming
    k_frames: dict[float, pd.DataFrame] = {}  # the keep-K curve from scratch per μ (the K moves keep μ)
    for move in ("mu", "k", "k"):
        if move == "k":
            watched_join(grid, 120)  # the move below finds its μ curve made by the thread
            assert grid.has("mu", at.slider(key="keep_k").value - 1)
            at.slider(key="keep_k").set_value(at.slider(key="keep_k").value - 1).run()
        else:
            mu_now = at.select_slider(key="mu").value
            at.select_slider(key="mu").set_value(MU_STEPS[MU_STEPS.index(mu_now) + 1]).run()
        assert_clean(at)
        k, mu = int(at.slider(key="keep_k").value), float(at.select_slider(key="mu").value)
        if mu not in k_frames:
            k_frames[mu] = keep_k_view(stack, reference, mu=mu, resamples=_lens.CURVE_RESAMPLES,
                                       seed=_lens.SEED)
        k_frame = k_frames[mu]
        mu_frame = mu_view(stack, reference, k=k, mus=DEFAULT_MU_GRID, resamples=_lens.CURVE_RESAMPLES,
                           seed=_lens.SEED)
        charts = page_curves(at)
        overlays = [read_setting(m.value) for m in at.markdown if "curve-setting" in m.value]
        assert len(charts) == 2 and len(overlays) == 2
        for got, over, frame, x, marker, title in (
                (charts[0], overlays[0], k_frame, "k", k, f"distance vs K (μ={mu:g})"),
                (charts[1], overlays[1], mu_frame, "mu", mu, f"distance vs μ (K={k})")):
            # the curve without its setting, and the setting's line drawn over it, the whole curve's own
            whole = read_curve(curve_svg(frame, x, marker, title, "Spearman ρ distance",
                                         best=best_k(k_frame)), curve_rows(frame, x))
            assert got == {**whole, "setting": []}, (move, x)
            # the rows kept on the server are the from-scratch curve's, bit for bit (NaN where it has NaN)
            kept = at.session_state[CURVES_DRAWN][x]
            assert kept.dtype == np.float64 and np.array_equal(kept, curve_rows(frame, x), equal_nan=True)
            assert over == read_setting(setting_svg(frame, x, marker, best=best_k(k_frame))), (move, x)
            assert over["setting"] == whole["setting"] and over["x"] == x, (move, x)
            # ... and its markers carry the from-scratch numbers themselves, every row with a mean
            rows = frame[frame["mean"].notna()]
            assert [m["x"] for m in got["markers"]] == rows[x].astype(float).tolist(), (move, x)
            assert [(m["mean"], m["lo"], m["hi"], m["point"]) for m in got["markers"]] == list(
                rows[["mean", "ci_low", "ci_high", "point"]].itertuples(index=False, name=None)), (move, x)
            assert over["setting"] == [float(marker)] and got["texts"][0] == title, (move, x)
