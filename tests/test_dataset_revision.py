"""Versions counted per dataset (issue 14 item 4): each dataset shows 1, 2, 3 for its own changes,
while the store-wide number that keys caches never names two contents under one name."""

from __future__ import annotations

from pathlib import Path

import duckdb
from conftest import run_engine

from engine.ingest.importer import dataset_table, delete_dataset, import_files, rename_dataset
from engine.store.connection import Store
from engine.views.dataview import datasets_view


def _file(tmp_path: Path, name: str, prompt: str) -> Path:
    path = tmp_path / name
    path.write_text(f"prompt_id,model_a,model_b,winner,judge\n{prompt},a,b,A,j\n{prompt},b,c,tie,j\n",
                    encoding="utf-8")
    return path


def test_each_dataset_counts_its_own_changes(tmp_path: Path) -> None:
    seen: set[tuple[str, int]] = set()
    with Store(tmp_path / "s.duckdb") as s:
        def step(name: str) -> tuple[int, int]:
            key = (name, s.dataset_version(name))
            assert key not in seen  # a (name, store version) pair never comes back
            seen.add(key)
            return s.dataset_revision(name), s.dataset_version(name)

        r = import_files(s, [_file(tmp_path, "a1.csv", "1")], "alpha")
        assert r.revision == 1 and step("alpha")[0] == 1
        import_files(s, [_file(tmp_path, "b1.csv", "1")], "beta")  # another dataset: its own count
        assert step("beta")[0] == 1
        r = import_files(s, [_file(tmp_path, "a2.csv", "2")], "alpha")  # added rows
        assert r.revision == 2 and step("alpha")[0] == 2
        import_files(s, [_file(tmp_path, "a3.csv", "3")], "alpha", replace=True)
        assert step("alpha")[0] == 3
        rename_dataset(s, "alpha", "gamma")
        assert step("gamma")[0] == 4
        assert s.dataset_revision("beta") == 1
        table = dataset_table(s).set_index("name")["version"].to_dict()
        assert table == {"beta": 1, "gamma": 4}
        shown = datasets_view(s.datasets()).set_index("name")["version"].to_dict()
        assert shown == table
        delete_dataset(s, "gamma")
        import_files(s, [_file(tmp_path, "g1.csv", "9")], "gamma")  # a new dataset under an old name
        rev, version = step("gamma")
        assert rev == 1 and version > 5  # shown as 1 again; the cache number is new


def test_cli_prints_the_per_dataset_version(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    run = ["--db", str(db)]
    for name, prompt in (("x", "1"), ("y", "1"), ("y", "2")):
        out = run_engine(
            [*run, "import", str(_file(tmp_path, f"{name}{prompt}.csv", prompt)), "--dataset", name],
            check=True,
        ).stdout
    assert "dataset 'y' is now version 2" in out
    listing = run_engine([*run, "datasets", "--format", "csv"], check=True).stdout
    rows = {line.split(",")[0]: line.split(",")[1] for line in listing.splitlines()[1:]}
    assert rows["x"] == "1" and rows["y"] == "2"
    assert rows["vicuna80"] == "1"  # the shipped import, also its first version


def test_migration_counts_stored_imports_of_existing_datasets(tmp_path: Path) -> None:
    """A store made before the per-dataset count gets it from its import log."""
    db = tmp_path / "old.duckdb"
    with Store(db) as s:
        for i in range(3):
            import_files(s, [_file(tmp_path, f"o{i}.csv", str(i))], "old")
    con = duckdb.connect(str(db))
    con.execute("UPDATE datasets SET revision = NULL")
    con.execute("DELETE FROM schema_migrations WHERE name = 'dataset_revision'")
    con.execute("ALTER TABLE datasets DROP COLUMN revision")
    con.close()
    with Store(db) as s:
        assert s.dataset_revision("old") == 3
