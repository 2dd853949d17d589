"""The soft pass's logits read in chunks (``TransformersBackend._read_logits``) give, row for row, exactly
what reading each row alone gives: its float32 log-softmax's greedy token, top-k pairs and each watched
id group's log-sum-exp. Rows span several chunks, in bf16 and float32, with ties, k = 0 and no groups."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from engine.judging.local_backend import TransformersBackend


@pytest.fixture(scope="module")
def torch():
    """torch, imported by the test rather than at collection: every xdist worker collects every file, and
    only the worker that runs the local model's files (this one is in their unit: conftest.ONE_WORKER)
    needs torch (1.3 s of CPU to import)."""
    return pytest.importorskip("torch")


def one_row_at_a_time(torch, logits, k, watched):
    """The reading the soft pass made before: each row on its own."""
    toks, tops, letters = [], [], []
    for row in logits:
        lp = torch.log_softmax(row.float(), dim=-1)
        toks.append(int(lp.argmax()))
        if k > 0:
            vals, idx = lp.topk(k)
            tops.append([(float(v), int(j)) for v, j in zip(vals, idx, strict=True)])
            letters.append([float(torch.logsumexp(lp[w], dim=-1)) for w in watched])
    return toks, tops, letters


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("k, watched", [(5, [[3], [7, 11, 40], [0, 1]]), (0, [[3]]), (4, [])])
def test_chunked_reading_equals_reading_each_row_alone(torch, dtype, k, watched):
    dtype = getattr(torch, dtype)
    gen = torch.Generator().manual_seed(7)
    full = torch.randn(11, 64, generator=gen) * 4
    full[2, :] = 0.0  # a row of ties: argmax and top-k must pick the same ids either way
    full[5, [3, 9]] = 30.0  # two tokens tied at the top
    logits = [r.to(dtype) for r in full]
    fake = SimpleNamespace(_torch=torch)
    got = TransformersBackend._read_logits(fake, logits, k, watched, rows=4)  # chunks of 4, 4, 3
    want = one_row_at_a_time(torch, logits, k, watched)
    assert got[0] == want[0]
    if k > 0:
        assert got[1] == want[1]
        assert got[2] == want[2]
