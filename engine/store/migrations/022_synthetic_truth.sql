-- Ground truth of synthetic datasets (engine/synthetic.py): the strength each model was generated
-- with; rank 1 = best. Only datasets flagged synthetic have rows here.
CREATE TABLE synthetic_truth (
    dataset   VARCHAR NOT NULL,
    model     VARCHAR NOT NULL,
    strength  DOUBLE NOT NULL,
    rank      INTEGER NOT NULL,
    seed      BIGINT NOT NULL,
    PRIMARY KEY (dataset, model)
);
