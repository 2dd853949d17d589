-- Cached protocol / curve results (engine/results_cache.py): one frame per
-- (dataset, dataset version, kind, parameter hash); a new dataset version misses the cache.
CREATE TABLE results_cache (
    dataset     VARCHAR NOT NULL,
    version     INTEGER NOT NULL,
    kind        VARCHAR NOT NULL,      -- protocols | keep_k_curve | mu_curve | ...
    param_hash  VARCHAR NOT NULL,      -- sha256 of the canonical JSON of the parameters
    params      VARCHAR NOT NULL,      -- that JSON, for people reading the table
    frame       BLOB NOT NULL,         -- the result DataFrame as Parquet bytes
    seconds     DOUBLE,                -- how long the computation took
    created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (dataset, version, kind, param_hash)
);
