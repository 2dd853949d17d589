"""The store: the DuckDB file that holds every verdict, its schema and migrations, datasets read in
place from Parquet (``attached``) and what a dataset offers to choose from.

Owns the SQL on the shared tables, behind named functions: ``writes`` (every insert, update and
delete on the dataset tables, and the one dataset version counter, ``new_version``, that every
writer advances), ``sql`` (bound values, ``Relation``, checked identifiers), ``connection`` (schema,
dataset reads), ``datasets`` (what a dataset offers, judges, change stamps), ``attached``, ``truth``
(synthetic ground truth), ``init_log`` (once-per-store steps), ``results_table`` (cached result rows),
``verdict_codes`` (a selection's verdicts as numbers, for active judging's replay pool).
Judging's own tables (runs, calls, leases, lineage) are reached only through ``engine.judging.persist``
and ``engine.judging.call_rows``. May import: ``engine.errors`` only (the bottom layer).
"""
