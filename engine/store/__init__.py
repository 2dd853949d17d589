"""The store: the DuckDB file that holds every verdict, its schema and migrations, datasets read in
place from Parquet (``attached``) and what a dataset offers to choose from.

Owns all SQL on the verdict tables. May import: ``engine.errors`` only (the bottom layer).
"""
