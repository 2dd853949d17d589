-- Style features (issue 24): per verdict, four counts of each answer that a style-controlled fit
-- reads (engine/style): tokens, markdown headers, list items, bold spans. `_a` is model_a's answer.
-- NULL where the source gave none (a Chatbot-Arena conv_metadata field, or explicit columns of these
-- names); never negative (the import refuses such a row).
ALTER TABLE verdicts ADD COLUMN tokens_a DOUBLE;
ALTER TABLE verdicts ADD COLUMN headers_a DOUBLE;
ALTER TABLE verdicts ADD COLUMN lists_a DOUBLE;
ALTER TABLE verdicts ADD COLUMN bold_a DOUBLE;
ALTER TABLE verdicts ADD COLUMN tokens_b DOUBLE;
ALTER TABLE verdicts ADD COLUMN headers_b DOUBLE;
ALTER TABLE verdicts ADD COLUMN lists_b DOUBLE;
ALTER TABLE verdicts ADD COLUMN bold_b DOUBLE;

-- The same four counts made from the answer texts in the store (engine/style/counting.py), once per
-- dataset version and counting rule: a derived cache like results_cache, never the source of truth. A
-- new version of the dataset misses it; counting again replaces the dataset's older rows.
CREATE TABLE answer_style (
    dataset   VARCHAR NOT NULL,
    version   INTEGER NOT NULL,
    rule      VARCHAR NOT NULL,      -- engine.style.counting.RULE: the tokenizer and markdown rule
    prompt_id VARCHAR NOT NULL,
    variant   INTEGER NOT NULL,
    turn      INTEGER NOT NULL,
    model     VARCHAR NOT NULL,
    tokens    DOUBLE NOT NULL,
    headers   DOUBLE NOT NULL,
    lists     DOUBLE NOT NULL,
    bold      DOUBLE NOT NULL,
    PRIMARY KEY (dataset, version, rule, prompt_id, variant, turn, model)
);

-- One row per counting of a dataset version's answers (also when it had none), so a dataset without
-- answer texts is not scanned again.
CREATE TABLE answer_style_runs (
    dataset    VARCHAR NOT NULL,
    version    INTEGER NOT NULL,
    rule       VARCHAR NOT NULL,
    answers    BIGINT NOT NULL,
    seconds    DOUBLE,
    counted_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (dataset, version, rule)
);
