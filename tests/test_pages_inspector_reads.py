"""The Prompt inspector without every graph built (issue 26, part i26pages, round two): its pickers come from
keys the store lists (``app_pages._lens.choice_tree_for``, ``engine.store.graph_keys``), the drawn graph
from the chosen prompt's verdicts alone (``prompt_graphs_for``), a triad's verdicts from that prompt's rows.
Each must equal what the page computed from the whole selection's graphs (``stack_for``): the same prompts
in the same natural order (ties in it kept in first-seen order), the same variants, judges, cuts per judge,
menu options, variant names, graph views and triad views, on vicuna80 and generated datasets (several
judges, variants, turns, orders, repeats, invalid rows and dead graphs, one pair per prompt, sparse 70
models, ids that tie in natural order, over 1,000 prompts so the vectorised natural sort runs), each whole
and filtered by judge and by category. ``natural_order``'s Arrow split equals the pandas split it replaces
and ``natural_key``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as hst
from seam_data import Shape, verdicts
from test_pages_truncation_pool import new_store, relabelled

from engine.graphs.buckets import build_buckets
from engine.graphs.stack import GRAPH_COLUMNS
from engine.store.connection import Store
from engine.views.inspector import (
    graph_choices,
    graph_position,
    graph_view,
    judged_by,
    prompt_menu,
    prompt_options,
    prompt_variant_names,
)
from engine.views.inspector_triads import triad_view
from engine.views.labels import _prefix_number_order, natural_key, natural_order
from engine.views.viz import cycle_overview


def old_reads(store: Store, dataset: str, **filters):
    """What the page read before: every graph of the selection and every verdict."""
    graphs = build_buckets(store.verdicts(dataset, columns=GRAPH_COLUMNS, **filters))
    return graphs, store.verdicts(dataset, **filters)


def assert_same_view(new, old) -> None:
    """Every field of two GraphViews but the position they came from."""
    assert new.key == old.key and new.models == old.models and new.order == old.order
    assert new.policy == old.policy
    for name in ("adj", "observed", "pair_bad", "node_bad"):
        np.testing.assert_array_equal(getattr(new, name), getattr(old, name))
    pd.testing.assert_frame_equal(new.triads, old.triads, check_exact=True)
    assert list(new.denoised) == list(old.denoised)
    for label, d in new.denoised.items():
        o = old.denoised[label]
        assert (d.counts, d.note) == (o.counts, o.note)
        np.testing.assert_array_equal(d.adj, o.adj)
        pd.testing.assert_frame_equal(d.changes, o.changes, check_exact=True)


def some_triads(triads: pd.DataFrame, every: int) -> list[int]:
    """Every ``every``-th triad of a graph and the first of each kind (a triad's view reads the same rows
    whichever triad it is: the kinds are what differ)."""
    return sorted(set(range(0, len(triads), every)) | set(triads.groupby("kind", sort=False).head(1).index))


def compare(db, monkeypatch, dataset: str, judge=None, category=None, every_prompt: int = 1,
            every_triad: int = 1) -> int:
    """The new reads against the old on every (prompt, variant, judge) of the selection (every
    ``every_prompt``-th prompt for the graph views, ``some_triads`` of each graph); returns how many
    triads were compared."""
    import streamlit as st

    from app_pages import _lens
    from engine.views.appstate import CacheKey

    monkeypatch.setenv("LENS_DB", str(db))
    st.cache_resource.clear()
    st.cache_data.clear()
    triads = 0
    with _lens.store_session():
        store = _lens.get_store()
        key = CacheKey.of(store, dataset, judge, category)
        old_graphs, old_verdicts = old_reads(store, dataset, judge=judge, category=category)
        old, new = graph_choices(old_graphs), _lens.choice_tree_for(key)
        assert len(new) == len(old) and list(new) == list(old)
        assert new.judges == old.judges
        for p in old:
            assert p in new and new[p] == old[p]
        assert "no such prompt" not in new and None not in new
        # the menu's graphs as the page counted them from every graph (the Cycles page's table, without
        # its negative binomial fit, which the menu does not show)
        menu_graphs = cycle_overview(old_graphs).graphs
        texts = _lens.prompt_texts_for(key.dataset, key.version)
        for j in [*old.judges, "nobody"]:
            cut_new, cut_old = judged_by(new, j), judged_by(old, j)
            assert list(cut_new) == list(cut_old) and all(cut_new[p] == cut_old[p] for p in cut_old)
            assert all(p in cut_new for p in cut_old)
            if j != "nobody":
                menu = prompt_menu(menu_graphs, texts, judge=j)
                assert _lens.prompt_options_for(key, j) == prompt_options(menu, cut_old)
                assert prompt_options(menu, cut_new, limit=7) == prompt_options(menu, cut_old, limit=7)
        for p in list(old)[::every_prompt]:
            graphs = _lens.prompt_graphs_for(key, p)
            assert prompt_variant_names(graphs, p) == prompt_variant_names(old_graphs, p)
            answers = store.answer_texts(dataset, p)  # the old triad view's texts: the prompt's, read once
            for v, judges in old[p].items():
                for j in judges:
                    t_new, t_old = graph_position(graphs, p, v, j), graph_position(old_graphs, p, v, j)
                    view = _lens.graph_view_for(key, p, t_new)
                    old_view = graph_view(old_graphs, t_old)
                    assert_same_view(view, old_view)
                    for k in some_triads(old_view.triads, every_triad):
                        assert _lens.triad_view_for(key, p, t_new, k) == triad_view(old_view, k, old_verdicts,
                                                                                    answers)
                        triads += 1
    return triads


FILTERS = [{}, {"judge": "j1"}, {"category": "c1"}]


def tied_ids(rows: pd.DataFrame) -> pd.DataFrame:
    """Prompt ids that tie in natural order with another prompt's (q1, Q1, q01), others without a number
    or without a prefix, so first-seen order decides and every kind of id is there."""
    ids = sorted(set(rows["prompt_id"]), key=int)
    forms = ("q{}", "Q{}", "q0{}", "{}", "b{}", "x")
    rename = {p: forms[i % len(forms)].format(int(p) // 2) for i, p in enumerate(ids)}
    out = rows.assign(prompt_id=rows["prompt_id"].map(rename))
    # the one judge of a tied id's graphs sorts after the other's, so first seen differs from id order
    late = out["prompt_id"].str.startswith("Q")
    out.loc[late & (out["judge"] == "j0"), "judge"] = "j1"
    return out


@pytest.mark.parametrize("shape", [
    Shape(seed=3, n_models=6, n_prompts=8, judges=2, turns=2, paraphrases=1, samples=1, orders="both",
          tie_p=0.2, invalid_p=0.08, repeats=True, categories=2, prob=True),
    Shape(seed=7, n_prompts=10, judges=2, sparse=True, paraphrases=1, categories=2, invalid_p=0.1),
], ids=["judges-variants", "sparse70"])
def test_inspector_reads_equal_every_graph(shape, tmp_path, monkeypatch):
    rows = tied_ids(relabelled(verdicts(shape), seed=shape.seed))
    store, db = new_store(tmp_path, rows, "insp")
    store.close()
    filters = FILTERS if shape.judges > 2 or shape.prob else FILTERS[:1]
    triads = sum(compare(db, monkeypatch, "insp", every_prompt=3, every_triad=3, **f) for f in filters)
    assert triads > 5  # triad views were compared, not only empty lists


def test_inspector_reads_on_many_one_pair_prompts(tmp_path, monkeypatch):
    """1,300 prompts of one pair each (the battle log's shape), ids that tie: the vectorised natural
    order and the menu's cut at MENU_MAX."""
    rows = tied_ids(verdicts(Shape(seed=5, n_models=8, n_prompts=1300, judges=2, one_pair=True,
                                   invalid_p=0.05, orders="mixed", categories=2)))
    store, db = new_store(tmp_path, rows, "pairs")
    store.close()
    for f in (FILTERS[0], FILTERS[2]):
        compare(db, monkeypatch, "pairs", every_prompt=400, **f)


def test_inspector_reads_on_vicuna80(shipped_db, monkeypatch):
    # q1 and q80, six judges each (the human's three votes per pair among them)
    assert compare(shipped_db, monkeypatch, "vicuna80", every_prompt=79, every_triad=3) > 0


odd_ids = hst.lists(hst.one_of(
    hst.builds("{}{}".format, hst.sampled_from(["q", "Q", "b", "", "ab-", "é", "x\n"]),
               hst.one_of(hst.just(""), hst.integers(0, 10**6).map(str),
                          hst.integers(0, 99).map("0{}".format), hst.just("1234567890123456"))),
    hst.text(max_size=4)), min_size=1, max_size=40)


@given(odd_ids, hst.integers(0, 2**32 - 1))
@example(["²", "0:"], 0)  # a digit that is no decimal: int("²") raised in natural_key (hypothesis found it)
@example(["q٣", "q2", "q10"], 1)  # an Arabic-Indic 3: text on both paths (the split is ASCII)
@settings(max_examples=12, deadline=None)
def test_natural_order_equals_the_pandas_split_and_natural_key(odd, seed):
    """Drawn ids (ties, no number, no prefix, 16 digits, non-ASCII, a line break, any text) among 1,001
    plain ones, shuffled: over 1,000 ids, so the vectorised split is what runs."""
    import re

    values = [*odd, *(f"q{i % 400}" if i % 3 else f"Q0{i % 50}" for i in range(1001))]
    np.random.default_rng(seed).shuffle(values)

    got = natural_order(values).tolist()
    parts = pd.Series(values, dtype=object).str.extract(re.compile(r"^(\D*)(\d{0,15})$", re.ASCII))
    if not parts.isna().any().any():  # the pandas split main used over 1,000 ids
        assert got == _prefix_number_order(parts[0].str.casefold(), parts[1]).tolist()
    else:
        assert got == sorted(range(len(values)), key=lambda i: natural_key(values[i]))


def test_natural_order_over_1000_ids_keeps_natural_key_s_order_of_any_few():
    """The vectorised split (over 1,000 ids) and ``natural_key`` (any fewer) order ids alike: non-ASCII digits
    ('٣', '²', '３') are text on both paths (the round-40 review: '٣' counted as 3 by the key alone)."""
    few = ["q٣", "q2", "q10", "q²", "q３", "q1", "٣", "3", "q"]
    plain = [f"z{i}" for i in range(1001)]
    ids = few + plain
    big = [ids[i] for i in natural_order(ids).tolist() if ids[i] in few]
    assert big == sorted(few, key=natural_key) == [few[i] for i in natural_order(few).tolist()]


def test_natural_order_arrow_path_on_plain_ids():
    """Ids the Arrow split takes (ASCII prefixes, numbers up to 15 digits, ties): the pandas order."""
    import re

    rng = np.random.default_rng(0)
    values = [f"{rng.choice(['q', 'Q', 'b', '', 'a-'])}{rng.choice(['', '0', '00'])}{rng.integers(0, 500)}"
              for _ in range(3000)] + ["q", "b", ""]
    parts = pd.Series(values, dtype=object).str.extract(re.compile(r"^(\D*)(\d{0,15})$", re.ASCII))
    assert natural_order(values).tolist() == _prefix_number_order(parts[0].str.casefold(), parts[1]).tolist()
