"""The distinct counts that used numpy's hash-table ``np.unique`` on large arrays now use
``engine.graphs.distinct.distinct_sorted`` (issue 26, part judges3): the leaderboard's prompts per model
(one sorted distinct over (model, prompt) cells instead of one np.unique per model) and the count
query's graphs with several verdicts (64-bit unsigned graph hashes). Each must give what the old
expression gave, computed here the old way or by brute force."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as hst
from seam_data import Shape, verdicts

from engine.graphs.distinct import distinct_sorted
from engine.graphs.stack import build_stack
from engine.ranking.leaderboard import _prompts_per_model


def brute_prompts_per_model(stack) -> np.ndarray:
    """Per model, the set of prompt ids of the graphs where it met another model."""
    present = np.asarray(stack.observed.any(axis=2))
    prompts = stack.keys["prompt_id"].astype(str).to_numpy()
    return np.array([len(set(prompts[present[:, i]])) for i in range(stack.n)], dtype=np.int64)


def test_prompts_per_model_equals_a_set_count(shipped_store):
    """vicuna80 (every model in every prompt, six judges) and generated shapes where models sit in a few
    prompts (sparse 70), variants and turns repeat a prompt id, and one pair per prompt."""
    frames = [shipped_store.verdicts("vicuna80")]
    for shape in (Shape(seed=7, n_prompts=40, judges=2, sparse=True, paraphrases=1, turns=2),
                  Shape(seed=5, n_models=6, n_prompts=40, judges=2, one_pair=True),
                  Shape(seed=3, n_models=6, n_prompts=4, judges=3, paraphrases=2, samples=1)):
        rows = verdicts(shape)
        rows.insert(0, "dataset", "seam")
        frames.append(rows)
    for frame in frames:
        stack = build_stack(frame)
        got = _prompts_per_model(stack)
        assert got.dtype == np.int64
        assert np.array_equal(got, brute_prompts_per_model(stack))
    assert len(set(brute_prompts_per_model(build_stack(frames[1])))) > 1  # models differ in prompts


@given(hst.lists(hst.integers(0, 2**64 - 1), max_size=120), hst.integers(1, 30))
@settings(max_examples=60, deadline=None)
def test_shared_graph_hashes_equal_np_unique(values, spread):
    """The count query's expression on sorted uint64 hashes (values above 2**63 too), repeats folded in."""
    for arr in (np.asarray(values, dtype=np.uint64), np.asarray(values, dtype=np.uint64) % np.uint64(spread)):
        srt = np.sort(arr)
        dup = srt[1:][srt[1:] == srt[:-1]]
        got = distinct_sorted(dup)
        assert got.dtype == np.unique(dup).dtype and np.array_equal(got, np.unique(dup))
