"""The local backend's default for prefix reuse follows the device: on the CPU shared prompt prefixes are
computed once (compute is the bound there), on a GPU they are not (measured slower, docs/notes/gpu-34.md)."""

from __future__ import annotations

from engine.judging.local_backend import reuses_prefixes


def test_prefix_reuse_is_the_cpu_default_and_off_on_every_cuda_device():
    assert reuses_prefixes("cpu") is True
    assert reuses_prefixes("cuda") is False
    assert reuses_prefixes("cuda:1") is False
