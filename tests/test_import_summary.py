"""``python -m engine import`` stores the new version's dataset summary (``engine.store.summaries``) before it
returns, so the first ``datasets`` listing or leaderboard after an import reads one row instead of counting
every verdict (issue 26, point 6: seconds at ten million rows). The stored row must equal a recount of the
stored verdicts, for the version the import made, and a replace must leave only the new version's row."""

from __future__ import annotations

import shutil

from conftest import run_engine

from engine.store.connection import Store
from engine.store.summaries import DatasetSummary, count_summary


def stored_rows(db) -> list[tuple]:
    with Store(db) as s:
        return s.cursor().execute("SELECT dataset, version, summary FROM dataset_summaries ORDER BY 1, 2") \
            .fetchall()


def test_the_import_stores_its_summary(tmp_path, migrated_empty_db):
    db = tmp_path / "lens.duckdb"
    shutil.copyfile(migrated_empty_db, db)
    (tmp_path / "a.csv").write_text("prompt_id,model_a,model_b,winner,judge,category\n"
                                    "p1,m0,m1,A,j1,math\np2,m1,m2,tie,j2,\np2,m0,m2,invalid,j2,\n")
    (tmp_path / "b.csv").write_text("prompt_id,model_a,model_b,winner,judge\np9,m3,m4,B,j7\n")
    for csv, extra in (("a.csv", []), ("b.csv", ["--replace"])):
        run_engine(["--db", str(db), "import", str(tmp_path / csv), "--dataset", "d", *extra], check=True)
        rows = stored_rows(db)
        with Store(db) as s:
            version, recount = s.dataset_version("d"), count_summary(s.cursor(), "d")
        assert [(d, v) for d, v, _ in rows] == [("d", version)]
        assert DatasetSummary.from_json(rows[0][2]) == recount
    assert recount.models == 2 and recount.judges == 1  # the replaced rows' summary, not the first one's
