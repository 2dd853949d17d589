"""The pool of a run with a model judge: the pairs of answers a judge run would judge, as items.

``build_jobs`` (``engine.judging.pipeline``) gives one ``PairJob`` per prompt instance and pair of
models with answers. Under the ``single`` protocol each job is two items, one per presentation order
(the item with model b shown first is the job with its models swapped, so its row names model b as
model_a with order AB, as a stored battle in the other order does), each one call: the strategy
chooses the order, and ``cycles`` can re-judge an edge in the other order. Under ``swapped``,
``hybrid`` and ``soft`` the protocol asks both orders itself, so each job is one item of two calls.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from engine.judging.active.pool import Pool, pool_from_verdicts
from engine.judging.protocols import PairJob, ProtocolConfig, make_unit


@dataclass(frozen=True, eq=False)
class JobSource:
    """Pair jobs as pool items (module docstring)."""

    pool: Pool
    jobs: list[PairJob]
    job_of: np.ndarray
    swap: np.ndarray
    protocol: str
    cfg: ProtocolConfig

    def unit(self, i: int):
        """The runner unit judging item ``i`` with the run's protocol; returns (i, rows)."""
        job = self.jobs[int(self.job_of[i])]
        cfg = self.cfg
        if self.protocol == "single":
            cfg = replace(cfg, single_order="AB")
            if self.swap[i]:
                job = replace(job, model_a=job.model_b, model_b=job.model_a, answer_a=job.answer_b,
                              answer_b=job.answer_a)
        rows = yield from make_unit(self.protocol, job, cfg)
        return i, rows


def job_source(jobs: list[PairJob], protocol: str, cfg: ProtocolConfig, judge: str) -> JobSource:
    """The pool of ``jobs`` under ``protocol`` (module docstring); ``judge`` names the run's judge."""
    single = protocol == "single"
    job_of = np.repeat(np.arange(len(jobs)), 2 if single else 1)
    swap = np.tile([False, True], len(jobs)) if single else np.zeros(len(jobs), dtype=bool)
    frame = pd.DataFrame({
        "prompt_id": [jobs[k].prompt_id for k in job_of], "variant": [jobs[k].variant for k in job_of],
        "turn": [jobs[k].turn for k in job_of], "variant_kind": [jobs[k].variant_kind for k in job_of],
        "category": [jobs[k].category for k in job_of],
        "model_a": [jobs[k].model_b if s else jobs[k].model_a for k, s in zip(job_of, swap, strict=True)],
        "model_b": [jobs[k].model_a if s else jobs[k].model_b for k, s in zip(job_of, swap, strict=True)],
        "order": "AB" if single else None, "judge": judge,
    })  # fmt: skip
    pool = pool_from_verdicts(frame, what="The judge run", calls_per_item=1 if single else 2)
    return JobSource(pool, jobs, job_of, swap, protocol, cfg)
