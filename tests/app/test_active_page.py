"""The Active judging page ("which calls next", app_pages/9_active.py) in AppTest on the shipped store: the
next batch it shows is the rows the command's replay would ask next (checked by running the replay), the
curves appear on request, and a pair-count dataset gets one sentence."""

from __future__ import annotations

import shutil

import pytest
from apphelpers import new_app
from conftest import run_engine

from engine.store.connection import Store

PAGE = "app_pages/9_active.py"


@pytest.fixture(scope="module")
def page(shipped_db):
    with pytest.MonkeyPatch.context() as mp:
        yield new_app(shipped_db, mp, PAGE, {"judge": "claude"})


def test_the_next_batch_is_what_a_replay_asks_next(page, shipped_db, tmp_path):
    """Strategy cycles, batch 20, 200 calls spent, seed 1: a replay of budget 220 with batch 20 asks the
    page's 20 rows in its last batch (its first 200 calls are the state the page starts from)."""
    page.selectbox(key="active_strategy").set_value("cycles")
    page.number_input(key="active_batch").set_value(20)
    page.number_input(key="active_spent").set_value(200)
    page.number_input(key="active_seed").set_value(1).run()
    assert [e.value for e in page.error] == [] and not page.exception
    shown = page.dataframe[0].value
    assert len(shown) == 20

    def run(budget: int):
        db = tmp_path / f"lens{budget}.duckdb"
        shutil.copyfile(shipped_db, db)
        done = run_engine(["--db", db, "judge", "--dataset", "out", "--backend", "replay", "--from-dataset",
                           "vicuna80", "--from-judge", "claude", "--select", "cycles", "--budget", budget,
                           "--batch", 20, "--seed", 1])
        assert done.returncode == 0, done.stderr
        with Store(db, read_only=True) as store:
            v = store.verdicts("out")
        return set(map(tuple, v[["prompt_id", "model_a", "model_b"]].astype(str).to_numpy()))

    last = run(220) - run(200)
    assert set(map(tuple, shown[["prompt_id", "model_a", "model_b"]].astype(str).to_numpy())) == last


def test_curves_on_request_and_a_pair_count_dataset_is_one_sentence(page):
    page.number_input(key="active_budget").set_value(200)
    page.button(key="active_run").click().run()
    assert not page.exception
    table = page.dataframe[1].value
    assert table["calls"].tolist() == list(range(0, 201, 10))
    assert set(table.columns) >= {"random", "round-robin", "swim", "uncertainty", "cycles"}
    assert (table.iloc[0, 1:] == 0.5).all()  # nothing revealed: Kendall distance of a random order
    page.sidebar.selectbox(key="dataset").set_value("chatbot_arena_2024_08_14").run()
    assert [e.value for e in page.error] and "pair counts" in page.error[0].value



def test_the_shown_first_model_is_the_order_columns(shipped_db, tmp_path, monkeypatch):
    """Audit 37: the table headed model_a "model A (shown first)" while rows of order BA show model B
    first (the stored verdict of that call names the same model_a with order BA). The first-shown model
    of every row, read from the stored verdicts, must be the one the headers and the order column name."""
    import json

    from seam_data import Shape, verdicts

    from engine.ingest import importer as ingest

    rows = verdicts(Shape(seed=5, n_models=6, n_prompts=12, orders="both"))
    db = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, db)
    with Store(db) as s:
        report = ingest.validate_file(rows.to_csv(index=False).encode(), "both.csv", dataset="both")
        assert ingest.store_report(s, report, "both").status == "stored"
        v = s.verdicts("both")
    at = new_app(db, monkeypatch, PAGE, {"dataset": "both"})
    at.number_input(key="active_batch").set_value(40).run()
    assert [e.value for e in at.error] == [] and not at.exception
    shown = at.dataframe[0].value
    stored = set(zip(v["prompt_id"].astype(str), v["model_a"], v["model_b"], v["order"], strict=True))
    first = {}
    for r in shown.itertuples():
        assert (str(r.prompt_id), r.model_a, r.model_b, r.order) in stored  # the call is a stored verdict
        first[r.Index] = r.model_a if r.order == "AB" else r.model_b
    assert any(first[i] == shown["model_b"][i] for i in first)  # some call shows model B first
    labels = {c: (cfg.get("label"), cfg.get("help", "")) for c, cfg in json.loads(
        at.dataframe[0].proto.columns).items()}
    assert "shown first" not in labels["model_a"][0]
    assert "AB model A, BA model B" in labels["order"][1]


def test_a_pool_of_several_turns_and_variants_shows_which_each_call_judges(tmp_path, migrated_empty_db):
    """The next batch of a pool whose prompts come in two variants and two turns: the variant and turn
    columns are shown beside the prompt (two calls would read the same without them), their values the
    engine's next batch's."""
    from test_active_curves import multi_instance_store

    db = multi_instance_store(tmp_path, migrated_empty_db)
    with pytest.MonkeyPatch.context() as mp:
        at = new_app(db, mp, PAGE, {"dataset": "t"})
    assert [e.value for e in at.error] == [] and not at.exception
    table = next(d for d in at.dataframe if "p_a_wins" in d.value.columns)
    assert list(table.proto.column_order[:3]) == ["prompt_id", "variant", "turn"]
    shown = table.value[["prompt_id", "variant", "turn", "model_a", "model_b"]]
    assert len(shown) > 1 and not shown.duplicated().any()  # each call told apart

