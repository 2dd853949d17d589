"""Style counts that verdict files carry (issue 24 point 1): a Chatbot-Arena ``conv_metadata`` field or
explicit ``tokens_a .. bold_b`` columns, stored per verdict, read back by ``store_vote_rows(style=True)``,
written back by export (export → import exact in csv, jsonl and parquet), read in place by attach, and
bad values (negative, NaN, non-numeric) refused with the row named and nothing stored.

The conv_metadata sums are checked against a pandas re-implementation of the extraction LMArena's
notebook does (dict values summed per key) on a file shaped like its published battles."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from engine.errors import LensError
from engine.ingest.attach_checks import attach_parquet
from engine.ingest.importer import import_files
from engine.ingest.verdict_export import export_verdicts
from engine.ranking.vote_query import store_style_coverage, store_vote_rows
from engine.store.connection import Store
from engine.style.features import STYLE_COLUMNS
from tests.conftest import run_engine

HEADERS = [f"h{k}" for k in range(1, 7)]


def arena_battles(seed: int, n: int = 40) -> list[dict]:
    """Battles shaped like LMArena's published ones: conv_metadata with token sums and per-kind dicts of
    markdown counts (and the keys a style fit does not read)."""
    rng = np.random.default_rng(seed)
    models = ["gpt-4o", "claude-3", "llama-3", "gemini"]
    out = []
    for i in range(n):
        a, b = rng.choice(len(models), 2, replace=False)
        meta: dict = {"sum_user_tokens": int(rng.integers(1, 50)), "turns": 1}
        for s in ("a", "b"):
            meta[f"sum_assistant_{s}_tokens"] = int(rng.integers(0, 2000))
            meta[f"context_{s}_tokens"] = int(rng.integers(0, 99))
            meta[f"header_count_{s}"] = {h: int(rng.integers(0, 4)) for h in HEADERS}
            meta[f"list_count_{s}"] = {"ordered": int(rng.integers(0, 9)),
                                       "unordered": int(rng.integers(0, 9))}
            meta[f"bold_count_{s}"] = {"**": int(rng.integers(0, 9)), "__": int(rng.integers(0, 3))}
        out.append({
            "question_id": f"q{i}", "model_a": models[a], "model_b": models[b],
            "winner": str(rng.choice(["model_a", "model_b", "tie", "tie (bothbad)"])),
            "judge": f"arena_user_{i}", "turn": 1, "anony": True, "language": "English",
            "tstamp": 1_700_000_000 + i, "conv_metadata": meta,
        })
    return out


def notebook_counts(battles: list[dict]) -> pd.DataFrame:
    """The eight counts per battle as LMArena's notebook extracts them (pandas, dict values summed)."""
    df = pd.DataFrame(battles)
    out = pd.DataFrame(index=df.index)
    for s in ("a", "b"):
        out[f"tokens_{s}"] = df["conv_metadata"].apply(lambda m, s=s: m[f"sum_assistant_{s}_tokens"])
        for key, name in (("header_count", "headers"), ("list_count", "lists"), ("bold_count", "bold")):
            out[f"{name}_{s}"] = df["conv_metadata"].apply(
                lambda m, k=f"{key}_{s}": sum(m[k].values()) if isinstance(m[k], dict) else 0)
    out["prompt_id"] = df["question_id"]
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """One store for the file (each test its own dataset names)."""
    st = Store(tmp_path_factory.mktemp("style") / "lens.duckdb")
    yield st
    st.close()


@pytest.fixture(scope="module")
def cli_db(tmp_path_factory):
    """A store file the CLI opened once (its first use imports the shipped dataset: done once here)."""
    path = tmp_path_factory.mktemp("style_cli") / "lens.duckdb"
    assert run_engine(["--db", path, "datasets", "--format", "csv"]).returncode == 0
    return path


def stored_counts(store: Store, dataset: str) -> pd.DataFrame:
    return store.verdicts(dataset, columns=["prompt_id", *STYLE_COLUMNS]).drop(columns="verdict_id")


@pytest.mark.parametrize("seed", [0, 1])
def test_conv_metadata_sums_match_lmarenas_extraction(tmp_path, store, seed):
    battles = arena_battles(seed)
    path = tmp_path / "battles.json"
    path.write_text(json.dumps(battles), encoding="utf-8")
    import_files(store, [path], f"arena{seed}")
    got = stored_counts(store, f"arena{seed}").set_index("prompt_id").sort_index()
    want = notebook_counts(battles).set_index("prompt_id").sort_index()[list(STYLE_COLUMNS)]
    np.testing.assert_array_equal(got[list(STYLE_COLUMNS)].to_numpy(), want.to_numpy(dtype=float))
    rows = store_vote_rows(store, f"arena{seed}", style=True, order_by="input")
    np.testing.assert_array_equal(rows.style, notebook_counts(battles)[list(STYLE_COLUMNS)].to_numpy(float))
    cov = store_style_coverage(store, f"arena{seed}")
    assert (cov.verdicts, cov.given, cov.from_texts, cov.sentence()) == (len(battles), len(battles), 0, None)


def explicit_frame() -> pd.DataFrame:
    return pd.DataFrame({
        "prompt_id": ["p1", "p2", "p3", "p4"], "model_a": ["x", "y", "x", "z"],
        "model_b": ["y", "x", "z", "y"],
        "winner": ["A", "B", "tie", "A"],
        "tokens_a": [100.0, 20.0, np.nan, 7.5], "headers_a": [1.0, 0.0, np.nan, 2.0],
        "lists_a": [3.0, 0.0, np.nan, 0.0], "bold_a": [0.0, 4.0, np.nan, 1.0],
        "tokens_b": [50.0, 0.0, np.nan, 9.0], "headers_b": [0.0, 0.0, np.nan, 0.0],
        "lists_b": [2.0, 1.0, np.nan, 5.0], "bold_b": [1.0, 0.0, np.nan, 0.0],
    })


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_explicit_columns_import_and_export_round_trip(tmp_path, store, fmt):
    """Per-side columns in any container are stored as given (NaN where blank); export writes them back,
    and importing the export stores the same counts (kills an export that leaves them out)."""
    frame = explicit_frame()
    path = tmp_path / f"v.{fmt}"
    if fmt == "csv":
        frame.to_csv(path, index=False)
    elif fmt == "jsonl":
        frame.to_json(path, orient="records", lines=True)
    else:
        frame.to_parquet(path, index=False)
    import_files(store, [path], f"feat_{fmt}")
    np.testing.assert_array_equal(stored_counts(store, f"feat_{fmt}")[list(STYLE_COLUMNS)].to_numpy(),
                                  frame[list(STYLE_COLUMNS)].to_numpy())
    out = tmp_path / f"export.{fmt}"  # exported in the format it came in: each format both ways
    export_verdicts(store, f"feat_{fmt}", out, fmt)
    import_files(store, [out], f"back_{fmt}")
    pd.testing.assert_frame_equal(stored_counts(store, f"back_{fmt}"), stored_counts(store, f"feat_{fmt}"))


def test_a_dataset_without_counts_exports_as_before(tmp_path, store):
    frame = explicit_frame().drop(columns=list(STYLE_COLUMNS))
    frame.to_csv(tmp_path / "v.csv", index=False)
    import_files(store, [tmp_path / "v.csv"], "plain_export")
    export_verdicts(store, "plain_export", tmp_path / "out.csv", "csv")
    header = (tmp_path / "out.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert not set(STYLE_COLUMNS) & set(header)


BAD_CELLS = [
    ("tokens_b", "-5", "tokens_b '-5' is negative"),
    ("bold_a", "abc", "bold_a 'abc' is not a number"),
    ("lists_a", "NaN", "lists_a 'NaN' is NaN"),
    ("headers_b", "inf", "headers_b 'inf' is not a finite number"),
]


@pytest.mark.parametrize("column,value,words", BAD_CELLS)
def test_bad_explicit_counts_are_refused_with_the_row_named(tmp_path, cli_db, column, value, words):
    """A bad count anywhere refuses the import (exit 2) in a sentence naming file, line, column and
    value; nothing is stored. Kills a reader that stores NaN for what it cannot read."""
    frame = explicit_frame().astype(object)
    frame.loc[2, column] = value  # the third data row: line 4 of the file
    frame.to_csv(tmp_path / "bad.csv", index=False)
    res = run_engine(["--db", cli_db, "import", tmp_path / "bad.csv", "--dataset", f"bad_{column}"])
    assert res.returncode == 2, res.stderr
    assert f"bad.csv line 4: {words}" in res.stderr
    listed = run_engine(["--db", cli_db, "datasets", "--format", "csv"])
    assert listed.returncode == 0 and "vicuna80" in listed.stdout and f"\nbad_{column}," not in listed.stdout


def test_bad_conv_metadata_is_refused_with_the_row_named(tmp_path, cli_db):
    battles = arena_battles(3, n=3)
    battles[1]["conv_metadata"]["list_count_b"]["ordered"] = -1
    battles[2]["conv_metadata"]["sum_assistant_a_tokens"] = "many"
    path = tmp_path / "battles.jsonl"
    path.write_text("".join(json.dumps(b) + "\n" for b in battles), encoding="utf-8")
    res = run_engine(["--db", cli_db, "import", path, "--dataset", "bad_meta"])
    assert res.returncode == 2, res.stderr
    assert "battles.jsonl line 2: conv_metadata.list_count_b.ordered '-1' is negative" in res.stderr
    assert "battles.jsonl line 3: conv_metadata.sum_assistant_a_tokens 'many' is not a number" in res.stderr
    battles[1]["conv_metadata"] = "not json"
    path.write_text("".join(json.dumps(b) + "\n" for b in battles[:2]), encoding="utf-8")
    res = run_engine(["--db", cli_db, "import", path, "--dataset", "bad_meta"])
    assert res.returncode == 2 and "line 2: conv_metadata 'not json' is not a JSON object" in res.stderr


def test_conv_metadata_as_json_text_in_a_csv(tmp_path, store):
    """A CSV cell holding the conv_metadata object as JSON text reads like the object itself."""
    battles = arena_battles(4, n=6)
    frame = pd.DataFrame({"prompt_id": [b["question_id"] for b in battles],
                          "model_a": [b["model_a"] for b in battles],
                          "model_b": [b["model_b"] for b in battles],
                          "winner": [b["winner"] for b in battles],
                          "conv_metadata": [json.dumps(b["conv_metadata"]) for b in battles]})
    frame.to_csv(tmp_path / "m.csv", index=False)
    import_files(store, [tmp_path / "m.csv"], "meta_csv")
    got = stored_counts(store, "meta_csv")
    np.testing.assert_array_equal(got[list(STYLE_COLUMNS)].to_numpy(),
                                  notebook_counts(battles)[list(STYLE_COLUMNS)].to_numpy(float))


def test_attach_reads_the_columns_and_refuses_bad_ones(tmp_path, store):
    frame = explicit_frame()
    frame.to_parquet(tmp_path / "good.parquet", index=False)
    attach_parquet(store, "att", str(tmp_path / "good.parquet"))
    rows = store_vote_rows(store, "att", style=True, order_by="input")
    np.testing.assert_array_equal(rows.style, frame[list(STYLE_COLUMNS)].to_numpy())
    bad = frame.copy()
    bad.loc[1, "lists_b"] = -2.0
    bad.to_parquet(tmp_path / "bad.parquet", index=False)
    with pytest.raises(LensError, match=r"bad.parquet row 2 would not import: lists_b '-2.0' is not a count"):
        attach_parquet(store, "att_bad", str(tmp_path / "bad.parquet"))
    assert not store.has_dataset("att_bad")


def test_no_counts_anywhere_says_what_is_missing(tmp_path, store):
    frame = explicit_frame().drop(columns=list(STYLE_COLUMNS))
    frame.to_csv(tmp_path / "v.csv", index=False)
    import_files(store, [tmp_path / "v.csv"], "plain")
    rows = store_vote_rows(store, "plain", style=True)
    assert rows.style is not None and np.isnan(rows.style).all()
    cov = store_style_coverage(store, "plain")
    assert (cov.verdicts, cov.given, cov.from_texts, cov.answers) == (4, 0, 0, 0)
    assert cov.sentence() == (
        "None of the 4 verdicts of 'plain' carries style features (tokens, headers, lists, bold): its files "
        "gave no conv_metadata field and no tokens_a … bold_b columns, and the store holds no answer text of "
        "the dataset to count them from.")


def test_lmarena_140k_shaped_parquet(tmp_path, store):
    """LMArena's later releases (arena-human-preference-140k): Parquet with struct columns, an ISO
    ``timestamp``, an ``id`` per battle and content as a list of parts. Read as the arena format; the
    counts equal the notebook's sums (``both_bad`` mapped to a tie by the import's value map)."""
    battles = arena_battles(5, n=8)
    records = []
    for k, b in enumerate(battles):
        turn = [{"role": "user", "content": [{"type": "text", "text": "question"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "**answer**"}]}]
        records.append({"id": f"id-{k}", "model_a": b["model_a"], "model_b": b["model_b"],
                        "winner": "both_bad" if k == 0 else b["winner"].replace(" (bothbad)", ""),
                        "evaluation_session_id": "s", "evaluation_order": 1, "conversation_a": turn,
                        "conversation_b": turn, "conv_metadata": b["conv_metadata"], "language": "en",
                        "is_code": False, "timestamp": f"2025-05-29T14:48:{k:02d}.602925"})
    pd.DataFrame(records).to_parquet(tmp_path / "train.parquet", index=False)
    import_files(store, [tmp_path / "train.parquet"], "lmarena140k",
                 value_map={"winner": {"both_bad": "tie"}})
    got = store.verdicts("lmarena140k", columns=["battle_id", "tstamp", *STYLE_COLUMNS])
    np.testing.assert_array_equal(got[list(STYLE_COLUMNS)].to_numpy(),
                                  notebook_counts(battles)[list(STYLE_COLUMNS)].to_numpy(float))
    assert list(got["battle_id"]) == [f"id-{k}" for k in range(8)]
    assert got["tstamp"].iloc[0] == pd.Timestamp("2025-05-29T14:48:00.602925", tz="UTC").timestamp()
