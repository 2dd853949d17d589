"""engine.views.viz: Markdown escaping against a CommonMark parser, the Cycles frames against brute force,
the Judges κ summary against a hand computation, and the small display helpers."""

from __future__ import annotations

import html
import itertools
import re

import numpy as np
import pandas as pd
import pytest
from markdown_it import MarkdownIt

from engine.graphs.stack import build_stack
from engine.views.viz import (
    category_participation,
    cycle_overview,
    dash_missing,
    escape_md,
    graphs_by_score,
    kappa_matrix,
    mean_offdiagonal,
    numbers_as_text,
    plot_labels,
    text_block,
)

PAYLOAD = "<script>window.__xss=1</script><img src=x onerror=window.__xss=1>"
TRICKY = [
    "Assistant 1's answer",
    'she said "fine"',
    ":material/home: icon",
    ":smile: and :+1:",
    "$x$ and $$y$$",
    "**b** and _i_ and ~~s~~",
    "[l](javascript:alert(1))",
    "![img](x.png)",
    PAYLOAD,
    "a & b &amp; &#x27; &lt;",
    "# not a heading",
    "1. not a list",
    "- not a bullet",
    "> not a quote",
    "`code`",
    "back\\slash \\*",
    "|a|b|",
    ":red[colored] :blue-badge[b]",
    "x:y:z",
    "<http://example.com>",
    "100% \t tabs",
]

# Streamlit's Markdown front end (1.67): the source is searched for ":material/" (then rendered as an
# icon) and for an emoji shortcode (then remark-emoji runs); math is detected on the source with
# code spans and the escapes \\, \$ and \` taken out first.
EMOJI_TRIGGER = re.compile(r":(?!material/|streamlit:)[\w+-][\w_+-]*:")
ESCAPES = re.compile(r"\\[\\$`]")
INLINE_MATH = re.compile(r"(?<!\$)\$(?![\s$])[^$\n]*?[^\s$]\$(?!\d)")


@pytest.mark.parametrize("text", TRICKY)
def test_escape_md_renders_exactly_the_text(text):
    md = MarkdownIt("commonmark", {"html": True, "linkify": False}).enable("strikethrough")
    out = escape_md(text)
    rendered = md.renderInline(out)
    # the only markup CommonMark produces is the HTML-escaping of the text itself
    assert html.unescape(rendered) == text
    assert "<" not in rendered and ">" not in rendered.replace("&gt;", "")
    # and Streamlit's own source-level extensions find nothing to turn into icons, emoji or math
    assert ":material/" not in out
    assert EMOJI_TRIGGER.search(out) is None
    assert INLINE_MATH.search(ESCAPES.sub("_", out)) is None


def test_escape_md_adds_no_entities_and_keeps_unicode():
    assert escape_md("Assistant 1's “answer” — ok ✓") == "Assistant 1\\'s “answer” — ok ✓"
    assert "&#" not in escape_md("it's") and "&" not in escape_md("it's")
    assert escape_md(None) == "" and escape_md("two\nlines") == "two lines"


def test_text_block_keeps_line_breaks():
    md = MarkdownIt("commonmark")
    block = text_block("line one\n# not a heading\n<b>x</b>")
    assert block.split("  \n") == [escape_md("line one"), escape_md("# not a heading"), escape_md("<b>x</b>")]
    rendered = md.render(block)
    assert rendered == "<p>line one<br />\n# not a heading<br />\n&lt;b&gt;x&lt;/b&gt;</p>\n"


def _random_verdicts(seed: int, n_models: int = 5, n_prompts: int = 12) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    models = [f"m{i}" for i in range(n_models)]
    rows = []
    for p in range(n_prompts):
        for a, b in itertools.combinations(models, 2):
            if rng.random() < 0.15:
                continue  # an incomplete graph
            rows.append({"prompt_id": str(p), "model_a": a, "model_b": b,
                         "winner": rng.choice(["A", "B", "tie"], p=[0.4, 0.4, 0.2]),
                         "category": "c1" if p % 2 else "c2"})
    df = pd.DataFrame(rows)
    df["dataset"], df["judge"], df["variant"], df["turn"], df["variant_kind"] = "d", "j", 0, 1, "original"
    df["prob_a"] = np.nan
    return df


def test_cycle_overview_matches_bruteforce():
    v = _random_verdicts(3)
    stack = build_stack(v)
    ov = cycle_overview(stack)
    n = stack.n
    pair = np.zeros((n, n), dtype=int)
    on_bad = np.zeros((stack.T, n), dtype=bool)
    for t in range(stack.T):
        a = stack.adj[t]
        for i, j, k in itertools.combinations(range(n), 3):
            bad = False
            for x, y, z in ((i, j, k), (i, k, j)):
                if a[x, y] and a[y, z] and a[z, x] and not (a[y, x] and a[z, y] and a[x, z]):
                    bad = True
            if bad:
                for p, q in ((i, j), (j, k), (i, k)):
                    pair[p, q] += 1
                    pair[q, p] += 1
                on_bad[t, [i, j, k]] = True
    assert (ov.per_pair.to_numpy() == pair).all()
    assert ov.total_bad_triads == pair.sum() // 6
    present = stack.observed.any(axis=2)
    cats = stack.keys["category"].to_numpy()
    for c in ("c1", "c2"):
        sel = cats == c
        expect = (on_bad[sel] & present[sel]).sum(axis=0) / present[sel].sum(axis=0)
        assert np.allclose(ov.category_rates.loc[c].to_numpy(), expect)
    assert category_participation(stack, on_bad.astype(int)).shape == (2, n)
    assert ov.graphs["link"].iloc[0].startswith("prompt-inspector?dataset=d&judge=j&prompt_id=")


def test_graphs_by_score_sorts_like_a_hand_sort():
    graphs = pd.DataFrame({"prompt_id": ["b", "a", "c", "d"], "c3_bad": [1, 2, 0, 2], "c4_bad": [5, 0, 1, 1],
                           "c3": [1, 2, 0, 2], "c4": [5, 0, 1, 1], "c3_tie": 0, "c4_tie": 0})
    out = graphs_by_score(graphs, 0.5)
    s = {"b": 1 + 2.5, "a": 2.0, "c": 0.5, "d": 2.5}
    assert out["prompt_id"].tolist() == sorted(s, key=lambda p: (-s[p], p))
    assert np.allclose(out["s_mu"], [s[p] for p in out["prompt_id"]])


def test_dash_missing():
    t = pd.DataFrame({"ref_rank": pd.array([1, None, 3], dtype="Int64"),
                      "ref_diff": pd.array([0, None, -2], dtype="Int64"), "x": [1.5, np.nan, 2]})
    out = dash_missing(t, ["ref_rank", "ref_diff", "absent"])
    assert out["ref_rank"].tolist() == ["1", "—", "3"] and out["ref_diff"].tolist() == ["+0", "—", "-2"]
    assert out["x"].isna().sum() == 1  # other columns untouched


def test_numbers_as_text_only_touches_columns_with_gaps():
    f = pd.DataFrame({"p": [0.000123, np.nan], "n": pd.array([3, None], dtype="Int64"), "k": [1.5, 2.0],
                      "c": [2.0, np.nan]})
    out, changed = numbers_as_text(f, {"p": ".2g", "n": "d", "k": ".1f", "c": "d"})
    assert changed == ["p", "n", "c"]
    assert (
        out["p"].tolist() == ["0.00012", "—"]
        and out["n"].tolist() == ["3", "—"]
        and out["c"].tolist() == ["2", "—"]
    )
    assert out["k"].tolist() == [1.5, 2.0]


def test_plot_labels_escape_plotly_markup():
    import html as h

    labels = plot_labels(["<b>x</b> & y", "it's", None])
    assert labels == ["&lt;b&gt;x&lt;/b&gt; &amp; y", "it's", ""]
    assert [h.unescape(v) for v in labels[:2]] == ["<b>x</b> & y", "it's"]  # plotly decodes the entities


def test_kappa_matrix_and_mean():
    table = pd.DataFrame(
        {"judge_1": ["a", "a", "b"], "judge_2": ["b", "c", "c"], "kappa": [0.5, np.nan, 0.1]}
    )
    mat = kappa_matrix(table, ["a", "b", "c"])
    assert mat.loc["b", "a"] == 0.5 and np.isnan(mat.loc["c", "a"]) and mat.loc["c", "c"] == 1.0
    assert mean_offdiagonal(mat) == pytest.approx((0.5 + 0.1) / 2)
    assert np.isnan(mean_offdiagonal(kappa_matrix(table.iloc[:0], ["a"])))
