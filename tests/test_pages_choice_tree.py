"""The inspector's pickers (issue 26, part pages): ``engine.views.inspector.ChoiceTree`` against the nested
dict the inspector built before (prompt → variant → judges, walked row by row, prompts in natural order,
cut to one judge by a dict comprehension), on vicuna80, on generated datasets (several judges, variants,
turns, one pair per prompt, a sparse 70-model set) and on random key tables whose judges first appear in
an order other than their sorted one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst
from seam_data import Shape, verdicts

from engine.graphs.buckets import build_buckets
from engine.views.inspector import ChoiceTree, graph_choices, judged_by
from engine.views.labels import natural_sorted


def old_tree(prompt: list[str], variant: list[int], judge: list[str]) -> dict:
    """The pickers as main e59b42a built them: one dict walk over the (prompt, variant, judge) rows."""
    out: dict[str, dict[int, list[str]]] = {}
    for p, v, j in zip(prompt, variant, judge, strict=True):
        out.setdefault(p, {}).setdefault(v, []).append(j)
    return {p: dict(sorted(out[p].items())) for p in natural_sorted(out)}


def old_cut(tree: dict, judge: str) -> dict:
    out = {p: {v: js for v, js in vs.items() if judge in js} for p, vs in tree.items()}
    return {p: vs for p, vs in out.items() if vs}


def old_judges(tree: dict) -> list[str]:
    return list(dict.fromkeys(j for vs in tree.values() for js in vs.values() for j in js))


def assert_same(new, old: dict) -> None:
    """Same prompts in the same order, same variants in order, same judge lists in order."""
    assert len(new) == len(old) and list(new) == list(old)
    for p in old:
        assert p in new
        assert list(new[p].items()) == list(old[p].items())
    assert "no such prompt" not in new


def check(prompt: list[str], variant: list[int], judge: list[str]) -> None:
    new, old = ChoiceTree.of(prompt, variant, judge), old_tree(prompt, variant, judge)
    assert_same(new, old)
    assert new.judges == old_judges(old)
    for j in [*dict.fromkeys(judge), "nobody"]:
        assert_same(judged_by(new, j), old_cut(old, j))
        assert judged_by(new, j) is judged_by(new, j)  # cut once per judge


rows = hst.lists(hst.tuples(hst.sampled_from(["q1", "q2", "q10", "b3", "b20", "7", "x"]), hst.integers(0, 3),
                            hst.sampled_from(["zed", "amy", "kim"])), max_size=60, unique=True)


@given(rows)
@settings(max_examples=80, deadline=None)
def test_choice_tree_equals_the_dict_walk_on_random_keys(triples):
    check([p for p, _, _ in triples], [v for _, v, _ in triples], [j for _, _, j in triples])


def stack_rows(graphs) -> tuple[list[str], list[int], list[str]]:
    keys = graphs.keys
    frame = pd.DataFrame({"p": keys["prompt_id"].astype(str), "v": keys["variant"].astype(int),
                          "j": keys["judge"].astype(str)}).drop_duplicates()
    return frame["p"].tolist(), frame["v"].tolist(), frame["j"].tolist()


@pytest.mark.parametrize("shape", [
    Shape(seed=3, n_models=5, n_prompts=12, judges=3, turns=2, paraphrases=2, samples=1, invalid_p=0.05),
    Shape(seed=5, n_models=6, n_prompts=40, judges=2, one_pair=True),
    Shape(seed=7, n_prompts=40, judges=3, sparse=True, paraphrases=1),
], ids=["judges-variants", "one-pair", "sparse70"])
def test_graph_choices_equal_the_dict_walk_on_generated_stacks(shape):
    frame = verdicts(shape).assign(dataset="seam")
    frame["judge"] = frame["judge"].map({"j0": "zeta", "j1": "alpha", "j2": "mid"})  # first seen ≠ sorted
    graphs = build_buckets(frame)
    tree = graph_choices(graphs)
    assert isinstance(tree, ChoiceTree) and graph_choices(graphs) is tree
    check(*stack_rows(graphs))


def test_graph_choices_on_vicuna80(shipped_store):
    graphs = build_buckets(shipped_store.verdicts("vicuna80"))
    p, v, j = stack_rows(graphs)
    assert_same(graph_choices(graphs), old_tree(p, v, j))
    check(p, v, j)
    assert len(np.unique(j)) > 1


@pytest.mark.parametrize("shape", [
    Shape(seed=4, n_models=4, n_prompts=9, judges=2, turns=2, paraphrases=2, samples=2),
    Shape(seed=6, n_models=4, n_prompts=30, judges=1, one_pair=True),
], ids=["paraphrases-samples", "one-pair"])
def test_prompt_variant_names_equal_the_whole_stack_names(shape):
    """One prompt's variant names, read from its keys alone, equal the names computed over every graph."""
    from engine.views.inspector import prompt_variant_names, variant_names

    frame = verdicts(shape).assign(dataset="seam")
    first = sorted(frame["prompt_id"].unique())[0]
    frame = frame[~((frame["prompt_id"] == first) & (frame["variant"] == 1))]  # its later variants renumber
    graphs = build_buckets(frame)
    whole = variant_names(graphs)
    for prompt in graph_choices(graphs):
        mine = prompt_variant_names(graphs, prompt)
        assert mine == {v: name for (p, v), name in whole.items() if p == prompt}
    assert len(set(whole.values())) > 1 or shape.one_pair


def test_a_judge_of_every_graph_cuts_nothing():
    tree = ChoiceTree.of(["q2", "q10", "q2"], [0, 0, 1], ["solo", "solo", "solo"])
    assert judged_by(tree, "solo") is tree and list(tree) == ["q2", "q10"]
