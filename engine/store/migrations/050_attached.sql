-- Datasets whose verdicts stay in Parquet files that DuckDB reads in place (no copy into the store):
-- the dataset's row in `datasets` plus the file glob here. See engine/attached.py.
CREATE TABLE attached_datasets (
    name        VARCHAR PRIMARY KEY,
    files       VARCHAR NOT NULL,   -- the glob of Parquet files
    attached_at TIMESTAMP NOT NULL DEFAULT current_timestamp
);
