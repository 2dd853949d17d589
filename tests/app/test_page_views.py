"""engine.views.truncation_view, engine.views.exports and engine.views.dataview against independent
computations:
the μ curve against engine.experiments.curves.mu_curve and select_keep_k, the protocol summary against the
run_protocols rows, the results ZIP read back with pandas, the refusal wording."""

from __future__ import annotations

import io
import itertools
import json
import zipfile

import numpy as np
import pandas as pd
import pytest

from engine.experiments.curves import DEFAULT_MU_GRID
from engine.graphs.cycles import cycle_counts
from engine.graphs.stack import build_stack
from engine.graphs.truncation import select_keep_k, truncation_scores
from engine.views.appstate import app_leaderboard
from engine.views.dataview import SKIP_LABEL, datasets_view, refusal_message
from engine.views.exports import csv_bytes, leaderboard_json, results_zip
from engine.views.truncation_view import best_k, default_keep_k, keep_k_view, mu_view, protocol_view
from engine.views.viz import cycle_overview, judge_overview


def _verdicts(seed: int, n_prompts: int = 24, judges=("j",)) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    models = [f"m{i}" for i in range(6)]
    rows = []
    for judge in judges:
        for p in range(n_prompts):
            for a, b in itertools.combinations(models, 2):
                # m0 strongest ... m5 weakest, with noise: the graphs carry bad triads
                pa = 0.5 + 0.08 * (int(b[1]) - int(a[1]))
                w = rng.choice(["A", "B", "tie"], p=[0.8 * pa, 0.8 * (1 - pa), 0.2])
                rows.append({"prompt_id": f"p{p}", "model_a": a, "model_b": b, "winner": w, "judge": judge,
                             "category": f"c{p % 3}", "order": "AB" if rng.random() < 0.5 else "BA"})
    df = pd.DataFrame(rows)
    df["dataset"], df["variant"], df["turn"], df["variant_kind"], df["prob_a"] = "d", 0, 1, "original", np.nan
    return df


REF = pd.Series({f"m{i}": 1300.0 - 10 * i for i in range(6)})


def test_default_keep_k_is_half_the_pool():
    assert [default_keep_k(t) for t in (1, 2, 3, 50, 80, 81)] == [1, 1, 2, 25, 40, 40]


def test_mu_view_is_equal_where_the_kept_graphs_are_equal():
    stack = build_stack(_verdicts(0))
    counts = cycle_counts(stack)
    for k in (5, 12, 20):
        view = mu_view(stack, REF, k=k, mus=DEFAULT_MU_GRID, resamples=20, seed=1)
        assert np.allclose(view["mu"], DEFAULT_MU_GRID)
        assert ((view["ci_low"] <= view["mean"]) & (view["mean"] <= view["ci_high"])).all()
        kept = {
            m: frozenset(select_keep_k(truncation_scores(counts, m), stack.keys, k).index) for m in view["mu"]
        }
        for a, b in itertools.combinations(view.itertuples(index=False), 2):
            if kept[a.mu] == kept[b.mu]:  # same graphs, same numbers (common random numbers per graph)
                assert (a.point, a.mean, a.ci_low, a.ci_high) == pytest.approx(
                    (b.point, b.mean, b.ci_low, b.ci_high)
                )
        # the point value is half-tie BT on the kept graphs, distance (1 − ρ)/2 to the reference
        from scipy.stats import spearmanr

        from engine.rankers import rank

        for row in view.iloc[[0, -1]].itertuples(index=False):
            sub = stack.subset(sorted(kept[row.mu]))
            scores = rank(sub, "bt").scores.reindex(REF.index)
            rho = spearmanr(scores.to_numpy(), REF.to_numpy()).statistic
            assert row.point == pytest.approx((1 - rho) / 2, abs=1e-9)


def test_keep_k_view_and_best_k():
    stack = build_stack(_verdicts(1))
    view = keep_k_view(stack, REF, mu=1.0, resamples=10, seed=0)
    assert view["k"].tolist() == list(range(1, stack.T + 1))
    k = best_k(view)
    assert view.loc[view["k"] == k, "mean"].iloc[0] == view["mean"].min()
    assert (view.loc[view["k"] < k, "mean"] > view["mean"].min()).all()
    assert best_k(view, "point") == int(view.loc[view["point"] == view["point"].min(), "k"].min())


def test_protocol_view_summarises_run_protocols():
    from engine.experiments.protocol_runs import run_protocols, table2
    from engine.experiments.protocols import ProtocolParams

    stack = build_stack(_verdicts(2))
    frame = run_protocols(stack, REF, params=ProtocolParams(mu=0.5, resamples=20))
    view = protocol_view(frame).set_index("protocol")
    t2 = table2(frame)
    assert list(view.index) == list(t2.index)
    for col in t2.columns:
        assert (view[col] == t2[col]).all()
    f = frame[(frame["distance"] == "spearman") & (frame["category"] != "macro")]
    for label, g in f.groupby("label"):
        assert view.loc[label, "no spread"] == f"{int(g['degenerate'].sum())} of {len(g)}"
        if g["degenerate"].any():
            assert view.loc[label, "why"] != "—"
    # 8 graphs per category < keep 25: the trunc pools are whole categories, merged into one note
    assert view.loc[t2.index[0], "why"].startswith("pools of 8 graphs < keep 25")


def test_results_zip_reads_back():
    v = _verdicts(3, judges=("j1", "j2"))
    stack = build_stack(v)
    board = app_leaderboard(stack, ranker="bt", keep_k=None, mu=1.0, bootstrap=20, seed=0, reference=REF,
                            reference_note="ref")
    ov = cycle_overview(stack)
    jd = judge_overview(v, stack)
    data = results_zip(board, ov, jd, mu=2.0, about="test run")
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        names = set(zf.namelist())
        assert {"README.txt", "leaderboard.csv", "leaderboard.json", "graphs.csv", "judges_kappa_matrix.csv",
                "judges_agreement.csv", "judges_position_bias.csv", "judges_transitivity.csv"} <= names
        lb = pd.read_csv(zf.open("leaderboard.csv"))
        doc = json.loads(zf.read("leaderboard.json"))
        graphs = pd.read_csv(zf.open("graphs.csv"), dtype={"prompt_id": str})
        kappa = pd.read_csv(zf.open("judges_kappa_matrix.csv")).set_index("judge")
        assert "test run" in zf.read("README.txt").decode()
    assert lb["model"].tolist() == board.table["model"].tolist()
    assert np.allclose(lb["score"], board.table["score"])
    assert doc["params"]["n_graphs"] == stack.T and len(doc["table"]) == stack.n
    s_mu = ov.graphs["c3_bad"] + 2.0 * ov.graphs["c4_bad"]
    assert sorted(graphs["s_mu"], reverse=True) == graphs["s_mu"].tolist() == sorted(s_mu, reverse=True)
    assert "link" not in graphs.columns
    assert np.allclose(kappa.to_numpy(), jd.kappa_matrix.to_numpy(), equal_nan=True)
    assert csv_bytes(board.table) == board.table.to_csv(index=False, lineterminator="\n").encode()
    assert json.loads(leaderboard_json(board))["reference"] == "ref"


def test_refusal_message_names_the_page_checkbox(empty_store):
    from engine.ingest.importer import store_report, validate_file

    bad = b"prompt_id,model_a,model_b,winner\np1,a,b,A\np1,a,a,B\np2,a,c,maybe\np2,b,c,tie\n"
    result = store_report(empty_store, validate_file(bad, "bad.csv", dataset="x"), "x")
    assert result.status == "refused"
    msg = refusal_message(result)
    assert "--skip-invalid" not in msg and SKIP_LABEL in msg
    assert msg.startswith("Nothing was stored: 2 of 4 rows were rejected.") and "other 2" in msg
    only_bad = b"prompt_id,model_a,model_b,winner\np1,a,a,B\n"
    result = store_report(empty_store, validate_file(only_bad, "b.csv", dataset="y"), "y")
    assert refusal_message(result) == "Nothing was stored: the file has no valid row."


@pytest.mark.parametrize("desc", [None, ""])
def test_datasets_view_shows_a_dash_for_missing_text(desc):
    frame = pd.DataFrame({"name": ["a"], "description": [desc], "source": ["s"], "version": [3]})
    out = datasets_view(frame)
    assert out.loc[0, "description"] == "—" and out.loc[0, "source"] == "s"
    assert out.columns[0] == "name"
