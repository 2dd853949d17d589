-- The call cache without its primary-key ART index (issue 29, point 3). The index on call_key (a
-- 64-character sha256 hex per call) lived in the judge's memory, and each checkpoint of the cache wrote
-- it again whole: a judge's memory rose in steps with the cache's size (1.35 GB at 10^6 calls,
-- docs/notes/i29mem-29.md). Every write of judge_calls already files only keys it does not hold
-- (engine.judging.call_rows, engine.store.call_shards: an anti-join inside the write's transaction, and
-- DuckDB lets one process write the file), and every read joins on call_key, which the index never
-- served. The table is rebuilt with the same columns, defaults and rows, without the constraint.
CREATE TABLE judge_calls_079 (
    call_key          VARCHAR NOT NULL,      -- sha256 hex of the canonical request (unique: see above)
    backend           VARCHAR NOT NULL,
    model             VARCHAR NOT NULL,
    template_id       VARCHAR NOT NULL,
    template_version  INTEGER NOT NULL,
    messages          VARCHAR NOT NULL,
    decoding          VARCHAR NOT NULL,
    text              VARCHAR,
    top_logprobs      VARCHAR,
    prompt_tokens     INTEGER,
    completion_tokens INTEGER,
    latency_s         DOUBLE,
    attempts          INTEGER NOT NULL DEFAULT 1,
    run_id            BIGINT,
    created_at        TIMESTAMP NOT NULL DEFAULT current_timestamp,
    server            VARCHAR
);
INSERT INTO judge_calls_079 SELECT call_key, backend, model, template_id, template_version, messages, decoding,
    text, top_logprobs, prompt_tokens, completion_tokens, latency_s, attempts, run_id, created_at, server
FROM judge_calls;
DROP TABLE judge_calls;
ALTER TABLE judge_calls_079 RENAME TO judge_calls;
