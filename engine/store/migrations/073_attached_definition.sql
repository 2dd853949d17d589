-- How an attached dataset's Parquet columns read as verdicts (issue 25): the `datasets attach` options
-- (--format, --map, --map-value, --set, --model-name, --judge-name) as a JSON definition that
-- engine/store/attached.py turns into one SELECT on every read. NULL: the files hold canonical columns.
ALTER TABLE attached_datasets ADD COLUMN definition VARCHAR;
