-- Dataset versions come from dataset_version_seq only (engine.store.writes.new_version). Before,
-- a judge write set version = version + 1, so a store can hold versions the sequence has not
-- reached yet, and a later import would take a smaller one (and a cached result could be served
-- under a (name, version) that named older verdicts). Move the sequence past every version
-- stored, in datasets and in the results cache, so the next one is larger than all of them.
SELECT max(nextval('dataset_version_seq')) FROM (
    SELECT unnest(range(0, greatest(
        (SELECT coalesce(max(version), 0) FROM datasets),
        (SELECT coalesce(max(version), 0) FROM results_cache)) + 1)));
