-- A dataset's own change count (1 for its first import, +1 for each later import, replace or
-- rename), shown to users as its "version". datasets.version stays the store-wide sequence number
-- that cache keys use (a (name, version) pair never names two contents). Existing datasets count
-- their stored imports.
ALTER TABLE datasets ADD COLUMN revision INTEGER;
UPDATE datasets SET revision = greatest(1, (
    SELECT count(*) FROM import_log l WHERE l.dataset = datasets.name AND l.status = 'stored'));
