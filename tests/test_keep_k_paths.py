"""One keep-K: the app's slider (``SliderContext.kept``), the CLI's ``leaderboard --keep-k`` and the
keep-K curve (``keep_k_selections``) keep the same graphs, on vicuna80 and on a generated set where
many graphs tie in S_mu; on the generated set the kept graphs are also checked by a plain sort on
(S_mu, prompt id as a number)."""

from __future__ import annotations

import io
import itertools
import json
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pandas as pd
import pytest

from engine.__main__ import main
from engine.errors import LensError
from engine.experiments.curves import keep_k_selections
from engine.graphs.buckets import build_buckets
from engine.graphs.cycles import cycle_counts
from engine.graphs.stack import build_stack
from engine.store.connection import Store
from engine.views.appstate import SliderContext

KEY = ("judge", "prompt_id", "variant", "turn")


def run(db, *args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main(["--db", str(db), *args])
    return rc, out.getvalue(), err.getvalue()


def key_set(keys: pd.DataFrame) -> set[tuple[str, ...]]:
    return {tuple(str(r[c]) for c in KEY) for _, r in keys.iterrows()}


def selection(db, dataset: str, judge: str):
    """(the app's SliderContext, the curve's stack) of one selection, built once for all its K and μ as
    the app builds its context once (``app_pages/_lens.slider_context``, cached) and moves the sliders
    over it."""
    with Store(db) as store:
        v = store.verdicts(dataset, judge=judge)
    return SliderContext.of(build_buckets(v)), build_stack(v)


def kept_three_ways(db, dataset: str, judge: str, k: int, mu: float, built):
    """(app's kept keys, CLI's kept keys, curve's kept keys, app threshold, CLI threshold); ``built``: the
    selection's ``selection()``."""
    ctx, stack = built
    idx, app_thr = ctx.kept(k, mu)
    app = key_set(ctx.stack.keys.iloc[idx])
    rc, out, err = run(
        db,
        "leaderboard",
        "--dataset",
        dataset,
        "--judge",
        judge,
        "--keep-k",
        str(k),
        "--mu",
        str(mu),
        "--format",
        "json",
    )
    assert rc == 0, err
    obj = json.loads(out)
    cli = key_set(pd.DataFrame(obj["kept"]))
    _, _, _, _, kept_of = keep_k_selections(stack, [k], mu=mu, per_category=False, pool="perturbed")
    curve = key_set(stack.keys.iloc[kept_of[(0, "all")]])
    return app, cli, curve, app_thr, obj["params"]["threshold"], ctx.n_pool


@pytest.mark.parametrize("mu", [0.5, 3.0])
def test_app_cli_and_curve_keep_the_same_vicuna80_graphs(shipped_db, mu):
    n_pool = None
    built = selection(shipped_db, "vicuna80", "gpt-4")
    for k in (1, 7, 12, 40, 80):
        app, cli, curve, app_thr, cli_thr, n_pool = kept_three_ways(shipped_db, "vicuna80", "gpt-4", k, mu,
                                                                    built)
        assert len(app) == k
        assert app == cli == curve, k
        assert app_thr == cli_thr
    assert n_pool == 80


def tied_csv(path) -> pd.DataFrame:
    """One judge, 24 prompts ids 1..24 (so "2" < "10" matters), 5 models per prompt, every pair once: most
    prompts transitive (S_mu = 0, all tied), some with one or two flipped pairs (tied among
    themselves), and prompts 23, 24 comparing two models only (no cycle possible: out of the pool)."""
    rng = np.random.default_rng(7)
    models = ["m1", "m2", "m3", "m4", "m5"]
    rows = []
    for p in range(1, 25):
        pairs = list(itertools.combinations(range(5), 2)) if p <= 22 else [(0, 1)]
        flip = set() if p % 3 else {pairs[int(rng.integers(len(pairs)))]}
        if p % 7 == 0:
            flip |= {pairs[int(rng.integers(len(pairs)))]}
        for i, j in pairs:
            win = "B" if (i, j) in flip else "A"  # the lower-numbered model wins unless flipped
            rows.append({"judge": "j", "prompt_id": str(p), "category": f"c{p % 2}", "model_a": models[i],
                         "model_b": models[j], "winner": win})
    frame = pd.DataFrame(rows)
    frame.to_csv(path, index=False)
    return frame


def test_app_cli_and_curve_keep_the_same_graphs_when_scores_tie(tmp_path):
    csv, db = tmp_path / "tied.csv", tmp_path / "lens.duckdb"
    tied_csv(csv)
    rc, _, err = run(db, "import", "--dataset", "tied", str(csv))
    assert rc == 0, err
    with Store(db) as store:
        v = store.verdicts("tied", judge="j")
    built = selection(db, "tied", "j")
    stack = build_stack(v)
    counts = cycle_counts(stack)
    full = stack.keys.assign(pid=stack.keys["prompt_id"].astype(int))
    five = full["pid"] <= 22  # every pair of 5 models: coverage 1, so the score is S_mu as counted
    for mu in (0.0, 1.0, 2.5):
        s = counts["c3_bad"].to_numpy() + mu * counts["c4_bad"].to_numpy()
        assert pd.Series(s[five.to_numpy()]).duplicated().sum() >= 15  # many ties to break
        by_hand = full[five].assign(s=s[five.to_numpy()]).sort_values(["s", "pid"])
        for k in (1, 4, 10, 17, 22):
            app, cli, curve, app_thr, cli_thr, n_pool = kept_three_ways(db, "tied", "j", k, mu, built)
            assert n_pool == 22
            assert app == cli == curve, (mu, k)
            assert app == key_set(by_hand.head(k))
            assert app_thr == cli_thr == float(by_hand["s"].iloc[k - 1])
    ctx = SliderContext.of(build_buckets(v))
    with pytest.raises(LensError, match="between 1 and the pool size 22"):
        ctx.kept(23, 1.0)  # the slider never offers more than the pool
