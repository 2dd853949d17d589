"""The issue-25 audit's app findings on the shipped pair counts (docs/notes/audit-25.md)."""

from __future__ import annotations

import pandas as pd
from apphelpers import assert_clean, new_app

from engine.ingest.shipped_counts import ARENA_COUNTS_DATASET, ARENA_COUNTS_FILE


def test_leaderboard_page_on_the_arena_counts_speaks_of_battles(shipped_db, monkeypatch):
    """On the shipped pair counts the Leaderboard said "Every tournament graph ... bootstrap intervals over
    graphs; bad triads ..." (a pair-count dataset has none of them) and showed "Reference: none"."""
    at = new_app(shipped_db, monkeypatch)
    at.selectbox(key="dataset").set_value(ARENA_COUNTS_DATASET).run()
    assert_clean(at)
    captions = " ".join(c.value for c in at.caption)
    assert "pair-count dataset" in captions and "over graphs" not in captions
    labels = {m.label: m.value for m in at.metric}
    assert labels["Battles"].replace(",", "") == str(pd.read_csv(ARENA_COUNTS_FILE)[
        ["wins_a", "wins_b", "ties", "both_bad"]].to_numpy().sum())
    assert "Spearman distance to reference" in labels


def test_data_page_exports_the_arena_counts(shipped_db, monkeypatch):
    """The Data page offered "Download 0 verdicts" for the shipped pair counts, and the file (what
    export_verdicts writes to the download) was refused. Now the label names pair counts and the bytes
    are the shipped file's counts."""
    import io

    from engine.ingest.verdict_export import export_verdicts
    from engine.store.connection import Store

    at = new_app(shipped_db, monkeypatch, "app_pages/6_data.py")
    at.get("button_group")[0].set_value("Export").run()
    at.selectbox(key="export_pick").set_value(ARENA_COUNTS_DATASET).run()
    assert_clean(at)
    button = [b for b in at.get("download_button") if b.proto.id.endswith("export_go")
              or "export_go" in str(b.proto)]
    assert button and "pair counts" in button[0].proto.label
    buffer = io.BytesIO()
    with Store(shipped_db) as store:
        export_verdicts(store, ARENA_COUNTS_DATASET, buffer, fmt="csv")
    cols = ["model_a", "model_b", "wins_a", "wins_b", "ties", "both_bad"]
    got = pd.read_csv(io.BytesIO(buffer.getvalue()))[cols]
    want = pd.read_csv(ARENA_COUNTS_FILE)[cols].sort_values(["model_a", "model_b"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want)
