-- Datasets, verdicts, prompt and answer texts, and the import log.
CREATE TABLE datasets (
    name        VARCHAR PRIMARY KEY,
    description VARCHAR,
    source      VARCHAR,
    synthetic   BOOLEAN NOT NULL DEFAULT FALSE,
    version     INTEGER NOT NULL DEFAULT 1,   -- bumped whenever the verdicts change; cache key
    created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp,
    updated_at  TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE SEQUENCE verdict_id_seq START 1;

CREATE TABLE verdicts (
    verdict_id   BIGINT PRIMARY KEY DEFAULT nextval('verdict_id_seq'),
    dataset      VARCHAR NOT NULL,
    judge        VARCHAR NOT NULL,
    prompt_id    VARCHAR NOT NULL,
    variant      INTEGER NOT NULL DEFAULT 0,
    variant_kind VARCHAR NOT NULL DEFAULT 'original'
                 CHECK (variant_kind IN ('original', 'paraphrase', 'sample')),
    turn         INTEGER NOT NULL DEFAULT 1,
    category     VARCHAR,
    model_a      VARCHAR NOT NULL,
    model_b      VARCHAR NOT NULL,
    winner       VARCHAR NOT NULL CHECK (winner IN ('A', 'B', 'tie', 'invalid')),
    "order"      VARCHAR CHECK ("order" IS NULL OR "order" IN ('AB', 'BA')),
    prob_a       DOUBLE CHECK (prob_a IS NULL OR (prob_a >= 0 AND prob_a <= 1)),
    annotator    VARCHAR,
    explanation  VARCHAR,
    source_file  VARCHAR,
    source_line  INTEGER,
    CHECK (model_a <> model_b)
);
CREATE INDEX verdicts_dataset_idx ON verdicts(dataset, judge);

-- One text per prompt instance (variant 0 = the original question).
CREATE TABLE prompts (
    dataset      VARCHAR NOT NULL,
    prompt_id    VARCHAR NOT NULL,
    variant      INTEGER NOT NULL DEFAULT 0,
    turn         INTEGER NOT NULL DEFAULT 1,
    category     VARCHAR,
    variant_kind VARCHAR NOT NULL DEFAULT 'original',
    parent_variant INTEGER,                    -- lineage: the variant this one was derived from
    text         VARCHAR,
    PRIMARY KEY (dataset, prompt_id, variant, turn)
);

-- One answer per model and prompt instance, for the inspector.
CREATE TABLE answers (
    dataset   VARCHAR NOT NULL,
    prompt_id VARCHAR NOT NULL,
    variant   INTEGER NOT NULL DEFAULT 0,
    turn      INTEGER NOT NULL DEFAULT 1,
    model     VARCHAR NOT NULL,
    text      VARCHAR,
    PRIMARY KEY (dataset, prompt_id, variant, turn, model)
);

CREATE SEQUENCE import_id_seq START 1;

CREATE TABLE import_log (
    import_id     BIGINT PRIMARY KEY DEFAULT nextval('import_id_seq'),
    dataset       VARCHAR NOT NULL,
    source        VARCHAR NOT NULL,
    format        VARCHAR,
    rows_read     INTEGER NOT NULL,
    rows_stored   INTEGER NOT NULL,
    rows_rejected INTEGER NOT NULL,
    rows_invalid  INTEGER NOT NULL,            -- stored, but unparsable judge outputs
    mode          VARCHAR NOT NULL,            -- all-or-nothing | skip-invalid
    status        VARCHAR NOT NULL,            -- stored | refused
    imported_at   TIMESTAMP NOT NULL DEFAULT current_timestamp
);
