"""The per-dataset summaries (engine/store/summaries.py, migration 075) behind the dataset listing, the app's
sidebar and ``python -m engine datasets``: each equals a brute-force recount of the rows that were imported
(plain Python over the generated rows), the listing equals the old scan (``Store.datasets()``) column for
column, and every write that changes a dataset (import, replace, rename, delete, attach, map, import-texts)
is seen by the next listing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_engine
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seam_data import listing_by_scan

from engine.ingest.importer import dataset_table, import_files
from engine.store.connection import Store
from engine.store.datasets import dataset_choices, dataset_listing
from engine.store.summaries import DatasetSummary, count_summary, summaries

MODELS = ["m0", "m1", "m2", "m3", "m4"]
row = st.tuples(
    st.sampled_from(["p1", "p2", "p3", "p4"]),  # prompt
    st.sampled_from(list(range(len(MODELS)))),
    st.integers(1, len(MODELS) - 1),  # offset: model_b differs from model_a
    st.sampled_from(["A", "B", "tie", "invalid"]),
    st.sampled_from(["j1", "j2", "j3"]),
    st.sampled_from(["", "coding", "math"]),
)


def write_csv(path: Path, rows) -> None:
    lines = ["prompt_id,model_a,model_b,winner,judge,category"]
    for p, a, off, w, j, c in rows:
        lines.append(f"{p},{MODELS[a]},{MODELS[(a + off) % len(MODELS)]},{w},{j},{c}")
    path.write_text("\n".join(lines) + "\n")


def recount(rows) -> DatasetSummary:
    """The summary counted by hand from the generated rows."""
    models, judge_models = set(), {}
    for _p, a, off, w, j, _c in rows:
        pair = {MODELS[a], MODELS[(a + off) % len(MODELS)]}
        models |= pair
        if w != "invalid":
            judge_models.setdefault(j, set()).update(pair)
    order = sorted(judge_models, key=lambda j: (-len(judge_models[j]), j))
    return DatasetSummary(
        verdicts=len(rows), invalid=sum(r[3] == "invalid" for r in rows), judges=len({r[4] for r in rows}),
        prompts=len({r[0] for r in rows}), models=len(models),
        judge_models=tuple((j, len(judge_models[j])) for j in order),
        categories=tuple(sorted({r[5] for r in rows if r[5]})),
        battles=sum(r[3] != "invalid" for r in rows),
    )


@pytest.fixture
def fresh(tmp_path_factory, migrated_empty_db):
    """A factory of empty stores (copies of the migrated empty file)."""
    def make() -> Store:
        path = tmp_path_factory.mktemp("sum") / "lens.duckdb"
        shutil.copyfile(migrated_empty_db, path)
        return Store(path)
    return make


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(row, min_size=1, max_size=30), min_size=1, max_size=3))
def test_summaries_equal_a_recount_and_the_old_listing(fresh, tmp_path_factory, sets):
    store = fresh()
    folder = tmp_path_factory.mktemp("csv")
    try:
        for k, rows in enumerate(sets):
            write_csv(folder / f"d{k}.csv", rows)
            import_files(store, [folder / f"d{k}.csv"], f"d{k}")
        got = summaries(store)
        for k, rows in enumerate(sets):
            assert got[f"d{k}"] == recount(rows)
        stored = store.cursor().execute("SELECT count(*) FROM dataset_summaries").fetchone()[0]
        assert stored == len(sets)  # kept in the store: the next read counts nothing
        pd.testing.assert_frame_equal(dataset_listing(store), store.datasets())  # the old scan, exactly
        for k, rows in enumerate(sets):
            ch = dataset_choices(store, f"d{k}")
            want = recount(rows)
            assert ch.judges == tuple(sorted(j for j, _ in want.judge_models))
            assert ch.default_judge == (want.judge_models[0][0] if want.judge_models else "")
            assert ch.categories == want.categories
    finally:
        store.close()


def test_a_stored_summary_is_read_not_recounted(fresh, tmp_path):
    """The summary row is what the listing shows: a planted wrong row for the current version is read back
    (so a listing reads the table), and a row of a version that is gone is never read."""
    store = fresh()
    write_csv(tmp_path / "a.csv", [("p1", 0, 1, "A", "j1", "")])
    import_files(store, [tmp_path / "a.csv"], "a")
    version = store.dataset_version("a")
    planted = DatasetSummary(99, 0, 1, 1, 2, (("j1", 2),), (), 99)
    with store.transaction() as tx:
        tx.execute("INSERT INTO dataset_summaries VALUES ('a', ?, ?)", [version, planted.to_json()])
    assert summaries(store)["a"] == planted
    import_files(store, [tmp_path / "a.csv"], "a", replace=True)  # a new version: the planted row is stale
    assert summaries(store)["a"] == count_summary(store.cursor(), "a")
    assert summaries(store)["a"].verdicts == 1
    assert store.cursor().execute("SELECT count(*) FROM dataset_summaries").fetchone()[0] == 1
    store.close()


def listing(db: Path) -> dict[str, dict]:
    out = run_engine(["--db", str(db), "datasets", "--format", "json"], check=True).stdout
    return {r["name"]: r for r in json.loads(out)}


def test_every_write_refreshes_the_listing(fresh, tmp_path):
    """import, replace, rename, delete, attach, map and import-texts, each followed by the CLI's listing
    (summaries) compared with the old scan of the same store."""
    store = fresh()
    db = store.path
    store.close()
    write_csv(tmp_path / "a.csv", [("p1", 0, 1, "A", "j1", "math"), ("p2", 1, 2, "tie", "j2", "")])
    write_csv(tmp_path / "b.csv", [("p1", 0, 1, "A", "j1", ""), ("p1", 0, 2, "B", "j1", ""),
                                   ("p3", 3, 1, "invalid", "j3", "coding")])

    def check() -> None:
        got = {n: {k: r[k] for k in ("verdicts", "invalid", "judges", "prompts", "models", "battles")}
               for n, r in listing(db).items()}
        assert got == listing_by_scan(db)

    run_engine(["--db", str(db), "import", str(tmp_path / "a.csv"), "--dataset", "a"], check=True)
    assert listing(db)["a"]["verdicts"] == 2
    check()
    run_engine(["--db", str(db), "import", str(tmp_path / "b.csv"), "--dataset", "a", "--replace"],
               check=True)
    assert listing(db)["a"]["verdicts"] == 3 and listing(db)["a"]["models"] == 5
    check()
    run_engine(["--db", str(db), "import", str(tmp_path / "a.csv"), "--dataset", "b"], check=True)
    run_engine(["--db", str(db), "datasets", "rename", "a", "c"], check=True)
    assert {"b", "c"} <= set(listing(db)) and "a" not in listing(db) and listing(db)["c"]["verdicts"] == 3
    check()
    run_engine(["--db", str(db), "datasets", "delete", "b"], check=True)
    assert "b" not in listing(db)
    check()
    (tmp_path / "map.csv").write_text("model,arena_model\nm0,gpt-4\n")
    run_engine(["--db", str(db), "datasets", "map", "c", str(tmp_path / "map.csv")], check=True)
    check()
    (tmp_path / "q.jsonl").write_text('{"prompt_id": "p1", "text": "What?"}\n')
    run_engine(["--db", str(db), "import-texts", str(tmp_path / "q.jsonl"), "--dataset", "c",
                "--shape", "prompts"], check=True)
    check()
    frame = pd.DataFrame({"prompt_id": ["x", "y"], "model_a": ["m0", "m1"], "model_b": ["m1", "m2"],
                          "winner": ["A", "B"]})
    frame.to_parquet(tmp_path / "att.parquet")
    run_engine(["--db", str(db), "datasets", "attach", "p", str(tmp_path / "att.parquet")], check=True)
    assert "p" in listing(db)
    check()
    with Store(db) as s:  # no row of a version that is gone stays behind
        kept = s.cursor().execute("SELECT dataset, version FROM dataset_summaries ORDER BY 1").fetchall()
        assert kept == s.cursor().execute("SELECT name, version FROM datasets ORDER BY 1").fetchall()
        models = dataset_table(s).set_index("name")["models"]
        assert (models["c"], models["p"]) == (5, 3)  # an attached dataset is counted over its files


def test_a_read_only_store_counts_without_writing(fresh, tmp_path):
    store = fresh()
    write_csv(tmp_path / "a.csv", [("p1", 0, 1, "A", "j1", ""), ("p2", 2, 1, "B", "j2", "")])
    import_files(store, [tmp_path / "a.csv"], "a")
    path = store.path
    store.close()
    with Store(path, read_only=True) as ro:
        assert summaries(ro)["a"].models == 4
        assert ro.cursor().execute("SELECT count(*) FROM dataset_summaries").fetchone()[0] == 0


def test_pair_counts_attached_files_and_older_rows(fresh, tmp_path):
    """``battles``: a pair-count dataset's outcomes summed (by hand here), a verdict dataset's valid
    verdicts. An attached dataset is counted over its files (pandas here), and while they cannot be read it
    is listed with nothing counted and nothing stored, then counted once they are back. A summary row stored
    before ``battles`` existed is counted again, not read."""
    store = fresh()
    db = store.path
    write_csv(tmp_path / "v.csv", [("p1", 0, 1, "A", "j1", ""), ("p2", 1, 2, "invalid", "j1", ""),
                                   ("p2", 2, 3, "tie", "j2", "")])
    import_files(store, [tmp_path / "v.csv"], "v")
    store.close()
    (tmp_path / "pc.csv").write_text("model_a,model_b,wins_a,wins_b,ties,both_bad\n"
                                     "m0,m1,3,2,1,4\nm1,m2,0,5,0,0\nm2,m0,7,1,2,1\n")
    run_engine(["--db", str(db), "import", str(tmp_path / "pc.csv"), "--dataset", "pc"], check=True)
    files = tmp_path / "att"
    files.mkdir()
    pd.DataFrame({"prompt_id": ["x", "y", "z", "z"], "model_a": ["m0", "m1", "m0", "m3"],
                  "model_b": ["m1", "m2", "m2", "m0"], "winner": ["A", "B", "error", "tie"],
                  "judge": ["j1", "j1", "j2", "j2"]}).to_parquet(files / "a.parquet")
    run_engine(["--db", str(db), "datasets", "attach", "at", str(files / "*.parquet")], check=True)
    got = listing(db)
    assert got["pc"]["battles"] == 3 + 2 + 1 + 4 + 5 + 7 + 1 + 2 + 1 and got["pc"]["verdicts"] == 0
    assert got["v"]["battles"] == 2 and got["v"]["verdicts"] == 3
    assert {k: got["at"][k] for k in ("verdicts", "invalid", "judges", "prompts", "models", "battles")} == {
        "verdicts": 4, "invalid": 1, "judges": 2, "prompts": 3, "models": 4, "battles": 3}

    def stored() -> set[str]:
        with Store(db) as s:
            return {r[0] for r in s.cursor().execute("SELECT dataset FROM dataset_summaries").fetchall()}

    (files / "a.parquet").rename(tmp_path / "away.parquet")
    with Store(db) as s:
        s.cursor().execute("DELETE FROM dataset_summaries WHERE dataset = 'at'")
    assert listing(db)["at"]["verdicts"] == 0 and "at" not in stored()  # listed, nothing counted or kept
    (tmp_path / "away.parquet").rename(files / "a.parquet")
    assert listing(db)["at"]["battles"] == 3 and "at" in stored()

    with Store(db) as s:  # a row of the shape before ``battles``, for the current version
        old = json.loads(s.cursor().execute("SELECT summary FROM dataset_summaries WHERE dataset = 'v'")
                         .fetchone()[0])
        del old["battles"]
        old["verdicts"] = 99
        s.cursor().execute("UPDATE dataset_summaries SET summary = ? WHERE dataset = 'v'", [json.dumps(old)])
    assert listing(db)["v"]["verdicts"] == 3 and listing(db)["v"]["battles"] == 2
