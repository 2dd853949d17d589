"""Tournament graphs and what is measured on them: verdicts → one graph per prompt/variant
(``stack``, bucketed by size in ``buckets``), exact short-cycle counts, triads, structure, keep-K
truncation by bad cycles, and feedback-arc-set denoising.

May import: ``engine.store.schema``, ``engine.blas``, ``engine.errors``.
"""
