-- Votes (issue 13): each verdict may carry the source's own battle id and time, and a strength.
-- battle_id: the source's id of a battle / vote (num, battle_id, id, uid, ...); NULL when none.
--   Rows that repeat each other but carry different battle ids are different votes.
-- tstamp: seconds since the epoch when the source gives a time (Elo can run in that order); NULL otherwise.
-- strength: how decided a graded verdict was: 2 = strong (Arena-Hard "A>>B"), 1 = clear ("A>B");
--   NULL for ties and for sources that only say who won. Never turned into prob_a.
ALTER TABLE verdicts ADD COLUMN battle_id VARCHAR;
ALTER TABLE verdicts ADD COLUMN tstamp DOUBLE;
ALTER TABLE verdicts ADD COLUMN strength INTEGER;

-- The files already in each dataset, by a hash of their bytes: importing the same file into the
-- same dataset again is refused (a repeated row inside a file is a repeated vote, not a mistake).
-- A --replace clears the dataset's rows; a rename moves them; a delete removes them.
CREATE TABLE dataset_files (
    dataset      VARCHAR NOT NULL,
    content_hash VARCHAR NOT NULL,      -- sha256 hex of the file's bytes
    source       VARCHAR NOT NULL,      -- the file's name as given to the import
    import_id    BIGINT,
    PRIMARY KEY (dataset, content_hash)
);
ALTER TABLE import_log ADD COLUMN content_hashes VARCHAR;  -- JSON {file: sha256} of the import's files
ALTER TABLE import_log ADD COLUMN dropped_columns VARCHAR; -- JSON [column, ...] read but not kept
