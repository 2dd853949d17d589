"""Seam: the Leaderboard page's style-controlled board and ``leaderboard --style-control`` (the CLI, a
process) show the same numbers on the same votes: the controlled rank, rank_plain, rank_change, beta per
feature with its interval, and rank (UB), which is the pairwise count of the controlled (sandwich)
intervals the CLI prints, not of the plain board's."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

# ruff: noqa: F811 - the fixtures imported from apphelpers are requested by name
from apphelpers import app, assert_clean, style_board_page  # noqa: F401
from conftest import run_engine
from test_rank_ub_seam import brute_force

FEATURES = ("answer tokens", "markdown headers", "list items", "bold spans")


def test_style_board_on_the_page_equals_the_cli(app, shipped_db):
    """Human judge (models move under style control there), sandwich intervals (the page's default and the
    CLI's under --style-control). Kills: rank (UB) missing from the page's style board or taken from the
    plain board's intervals, rank_change of another board, betas of another fit."""
    at = style_board_page(app)
    frames = [d.value for d in at.dataframe]
    page = next(f for f in frames if "rank_change" in f.columns).set_index("model")
    betas = next(f for f in frames if "beta" in f.columns).set_index("feature")

    res = run_engine(["--db", str(shipped_db), "leaderboard", "--judge", "human", "--style-control",
                      "--format", "json"])
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    cli = pd.DataFrame(out["table"]).set_index("model")
    assert out["params"]["ci_method"] == "sandwich"

    assert list(page.index) == list(cli.index)
    for c in ("rank", "rank_plain", "rank_ub"):
        assert page[c].astype(int).tolist() == cli[c].astype(int).tolist(), c
    assert [int(x) for x in page["rank_change"]] == cli["rank_change"].astype(int).tolist()
    assert cli["rank_ub"].tolist() == brute_force(cli["ci_low"].tolist(), cli["ci_high"].tolist())
    assert (cli["rank_change"] != 0).any()
    feats = out["params"]["style"]["features"]
    for name, words in zip(("tokens", "headers", "lists", "bold"), FEATURES, strict=True):
        for c in ("beta", "ci_low", "ci_high"):
            np.testing.assert_allclose(betas.loc[words, c], feats[name][c], atol=1e-9, err_msg=f"{name} {c}")


def test_baseline_table_under_style_control_equals_the_cli(app, shipped_db):
    """With the style toggle on, the page's win rates against a baseline are those of
    ``leaderboard --baseline M --style-control`` (sandwich intervals, delta method). Kills a page whose
    baseline table ignores the toggle (the plain fit's win rates, bootstrap intervals)."""
    at = style_board_page(app)
    at.selectbox(key="lb_baseline").set_value("gpt35").run()
    assert_clean(at)
    page = next(d.value for d in at.dataframe if "win_rate_pct" in d.value.columns).set_index("model")
    res = run_engine(["--db", str(shipped_db), "leaderboard", "--judge", "human", "--baseline", "gpt35",
                      "--style-control", "--format", "json"])
    assert res.returncode == 0, res.stderr
    cli = pd.DataFrame(json.loads(res.stdout)["table"]).set_index("model")
    rate, low, high = (100.0 * cli[c].astype(float) for c in ("baseline_win_rate", "baseline_ci_low",
                                                                "baseline_ci_high"))
    np.testing.assert_allclose(page["win_rate_pct"].to_numpy(float), rate.loc[page.index].to_numpy(),
                               atol=1e-9)
    want = [f"-{r - lo:.1f} / +{hi - r:.1f}" if m != "gpt35" else ""  # the baseline: no interval
            for m, r, lo, hi in zip(cli.index, rate, low, high, strict=True)]
    assert page["interval"].to_dict() == dict(zip(cli.index, want, strict=True))
