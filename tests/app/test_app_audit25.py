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
