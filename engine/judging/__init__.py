"""Judging: run LLM judges (and answer / paraphrase generators) into the store.

Pieces, one concept per module: ``backends`` (the call interface), ``openai_backend`` and
``local_backend`` (its two implementations), ``cache`` (DuckDB call cache), ``templates`` and
``parsing`` (prompt files in, verdicts out), ``protocols`` (single, swapped, hybrid, soft),
``runner`` (concurrency, retries, progress), ``schedule`` (round robin, SWIM), ``inputs``
(shipped MT-Bench prompts and answers), ``generate`` and ``paraphrase`` (new answers, new variants),
``pipeline`` (one judge run from pairs to stored verdicts), ``active`` (choosing the next calls in
batches, refitting between them, stopping when the ranking is settled; the replay backend),
``persist`` and ``call_rows`` (the only judging modules that run SQL: outputs and runs; the call
cache's rows and leases).

May import: ``engine.diagnostics`` and every layer below it (the store for calls and verdicts,
``engine.rankers`` for SWIM's scheduling, ``engine.ingest.limits`` for reply sizes).
"""
