-- Per-dataset counts (verdicts, invalid ones, judges, prompts, models, the models each judge covers, the
-- categories) computed once per dataset version and kept here, so the dataset listing, the app's sidebar
-- and `python -m engine datasets` read one row instead of scanning every verdict (issue 26). Keyed by the
-- store-wide version: every write gives its dataset a new version (engine/store/writes.py), so a row of an
-- older version is never read and is dropped at the next refresh. Written by engine/store/summaries.py.
CREATE TABLE dataset_summaries (
    dataset  VARCHAR NOT NULL,
    version  INTEGER NOT NULL,
    summary  VARCHAR NOT NULL,  -- JSON: the counts (engine.store.summaries.DatasetSummary)
    PRIMARY KEY (dataset, version)
);
