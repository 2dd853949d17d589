-- Ingest bookkeeping: one-time bootstrap steps, and dataset versions that are never reused.
-- init_log: steps done once per store (e.g. importing the shipped default dataset), so that a
-- dataset the user deleted is not imported again on the next start.
CREATE TABLE init_log (
    step    VARCHAR PRIMARY KEY,
    detail  VARCHAR,
    done_at TIMESTAMP NOT NULL DEFAULT current_timestamp
);

-- Every change to a dataset takes its version from this sequence, so (name, version) never
-- names two different contents, even after a delete + re-import or a rename (cache keys).
CREATE SEQUENCE dataset_version_seq START 1;

-- Why an import was refused (one sentence), kept with the log row.
ALTER TABLE import_log ADD COLUMN detail VARCHAR;
