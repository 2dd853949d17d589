"""Per-prompt PGED's per-question ensembles from sparse wins (``pged.prompt_ensembles``) and its grouping
of equal ensembles through their nonzero entries (``pged.distinct_ensembles``), against brute force: the
ensembles summed question by question and graph by graph in graph order, and the rows grouped by their
bytes. Shapes that separate the paths: several judges and paraphrase variants in both orders, one pair
per prompt with repeats (questions of one graph, many equal ensembles), and a sparse 70-model set; the
weights hold zeros, fractions and several resamples. The page's numbers through these functions are
compared with the old path in tests/test_pged_distinct_ensembles.py."""

from __future__ import annotations

import numpy as np
import pytest

from engine.graphs.stack import build_stack
from engine.rankers import pged as pged_module
from engine.rankers import rank
from engine.rankers.pged import _same_entries, distinct_ensembles, prompt_ensembles, question_ids
from engine.ranking.bootstrap import bootstrap
from tests.seam_data import Shape, verdicts

SHAPES = (
    Shape(seed=21, n_models=5, n_prompts=8, judges=3, paraphrases=1, samples=1, orders="both", repeats=True),
    Shape(seed=22, n_models=6, n_prompts=80, judges=1, one_pair=True, orders="AB", repeats=True),
    Shape(seed=23, n_prompts=30, sparse=True, judges=2, paraphrases=1, orders="mixed"),
)
IDS = ["judges-variants", "one-pair", "sparse70"]


def brute_ensembles(stack, g, q_of_t, n_q):
    """Question by question, graph by graph in graph order: weight times the graph's strict wins, and the
    models a graph of positive weight compared."""
    B, n = g.shape[0], stack.n
    wins = stack.adj & ~stack.adj.swapaxes(1, 2)
    seen = stack.observed.any(axis=2)
    wq = np.zeros((B, n_q, n, n))
    pres = np.zeros((B, n_q, n), dtype=bool)
    for b in range(B):
        for t in range(stack.T):
            q = q_of_t[t]
            wq[b, q] = wq[b, q] + g[b, t] * wins[t].astype(np.float64)  # each cell: one product, one sum
            if g[b, t] > 0:
                pres[b, q] |= seen[t]
    return wq, pres


@pytest.mark.parametrize("shape", SHAPES, ids=IDS)
def test_ensembles_equal_the_question_by_question_sums(shape):
    stack = build_stack(verdicts(shape).assign(dataset="seam"))
    q_of_t, qkeys = question_ids(stack)
    rng = np.random.default_rng(shape.seed)
    g = rng.integers(0, 3, (3, stack.T)).astype(np.float64) * rng.choice([1.0, 0.7, 1 / 3], (3, stack.T))
    got_w, got_p = prompt_ensembles(stack, g, q_of_t, len(qkeys))
    want_w, want_p = brute_ensembles(stack, g, q_of_t, len(qkeys))
    assert np.array_equal(got_w, want_w) and np.array_equal(got_p, want_p)
    assert got_w.any() and (g == 0).any()


def byte_groups(rows: np.ndarray) -> list[int]:
    """Each row's group: the index of the first row with the same bytes."""
    seen: dict[bytes, int] = {}
    return [seen.setdefault(r.tobytes(), k) for k, r in enumerate(rows)]


def assert_groups_are_byte_groups(wq: np.ndarray, present: np.ndarray) -> None:
    G = wq.shape[0]
    first, inverse = distinct_ensembles(wq, present)
    rows = np.concatenate([wq.reshape(G, -1), present.reshape(G, -1).astype(np.float64)], axis=1)
    want = byte_groups(rows)
    assert first.size == len(set(want)), "groups merged or split"
    assert [int(first[k]) for k in inverse] == want, "a row's group is not the first row equal to it"


@pytest.mark.parametrize("shape", SHAPES, ids=IDS)
def test_groups_are_the_rows_equal_byte_for_byte(shape):
    stack = build_stack(verdicts(shape).assign(dataset="seam"))
    q_of_t, qkeys = question_ids(stack)
    wq, pres = prompt_ensembles(stack, np.ones((1, stack.T)), q_of_t, len(qkeys))
    assert_groups_are_byte_groups(wq[0], pres[0])


def test_rows_alike_but_for_a_value_or_a_present_model_stay_apart():
    """Equal cells with other values, equal values with another present model, all-zero rows, and a
    row holding NaN (never equal to itself entry by entry: the byte grouping decides)."""
    n = 3
    wq = np.zeros((7, n, n))
    pres = np.zeros((7, n), dtype=bool)
    wq[[0, 1, 2], 0, 1] = [1.0, 2.0, 1.0]  # rows 0 and 2 equal, row 1 another value
    pres[[0, 1, 2]] = [True, True, False]
    pres[3] = pres[4] = [True, False, True]  # rows 3, 4 equal (no weight), row 5 another presence
    pres[5] = [True, True, False]
    wq[6, 1, 2] = np.nan
    assert_groups_are_byte_groups(wq, pres)
    first, inverse = distinct_ensembles(wq, pres)
    assert inverse[0] == inverse[2] and inverse[3] == inverse[4] and len(set(inverse.tolist())) == 5


def test_the_entry_check_rejects_other_values_cells_and_counts():
    """``_same_entries`` with every row sent to row 0: true only where the rows hold the same entries."""
    G, rep = 2, np.array([0, 0])
    row, col = np.array([0, 1]), np.array([4, 4])
    assert _same_entries(row, col, np.array([2.0, 2.0]), G, rep)
    assert not _same_entries(row, col, np.array([2.0, 3.0]), G, rep)
    assert not _same_entries(row, np.array([4, 5]), None, G, rep)
    assert not _same_entries(np.array([0, 1, 1]), np.array([4, 4, 6]), None, G, rep)


def test_a_projection_collision_falls_back_to_the_byte_grouping(monkeypatch):
    """Rows whose projections collide (every projection zero) are still grouped only when equal."""
    real = np.random.default_rng

    class Flat:
        def standard_normal(self, shape):
            return np.zeros(shape)

    monkeypatch.setattr(pged_module.np.random, "default_rng",
                        lambda seed=None: Flat() if seed == 0x9ED else real(seed))
    wq = np.zeros((5, 2, 2))
    wq[[0, 1, 3, 4], 0, 1] = [1.0, 2.0, 1.0, 1.0]  # rows 0 and 4 equal; 1 another value; 3 another presence
    present = np.ones((5, 2), dtype=bool)
    present[3, 1] = False
    assert_groups_are_byte_groups(wq, present)
    assert len(distinct_ensembles(wq, present)[0]) == 4
    same_weights = np.ones((2, 2, 2))  # only the present models differ: the presence check decides
    assert len(distinct_ensembles(same_weights, np.array([[True, True], [True, False]]))[0]) == 2


def fresh_bootstrap(stack, params: dict, unit: str):
    """PGED's bootstrap with no point fit kept (``pged._LAST_RANKINGS`` emptied first)."""
    pged_module._LAST_RANKINGS.clear()
    return bootstrap(stack, "pged", 12, 5, unit=unit, **params).samples


@pytest.mark.parametrize("shape", SHAPES, ids=IDS)
@pytest.mark.parametrize("unit", ["prompt", "graph"])
def test_the_bootstrap_reading_the_point_fits_rankings_equals_its_own(shape, unit, monkeypatch):
    """After the point fit of the same stack and weights, the bootstrap reads the kept per-question
    rankings (one ranking of the full ensembles instead of two) and gets the samples it gets alone."""
    stack = build_stack(verdicts(shape).assign(dataset="seam"))
    alone = fresh_bootstrap(stack, {}, unit)
    fixed = "fixed per-question rankings" in bootstrap(stack, "pged", 1, 0, unit=unit).method
    calls = []
    real = pged_module.prompt_rankings

    def counting(wq, *args, **kw):
        calls.append(wq.shape[0])
        return real(wq, *args, **kw)

    monkeypatch.setattr(pged_module, "prompt_rankings", counting)
    rank(stack, "pged")
    np.testing.assert_array_equal(bootstrap(stack, "pged", 12, 5, unit=unit).samples, alone)
    if fixed:  # the questions' full ensembles ranked once (the point fit's), not again by the bootstrap
        assert calls.count(len(question_ids(stack)[1])) == 1, calls


def test_kept_rankings_serve_only_the_same_stack_weights_and_words():
    """A point fit of another stack, other judge weights or other ranking words is not read: the
    bootstrap then equals its own fresh one (several judges per question, so the weights move rankings)."""
    shape = SHAPES[0]
    stack = build_stack(verdicts(shape).assign(dataset="seam"))
    other = build_stack(verdicts(Shape(**{**shape.__dict__, "seed": 99})).assign(dataset="seam"))
    judges = sorted(set(stack.keys["judge"].astype(str)))
    tilted = {j: float(k + 1) ** 2 for k, j in enumerate(judges)}
    cases = [(other, {}, {}), (stack, {"weights": tilted}, {}), (stack, {}, {"prompt_ties": "name"})]
    for point_stack, point_params, boot_params in cases:
        want = fresh_bootstrap(stack, boot_params, "prompt")
        rank(point_stack, "pged", **point_params)
        got = bootstrap(stack, "pged", 12, 5, unit="prompt", **boot_params).samples
        np.testing.assert_array_equal(got, want)
    want = fresh_bootstrap(stack, {"weights": tilted}, "prompt")
    rank(stack, "pged", weights=tilted)
    got = bootstrap(stack, "pged", 12, 5, unit="prompt", weights=tilted).samples
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(want, fresh_bootstrap(stack, {}, "prompt"), equal_nan=True)
