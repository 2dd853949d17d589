-- Judging: every model call (the cache), every judge/generate/perturb run, and variant lineage.

-- One row per distinct model call, keyed by a hash of (backend, model, template id + version,
-- rendered messages, decoding parameters). Only completed calls are stored, each committed as it
-- completes, so a killed run loses nothing and a rerun repeats nothing.
CREATE TABLE judge_calls (
    call_key          VARCHAR PRIMARY KEY,   -- sha256 hex of the canonical request
    backend           VARCHAR NOT NULL,      -- openai | transformers | ...
    model             VARCHAR NOT NULL,
    template_id       VARCHAR NOT NULL,
    template_version  INTEGER NOT NULL,
    messages          VARCHAR NOT NULL,      -- JSON list of {role, content}
    decoding          VARCHAR NOT NULL,      -- JSON of the decoding parameters
    text              VARCHAR,               -- the raw completion
    top_logprobs      VARCHAR,               -- JSON: per generated token, {token: logprob}
    prompt_tokens     INTEGER,
    completion_tokens INTEGER,
    latency_s         DOUBLE,
    attempts          INTEGER NOT NULL DEFAULT 1,
    run_id            BIGINT,
    created_at        TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE SEQUENCE judge_run_id_seq START 1;

-- One row per command run (judge, generate, perturb): what was asked and how it went.
CREATE TABLE judge_runs (
    run_id        BIGINT PRIMARY KEY DEFAULT nextval('judge_run_id_seq'),
    kind          VARCHAR NOT NULL,          -- judge | generate | perturb
    dataset       VARCHAR NOT NULL,
    backend       VARCHAR NOT NULL,
    model         VARCHAR NOT NULL,
    protocol      VARCHAR,
    params        VARCHAR,                   -- JSON of the run's arguments
    status        VARCHAR NOT NULL DEFAULT 'running',   -- running | done | failed
    calls_made    INTEGER NOT NULL DEFAULT 0,
    calls_cached  INTEGER NOT NULL DEFAULT 0,
    calls_failed  INTEGER NOT NULL DEFAULT 0,
    started_at    TIMESTAMP NOT NULL DEFAULT current_timestamp,
    finished_at   TIMESTAMP
);

-- Where each paraphrased variant came from: the generator call, the equivalence-check call and
-- the candidate's position in the generator's JSON array (variant 0, the original, has no row).
CREATE TABLE variant_lineage (
    dataset         VARCHAR NOT NULL,
    prompt_id       VARCHAR NOT NULL,
    variant         INTEGER NOT NULL,
    turn            INTEGER NOT NULL DEFAULT 1,
    parent_variant  INTEGER NOT NULL DEFAULT 0,
    candidate_index INTEGER NOT NULL,
    generator_call  VARCHAR NOT NULL,
    check_call      VARCHAR NOT NULL,
    PRIMARY KEY (dataset, prompt_id, variant, turn)
);
