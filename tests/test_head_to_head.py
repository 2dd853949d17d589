"""engine.views.head_to_head and the ``head-to-head`` command against a brute-force count in plain Python.

Random verdict files (two judges, four models, both presentation orders, several verdicts per order, orders
not recorded, unparsable verdicts) are imported through the real importer (and attached as Parquet, the
in-place path); every number the browser shows (verdict counts, the win rate, meetings by outcome, the
prompts where the two met, each meeting's result in each order, the pages) is recomputed here by loops over
the rows, independently of the SQL.
"""

from __future__ import annotations

import csv
import io
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from conftest import run_engine

from engine.errors import LensError
from engine.ingest.importer import import_files
from engine.store.attached import attach
from engine.views.head_to_head import (
    OUTCOMES,
    Matchup,
    meeting_label,
    meeting_table,
    n_prompts,
    opponents,
    prompt_page,
    summary,
)

MODELS = ("m0", "m1", "m2", "m3")


def random_verdicts(seed: int, n_prompts: int = 23) -> pd.DataFrame:
    """Verdict rows in the import's field names: each judge sees each pair in 0-2 orders, 1-3 times per
    order; some rows carry no order; winners include ties and unparsable outputs ('error')."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(n_prompts):
        for judge in ("j1", "j2"):
            for i, x in enumerate(MODELS):
                for y in MODELS[i + 1:]:
                    if rng.random() < 0.25:
                        continue
                    orders = [("AB", "BA"), ("AB",), ("BA",), ("",)][int(rng.integers(4))]
                    for order in orders:
                        for _ in range(1 + int(rng.integers(3) if rng.random() < 0.4 else 0)):
                            first, second = (x, y) if rng.random() < 0.5 else (y, x)
                            rows.append({
                                "judge": judge, "prompt_id": str(p * 7 % n_prompts), "category": f"c{p % 3}",
                                "model_a": first, "model_b": second, "order": order,
                                "winner": rng.choice(["A", "B", "tie", "error"], p=[0.4, 0.35, 0.17, 0.08]),
                                "explanation": f"why {judge} {p} {first} {second} {len(rows)}",
                            })
    return pd.DataFrame(rows)


def brute(rows: pd.DataFrame, a: str, b: str, judge=None, category=None) -> dict:
    """Everything the browser counts, by loops over the rows (no SQL, no grouping library)."""
    def plurality(results: list[str]) -> str | None:
        valid = [r for r in results if r != "invalid"]
        if not valid:
            return None
        counts = Counter(valid).most_common()
        if len(counts) > 1 and counts[0][1] == counts[1][1]:
            return "tie"
        return counts[0][0]

    verdicts = Counter()
    meetings: dict[tuple, dict] = {}
    for r in rows.to_dict("records"):
        if {r["model_a"], r["model_b"]} != {a, b}:
            continue
        if judge is not None and r["judge"] != judge or category is not None and r["category"] != category:
            continue
        w = r["winner"]
        if w == "tie":
            res = "tie"
        elif w in ("A", "B"):
            winner = r["model_a"] if w == "A" else r["model_b"]
            res = "a_wins" if winner == a else "b_wins"
        else:
            res = "invalid"
        verdicts[res] += 1
        shown_first = {"AB": r["model_a"], "BA": r["model_b"]}.get(r["order"] or "")
        key = (r["judge"], str(r["prompt_id"]), 0, 1)
        m = meetings.setdefault(key, {"all": [], a: [], b: [], None: []})
        m["all"].append(res)
        m[shown_first].append(res)
    out = {}
    for key, m in meetings.items():
        when_a, when_b = plurality(m[a]), plurality(m[b])
        if plurality(m["all"]) is None:
            outcome = "invalid"
        elif when_a is not None and when_b is not None and when_a != when_b:
            outcome = "inconsistent"
        else:
            outcome = plurality(m["all"])
        out[key] = {"outcome": outcome, "when_a_first": when_a, "when_b_first": when_b,
                    "n_verdicts": len(m["all"]), "a_wins": m["all"].count("a_wins"),
                    "b_wins": m["all"].count("b_wins"), "tie": m["all"].count("tie")}
    valid = verdicts["a_wins"] + verdicts["b_wins"] + verdicts["tie"]
    return {"verdicts": verdicts, "meetings": out,
            "win_rate": None if not valid else (verdicts["a_wins"] + verdicts["tie"] / 2) / valid,
            "prompts": len({k[1:] for k in out})}


def _natural(key: tuple) -> tuple:
    judge, p, v, t = key
    return (int(p), p, v, t, judge)


def _stored(store, tmp_path, rows: pd.DataFrame, name: str, how: str) -> str:
    """Import the rows as a CSV (the importer) or attach them as Parquet (read in place)."""
    if how == "import":
        path = tmp_path / f"{name}.csv"
        rows.to_csv(path, index=False)
        import_files(store, [path], name)
    else:
        path = tmp_path / f"{name}.parquet"
        rows.assign(order=rows["order"].replace("", None)).to_parquet(path)
        attach(store, name, str(path))
    return name


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("how", ["import", "attach"])
def test_counts_and_meetings_match_bruteforce(empty_store, tmp_path, seed, how):
    rows = random_verdicts(seed)
    name = _stored(empty_store, tmp_path, rows, f"d{seed}", how)
    choices = (("m0", "m1", None, None), ("m2", "m0", "j2", None), ("m3", "m1", None, "c1"))
    for a, b, judge, category in choices:
        m = Matchup(name, a, b, judge, category)
        want = brute(rows, a, b, judge, category)
        s = summary(empty_store, m)
        assert s.verdicts == {k: want["verdicts"][k] for k in ("a_wins", "b_wins", "tie", "invalid")}
        assert s.win_rate == pytest.approx(want["win_rate"])
        assert s.prompts == want["prompts"]
        by_outcome = Counter(x["outcome"] for x in want["meetings"].values())
        assert s.meetings == {o: by_outcome[o] for o in OUTCOMES}
        assert sum(s.meetings.values()) == len(want["meetings"])

        table = meeting_table(empty_store, m)
        keys = [(r.judge, r.prompt_id, r.variant, r.turn) for r in table.itertuples(index=False)]
        assert keys == sorted(want["meetings"], key=_natural)  # prompts by number, then judges
        for key, r in zip(keys, table.to_dict("records"), strict=True):
            got = {k: (None if pd.isna(r[k]) else r[k]) for k in want["meetings"][key]}
            assert got == want["meetings"][key], key

        for outcome in OUTCOMES:
            chosen = {k for k, x in want["meetings"].items() if x["outcome"] == outcome}
            sub = meeting_table(empty_store, m, [outcome])
            assert {(r.judge, r.prompt_id, 0, 1) for r in sub.itertuples(index=False)} == chosen
            assert n_prompts(empty_store, m, [outcome]) == len({k[1] for k in chosen})


@pytest.mark.parametrize("how", ["import", "attach"])
def test_pages_cover_every_meeting_once_with_its_verdicts(empty_store, tmp_path, how):
    rows = random_verdicts(5)
    name = _stored(empty_store, tmp_path, rows, "paged", how)
    m = Matchup(name, "m1", "m2")
    want = brute(rows, "m1", "m2")
    for outcomes, size in ((None, 4), (["inconsistent", "tie"], 3)):
        seen = []
        total = n_prompts(empty_store, m, outcomes)
        pages = -(-total // size)
        for page in range(pages):
            got = prompt_page(empty_store, m, outcomes, page, size)
            assert len({(p.prompt_id, p.variant, p.turn) for p in got}) == len(got)  # each prompt once a page
            assert len(got) == min(size, total - page * size)  # full pages, then the remainder
            for p in got:
                for meeting in p.meetings:
                    key = (meeting.judge, p.prompt_id, p.variant, p.turn)
                    seen.append(key)
                    x = want["meetings"][key]
                    assert (meeting.outcome, meeting.when_a_first, meeting.when_b_first) == (
                        x["outcome"], x["when_a_first"], x["when_b_first"])
                    assert len(meeting.verdicts) == x["n_verdicts"]
                    assert Counter(v.result for v in meeting.verdicts) == Counter(
                        {k: x[k] for k in ("a_wins", "b_wins", "tie") if x[k]}
                        | ({"invalid": x["n_verdicts"] - x["a_wins"] - x["b_wins"] - x["tie"]}
                           if x["n_verdicts"] > x["a_wins"] + x["b_wins"] + x["tie"] else {}))
                    assert meeting_label(meeting, "m1", "m2").startswith(meeting.judge)
        assert prompt_page(empty_store, m, outcomes, pages, size) == []
        chosen = [k for k, x in want["meetings"].items() if outcomes is None or x["outcome"] in outcomes]
        assert seen == sorted(chosen, key=_natural)


def test_each_verdict_keeps_its_order_and_rationale(empty_store, tmp_path):
    """Who was shown first and the rationale of every verdict on a page are the file's, row for row."""
    rows = random_verdicts(7, n_prompts=6)
    name = _stored(empty_store, tmp_path, rows, "why", "import")
    got = []
    for p in prompt_page(empty_store, Matchup(name, "m0", "m3"), size=100):
        for meeting in p.meetings:
            got += [(meeting.judge, p.prompt_id, v.first, v.rationale) for v in meeting.verdicts]
    mine = rows[rows[["model_a", "model_b"]].apply(set, axis=1) == {"m0", "m3"}]
    want = [(r["judge"], r["prompt_id"], {"AB": r["model_a"], "BA": r["model_b"]}.get(r["order"]),
             r["explanation"]) for r in mine.to_dict("records")]
    assert sorted(got, key=str) == sorted(want, key=str)


def test_shipped_texts_sit_beside_the_verdicts(shipped_store):
    """vicuna80: each prompt shows its stored question and the two models' own answers."""
    m = Matchup("vicuna80", "gpt4", "claude", judge="gpt-4")
    page = prompt_page(shipped_store, m, page=1, size=5)
    questions = shipped_store.prompt_texts("vicuna80").set_index("prompt_id")["text"]
    answers = shipped_store.answer_texts("vicuna80").set_index(["prompt_id", "model"])["text"]
    assert [p.prompt_id for p in page] == ["6", "7", "8", "9", "10"]
    for p in page:
        assert p.question == questions[p.prompt_id]
        assert (p.answer_a, p.answer_b) == (answers[(p.prompt_id, "gpt4")], answers[(p.prompt_id, "claude")])
        assert [x.judge for x in p.meetings] == ["gpt-4"]
        assert all(v.rationale for x in p.meetings for v in x.verdicts)


def test_opponents_count_prompts_met(empty_store, tmp_path):
    rows = random_verdicts(3)
    name = _stored(empty_store, tmp_path, rows, "opp", "import")
    got = opponents(empty_store, name, "m0")
    for r in got.itertuples(index=False):
        mine = rows[rows[["model_a", "model_b"]].apply(set, axis=1) == {"m0", r.model}]
        assert (r.prompts, r.verdicts) == (mine["prompt_id"].nunique(), len(mine))
    assert sorted(got["model"]) == ["m1", "m2", "m3"]


def test_bad_requests_are_one_sentence(shipped_store):
    with pytest.raises(LensError, match="two different models"):
        summary(shipped_store, Matchup("vicuna80", "gpt4", "gpt4"))
    with pytest.raises(LensError, match="Unknown outcome"):
        meeting_table(shipped_store, Matchup("vicuna80", "gpt4", "claude"), ["won"])
    with pytest.raises(LensError, match="no page"):
        prompt_page(shipped_store, Matchup("vicuna80", "gpt4", "claude"), page=-1)


def test_cli_table_and_note_match_bruteforce(shipped_db):
    db = ["--db", str(shipped_db)]
    run = run_engine([*db, "head-to-head", "--model-a", "bard", "--model-b", "gpt35", "--format", "csv"])
    assert run.returncode == 0, run.stderr
    from engine.store.connection import Store

    with Store(shipped_db) as store:
        rows = store.verdicts("vicuna80")
    rows = rows.astype({"order": object}).assign(
        winner=rows["winner"].replace("invalid", "error"), order=rows["order"].fillna(""))
    want = brute(rows, "bard", "gpt35")
    table = list(csv.DictReader(io.StringIO(run.stdout)))
    assert len(table) == len(want["meetings"])
    assert Counter(r["outcome"] for r in table) == Counter(x["outcome"] for x in want["meetings"].values())
    v = want["verdicts"]
    ties = f"{v['tie']} tie{'s' if v['tie'] != 1 else ''}"
    assert (f"verdicts {v['a_wins']} bard wins, {v['b_wins']} gpt35 wins, {ties}, "
            f"{v['invalid']} invalid; bard's win rate {want['win_rate']:.3f}.") in run.stderr
    assert f"{want['prompts']} prompts, {len(want['meetings'])} meetings" in run.stderr

    some = run_engine([*db, "head-to-head", "--model-a", "bard", "--model-b", "gpt35", "--judge", "human",
                       "--outcome", "tie", "--outcome", "b_wins", "--limit", "3", "--format", "csv"])
    got = list(csv.DictReader(io.StringIO(some.stdout)))
    human = sorted((k for k, x in brute(rows, "bard", "gpt35", judge="human")["meetings"].items()
                    if x["outcome"] in ("tie", "b_wins")), key=_natural)[:3]
    assert [(r["judge"], r["prompt_id"]) for r in got] == [k[:2] for k in human]


@pytest.mark.parametrize(("args", "needle"), [
    (["--model-a", "gpt-5", "--model-b", "bard"], "has no model 'gpt-5' (--model-a)"),
    (["--model-a", "bard", "--model-b", "gpt35", "--judge", "gpt4"], "has no judge 'gpt4'"),
    (["--model-a", "bard", "--model-b", "bard"], "two different models"),
    (["--model-a", "bard", "--model-b", "gpt35", "--limit", "-1"], "must not be negative"),
    (["--dataset", "nope", "--model-a", "bard", "--model-b", "gpt35"], "no dataset named 'nope'"),
])
def test_cli_refuses_in_one_sentence(shipped_db, args, needle):
    run = run_engine(["--db", str(shipped_db), "head-to-head", *args])
    assert run.returncode == 2
    assert needle in run.stderr and run.stderr.count("\n") == 1
    assert run.stdout == ""


def test_cli_two_models_that_never_met(shipped_db):
    """guanaco-7b and claude share no verdict in vicuna80: one note, an empty table, exit 0."""
    run = run_engine(["--db", str(shipped_db), "head-to-head", "--model-a", "guanaco-7b",
                      "--model-b", "claude", "--format", "csv"])
    assert run.returncode == 0
    assert run.stderr == "note: guanaco-7b and claude never met in this selection.\n"
    assert run.stdout.strip().splitlines() == [
        "judge,prompt_id,variant,turn,category,n_verdicts,a_wins,b_wins,tie,when_a_first,when_b_first,outcome"]


def test_cli_note_counts_prompt_ids_and_prompt_graphs(tmp_path):
    """audit38: the note said "114 prompts" for 19 prompt ids with 3 variants and 2 turns each; now the
    prompt ids and, where they differ, the (prompt, variant, turn) graphs, both counted here from the rows
    (and the opponents' listing likewise)."""
    from engine.ingest.shipped import open_store

    rows = pd.DataFrame([{"prompt_id": f"p{p}", "variant": v, "turn": t, "model_a": "x", "model_b": "y",
                          "winner": "A", "judge": "j"}
                         for p in range(4) for v in range(1 + p % 2) for t in range(1, 3)])
    path = tmp_path / "v.csv"
    rows.to_csv(path, index=False)
    db = tmp_path / "lens.duckdb"
    with open_store(db, ensure_default=False) as store:
        import_files(store, [path], "turns")
        mine = opponents(store, "turns", "x").iloc[0]
    ids, graphs = rows["prompt_id"].nunique(), len(rows.drop_duplicates(["prompt_id", "variant", "turn"]))
    assert (ids, graphs) == (4, 12)
    assert (mine["prompts"], mine["prompt_ids"]) == (graphs, ids)
    run = run_engine(["--db", str(db), "head-to-head", "--dataset", "turns", "--model-a", "x",
                      "--model-b", "y", "--format", "csv"])
    assert run.returncode == 0, run.stderr
    assert f"x vs y: {ids} prompts ({graphs} with variants and turns), {graphs} meetings" in run.stderr


@pytest.mark.parametrize("how", ["import", "attach"])
def test_cli_refuses_an_unknown_model_of_a_stored_or_attached_dataset(empty_store, tmp_path, how):
    """The model names come from the dataset's rows or, attached, its files: an unknown one is one sentence
    listing the models the rows name (an attached dataset's read as two models that never met)."""
    rows = random_verdicts(0)
    name = _stored(empty_store, tmp_path, rows, "d", how)
    db = str(empty_store.path)
    empty_store.close()
    run = run_engine(["--db", db, "head-to-head", "--dataset", name, "--model-a", "nope", "--model-b", "m1"])
    known = sorted(set(rows["model_a"]) | set(rows["model_b"]))
    assert run.returncode == 2 and run.stdout == ""
    more = f" and {len(known) - 12} more" if len(known) > 12 else ""
    assert run.stderr == (f"error: Dataset 'd' has no model 'nope' (--model-a); its models are "
                          f"{', '.join(known[:12])}{more}.\n")
