"""The Cycles page shows the win probabilities the ranker's fit predicts beside the observed win fraction:
the right panel is sigma(theta_i - theta_j) of the scores ``leaderboard`` prints for the same selection
(computed here from the CLI's JSON), the left panel the observed shares; a ranker without a model of
outcomes (Copeland) shows the single matrix and says why there is no prediction."""

from __future__ import annotations

import base64
import json

import numpy as np
from apphelpers import assert_clean, judge_of, new_app, unescape_md
from conftest import run_engine


def _z(trace) -> np.ndarray:
    """A heatmap's z from the plotly spec: nested lists, or the typed {dtype, bdata, shape} form."""
    z = trace["z"]
    if isinstance(z, dict) and "bdata" in z:
        a = np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"]))
        return a.reshape([int(k) for k in str(z["shape"]).split(",")])
    return np.array([[np.nan if v is None else v for v in row] for row in z], dtype=np.float64)


def _heatmaps(at) -> list[dict]:
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    return next(s for s in specs if any(t.get("type") == "heatmap" for t in s["data"]))["data"]


def test_cycles_page_shows_the_bt_prediction_beside_the_observed_shares(shipped_db, monkeypatch):
    at = new_app(shipped_db, monkeypatch, "app_pages/3_cycles.py")
    assert_clean(at)
    assert judge_of(at) is None and at.session_state["ranker"] == "bt"
    observed, predicted = _heatmaps(at)[:2]
    out = run_engine(["--db", str(shipped_db), "leaderboard", "--format", "json"])
    table = json.loads(out.stdout)["table"]
    theta = np.array([row["score"] for row in table])
    closed = 1 / (1 + np.exp(theta[None, :] - theta[:, None]))
    np.fill_diagonal(closed, np.nan)
    np.testing.assert_allclose(_z(predicted), closed, atol=1e-9)
    z_obs = _z(observed)
    assert np.isnan(np.diag(z_obs)).all() and np.nanmin(z_obs) >= 0 and np.nanmax(z_obs) <= 1
    captions = " ".join(unescape_md(c.value) for c in at.caption)
    assert "sigma(theta_i - theta_j) of the fitted Bradley-Terry strengths" in captions
    # the predicted kind shows the same pair of panels
    at.segmented_control(key="cycles_matrix").set_value("predicted").run()
    assert_clean(at)
    np.testing.assert_allclose(_z(_heatmaps(at)[1]), closed, atol=1e-9)


def test_a_ranker_without_a_prediction_says_so(shipped_db, monkeypatch):
    at = new_app(shipped_db, monkeypatch, "app_pages/3_cycles.py", {"ranker": "copeland"})
    assert_clean(at)
    assert "predicted" not in at.segmented_control(key="cycles_matrix").options
    assert len([t for t in _heatmaps(at) if t.get("type") == "heatmap"]) == 1
    captions = " ".join(unescape_md(c.value) for c in at.caption)
    assert "copeland ranker's score is not a model of who wins" in captions
