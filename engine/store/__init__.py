"""The store: the DuckDB file that holds every verdict, its schema and migrations, datasets read in
place from Parquet (``attached``) and what a dataset offers to choose from.

Owns the SQL on the shared tables, behind named functions: ``connection`` (schema, dataset reads),
``datasets`` (what a dataset offers, judges, change stamps), ``attached``, ``truth`` (synthetic ground
truth), ``init_log`` (once-per-store steps), ``results_table`` (cached result rows). Judging's own
tables are reached only through ``engine.judging.persist`` and ``engine.judging.call_rows``; the
importer and the vote query keep their bulk SQL (being rewritten for speed). May import:
``engine.errors`` only (the bottom layer).
"""
