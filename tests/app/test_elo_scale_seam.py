"""The Elo-like scale (1000 + 400·log10 units) is one computation, ``engine.rankers.elo_scale.to_elo_scale``:
the Leaderboard page's toggle and the CLI's ``--param scale=elo`` show the same scores and intervals on the
same board. Before issue 24 the CLI printed 400·log10 units around 0 (no +1000) while the page centred them
on 1000, so this test failed by exactly 1000 on every score."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from apphelpers import assert_clean, judge_of, new_app
from conftest import run_engine


def test_the_page_toggle_and_the_cli_scale_elo_show_the_same_numbers(shipped_db, monkeypatch):
    from app_pages._lens import B_DEFAULT, SEED

    at = new_app(shipped_db, monkeypatch)
    assert_clean(at) and judge_of(at) is None
    at.toggle(key="lb_elo").set_value(True).run()
    assert_clean(at)
    page = at.dataframe[0].value.set_index("model")

    out = run_engine(["--db", str(shipped_db), "leaderboard", "--param", "scale=elo", "--bootstrap",
                      str(B_DEFAULT), "--seed", str(SEED), "--format", "json"])
    assert out.returncode == 0, out.stderr
    cli = pd.DataFrame(json.loads(out.stdout)["table"]).set_index("model").loc[page.index]
    np.testing.assert_allclose(page["score"].to_numpy(float), cli["score"].to_numpy(float), atol=1e-6)
    assert abs(cli["score"].mean() - 1000.0) < 1e-6  # log strengths are mean-centred: the mean model at 1000
    # the interval the page prints as +x / -y is the CLI's ci_high - score and score - ci_low
    plus, minus = cli["ci_high"] - cli["score"], cli["score"] - cli["ci_low"]
    assert page["interval"].tolist() == [f"+{p:.1f} / -{m:.1f}" for p, m in zip(plus, minus, strict=True)]
    assert page["rank_ub"].tolist() == cli["rank_ub"].tolist()
