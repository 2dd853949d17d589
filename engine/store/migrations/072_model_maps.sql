-- A dataset's own map from its model names to a reference's names (issue 25, point 1): uploaded or
-- edited on the Data page, or set with `datasets map NAME FILE`. It belongs to the dataset: a rename
-- moves it, a delete removes it (engine/store/writes.py DATASET_TABLES). An empty reference_model says
-- the model is deliberately not on the reference. Written by engine/store/model_maps.py.
CREATE TABLE model_maps (
    dataset         VARCHAR NOT NULL,
    model           VARCHAR NOT NULL,
    reference_model VARCHAR NOT NULL,
    PRIMARY KEY (dataset, model)
);
