-- Datasets of aggregated outcomes per model pair (issue 25, point 7): the shape LMArena and leaderbot
-- publish (wins of each side, ties, ties judged both bad), with no prompt and no single verdict. One
-- row per unordered pair, model_a < model_b; a dataset holds either these rows or verdicts, never both.
-- Written by engine/store/pair_counts.py; read by engine/ranking/pair_count_board.py.
CREATE TABLE pair_counts (
    dataset  VARCHAR NOT NULL,
    model_a  VARCHAR NOT NULL,
    model_b  VARCHAR NOT NULL,
    wins_a   BIGINT NOT NULL CHECK (wins_a >= 0),
    wins_b   BIGINT NOT NULL CHECK (wins_b >= 0),
    ties     BIGINT NOT NULL CHECK (ties >= 0),
    both_bad BIGINT NOT NULL DEFAULT 0 CHECK (both_bad >= 0),
    PRIMARY KEY (dataset, model_a, model_b),
    CHECK (model_a < model_b)
);
