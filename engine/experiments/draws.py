"""Random draws of the resampling protocols and curves: seeded generators per cell, common random
numbers for keep→draw, subsets without replacement, bootstrap multiplicities (paper 000, Appendix A.3).

Every (protocol, category) cell draws from its own generator seeded by (seed, a stable id of the
protocol's name, a stable id of the category), so a cell's numbers do not depend on which other
cells were requested. The keep→draw protocols and the curves share common random numbers: graph g
of a pool (in graph-key order) gets the uniform ``u[r, g]`` in outer resample r, and a draw of m
from a kept set takes its m smallest ``u``.
"""

from __future__ import annotations

import zlib

import numpy as np

from engine.errors import LensError

DEFAULT_SEED = 20260324
"""Paper 000's seed."""


def check_seed(seed) -> int:
    """A seed is a whole number ≥ 0 (numpy's seed sequences take no negative entropy)."""
    if int(seed) != seed or seed < 0:
        raise LensError(f"The seed must be a whole number ≥ 0; got {seed!r}.")
    return int(seed)


def stable_id(name: str) -> int:
    """A 32-bit id of a name that is the same in every run and on every machine (CRC-32)."""
    return zlib.crc32(str(name).encode("utf-8"))


def rng_for(seed: int, *names: str) -> np.random.Generator:
    """The generator of one cell: seeded by (seed, stable ids of ``names``), independent of the rest."""
    return np.random.default_rng([check_seed(seed), *(stable_id(n) for n in names)])


def keep_draw_uniforms(seed: int, group: str, n_graphs: int, resamples: int) -> np.ndarray:
    """(resamples, n_graphs) uniforms shared by every keep→draw cell of a group (common random numbers).

    Column g belongs to the pool's g-th graph in graph-key order; row r is outer resample r, and a
    longer run extends a shorter one (the first rows are the same).
    """
    return rng_for(seed, "keep-draw", group).random((int(resamples), int(n_graphs)))


def keep_draw_weights(u: np.ndarray, m: int) -> np.ndarray:
    """(R, K) 0/1 weights: in each row the ``m`` entries of ``u`` with the smallest values (all when m ≥ K).

    With ``u`` uniform this is a uniformly random m-subset without replacement of the K columns.
    """
    u = np.atleast_2d(np.asarray(u, dtype=np.float64))
    K = u.shape[1]
    if m >= K:
        return np.ones_like(u)
    thresh = np.partition(u, m - 1, axis=1)[:, m - 1:m]
    return (u <= thresh).astype(np.float64)


def subset_weights(rng: np.random.Generator, pool_size: int, m: int, rows: int) -> np.ndarray:
    """(rows, pool_size) 0/1 weights of ``rows`` independent m-subsets without replacement."""
    m = min(int(m), int(pool_size))
    out = np.zeros((rows, pool_size))
    if pool_size == 0 or rows == 0:
        return out
    picks = np.argsort(rng.random((rows, pool_size)), axis=1)[:, :m]
    np.put_along_axis(out, picks, 1.0, axis=1)
    return out


def random_pool_weights(rng: np.random.Generator, pool_size: int, random_pool: int, m: int, resamples: int,
                        reps: int) -> np.ndarray:
    """(resamples·reps, pool_size) 0/1 weights of the Random protocol: per outer resample, ``reps``
    m-subsets without replacement of a ``random_pool``-graph pool.

    A category with at most ``random_pool`` graphs is that pool (paper 000: its 50-graph category
    pool), and the rows are ``subset_weights``' (same random numbers). A larger category gets a
    fresh uniformly random ``random_pool``-subset in each outer resample, shared by its ``reps`` rows.
    """
    if pool_size <= random_pool:
        return subset_weights(rng, pool_size, m, resamples * reps)
    member = np.repeat(subset_weights(rng, pool_size, random_pool, resamples), reps, axis=0) > 0
    u = np.where(member, rng.random((resamples * reps, pool_size)), 2.0)  # non-members sort last
    m = min(int(m), int(random_pool))
    out = np.zeros((resamples * reps, pool_size))
    np.put_along_axis(out, np.argsort(u, axis=1)[:, :m], 1.0, axis=1)
    return out


def bootstrap_weights(rng: np.random.Generator, pool_size: int, rows: int) -> np.ndarray:
    """(rows, pool_size) multiplicities of ``rows`` draws of pool_size graphs with replacement."""
    if pool_size == 0 or rows == 0:
        return np.zeros((rows, pool_size))
    picks = rng.integers(0, pool_size, size=(rows, pool_size))
    flat = np.bincount((np.arange(rows)[:, None] * pool_size + picks).ravel(), minlength=rows * pool_size)
    return flat.reshape(rows, pool_size).astype(np.float64)


def by_key(pool: np.ndarray, krank: np.ndarray) -> np.ndarray:
    """Pool positions in graph-key order (the column order of the common random numbers)."""
    pool = np.asarray(pool, dtype=np.int64)
    return pool[np.argsort(krank[pool], kind="stable")]


def keep_draw_job_weights(
    pool: np.ndarray, kept: np.ndarray, m: int, krank: np.ndarray, seed: int, group: str, resamples: int
) -> tuple[np.ndarray, np.ndarray]:
    """(kept positions in key order, (R, kept) 0/1 weights): draws of ``m`` from ``kept`` ⊆ ``pool``
    by the group's common random numbers."""
    pool_k = by_key(pool, krank)
    kept_k = by_key(kept, krank)
    u = keep_draw_uniforms(seed, group, pool_k.size, resamples)
    cols = np.searchsorted(krank[pool_k], krank[kept_k])
    return kept_k, keep_draw_weights(u[:, cols], m)


__all__ = [
    "DEFAULT_SEED",
    "bootstrap_weights",
    "by_key",
    "check_seed",
    "keep_draw_job_weights",
    "keep_draw_uniforms",
    "keep_draw_weights",
    "random_pool_weights",
    "rng_for",
    "stable_id",
    "subset_weights",
]
