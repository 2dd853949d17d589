"""The Prompt inspector's prompt menu counts the bad triads of the judge whose graph it draws (issue 25:
with all judges pooled in the sidebar the menu summed every judge's bad triads while the drawing and the
"Bad triads" figure showed one judge's graph). Checked on the shipped vicuna80 against a brute-force count
from the stored verdicts (pandas plurality per pair, every triad enumerated with networkx)."""

from __future__ import annotations

import re

# ruff: noqa: F811 - the fixtures imported from apphelpers are requested by name
from apphelpers import (  # noqa: F401
    app_at,
    assert_clean,
    bad_triads_bruteforce,
    combined_outcomes,
    graph_digraph,
)

LABEL = re.compile(r"^(?P<prompt>[^ ]+) · (?P<bad>\d+) bad triads? · ")


def _brute(verdicts, judge: str) -> dict[str, int]:
    """prompt id -> bad triads summed over ``judge``'s graphs of the prompt (each variant and turn)."""
    pairs = combined_outcomes(verdicts[verdicts["judge"] == judge])
    return {str(p): sum(len(bad_triads_bruteforce(graph_digraph(g)))
                        for _, g in gp.groupby(["variant", "turn"]))
            for p, gp in pairs.groupby("prompt_id")}


def test_the_prompt_menu_counts_the_drawn_judges_bad_triads(app_at, shipped_store):
    at = app_at("app_pages/4_inspector.py")
    assert_clean(at)
    verdicts = shipped_store.verdicts("vicuna80")
    for judge in ("gpt-4", "human"):
        at.selectbox(key="insp_judge").set_value(judge).run()
        assert_clean(at)
        expect = _brute(verdicts, judge)
        menu = at.selectbox(key="insp_prompt")
        shown = {m["prompt"]: int(m["bad"]) for m in map(LABEL.match, menu.options)}
        assert shown == expect, judge  # every prompt the judge judged, each with its own count
        # the drawn graph's figure agrees with the chosen prompt's menu entry (vicuna80: one variant, turn)
        figure = next(m for m in at.metric if m.label == "Bad triads")
        assert int(figure.value) == expect[str(menu.value)]
    # what the old menu showed, the sum over every judge's graphs, differs: the test tells them apart
    per_judge = [_brute(verdicts, j) for j in verdicts["judge"].unique()]
    pooled = {p: sum(b.get(p, 0) for b in per_judge) for p in expect}
    assert pooled != expect
