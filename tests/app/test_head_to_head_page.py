"""The Head-to-head page (AppTest) on the shipped vicuna80: its counts against a brute-force pandas count
of the stored verdicts, the pickers, the outcome filter, paging, the sidebar's judge, the texts and
rationales."""

from __future__ import annotations

import re

import pandas as pd
import pytest

# ruff: noqa: F811 - the fixtures imported from apphelpers are requested by name
from apphelpers import assert_clean, new_app, unescape_md

from engine.store.connection import Store
from engine.views.head_to_head import PAGE_SIZE, outcome_label

PAGE = "app_pages/8_head_to_head.py"


@pytest.fixture(scope="module")
def shared(shipped_db):
    """One app session on the shipped store for the read-only tests of this file (the app's first run
    computes the Leaderboard, the slowest part of a test here); each test sets the sidebar it needs."""
    with pytest.MonkeyPatch.context() as mp:
        yield new_app(shipped_db, mp, PAGE)


@pytest.fixture
def app(shared):
    """The shared session, its sidebar back on all judges and all categories."""
    from engine.views.appstate import ALL

    shared.query_params.clear()
    for key, start in (("h2h_outcomes", []), ("h2h_page", 1), ("h2h_by_outcome", False)):  # the page's own
        if key in shared.session_state:
            shared.session_state[key] = start
    for key in ("judge", "category"):
        if shared.sidebar.selectbox(key=key).value != ALL:
            shared.sidebar.selectbox(key=key).set_value(ALL).run()
    return shared


def pandas_counts(db, a: str, b: str, judge: str | None = None) -> dict:
    """Verdicts of a against b by result, win rate, prompts met and meetings (judge × prompt), by pandas."""
    with Store(db) as store:
        v = store.verdicts("vicuna80")
    v = v[((v["model_a"] == a) & (v["model_b"] == b)) | ((v["model_a"] == b) & (v["model_b"] == a))]
    if judge is not None:
        v = v[v["judge"] == judge]
    winner = v["model_a"].where(v["winner"] == "A", v["model_b"].where(v["winner"] == "B", v["winner"]))
    wins, losses, ties = int((winner == a).sum()), int((winner == b).sum()), int((winner == "tie").sum())
    return {"wins": wins, "losses": losses, "ties": ties, "rate": (wins + ties / 2) / (wins + losses + ties),
            "prompts": v["prompt_id"].nunique(), "meetings": len(v.groupby(["judge", "prompt_id"]))}


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _open(at, a: str | None = None, b: str | None = None):
    at = at.switch_page(PAGE).run()
    if a is not None:
        at.selectbox(key="h2h_a").set_value(a).run()
    if b is not None:
        at.selectbox(key="h2h_b").set_value(b).run()
    assert_clean(at)
    return at


def test_counts_on_top_match_pandas(app, shipped_db):
    at = _open(app, "gpt4", "vicuna-13b")
    want = pandas_counts(shipped_db, "gpt4", "vicuna-13b")
    assert _metrics(at) == {
        "Prompts": f"{want['prompts']:,}",
        "Meetings": f"{want['meetings']:,}",
        "Win rate of A": f"{want['rate']:.3f}",
    }
    ties = f"{want['ties']} tie{'s' if want['ties'] != 1 else ''}"
    assert (f"Verdicts: {want['wins']} gpt4 wins, {want['losses']} vicuna-13b wins, {ties}."
            in [unescape_md(c.value) for c in at.caption])
    # model B offers exactly the models A met, most prompts first
    with Store(shipped_db) as store:
        v = store.verdicts("vicuna80")
    met = pd.concat([v.loc[v["model_a"] == "gpt4", ["model_b", "prompt_id"]].set_axis(["m", "p"], axis=1),
                     v.loc[v["model_b"] == "gpt4", ["model_a", "prompt_id"]].set_axis(["m", "p"], axis=1)])
    per = met.groupby("m")["p"].nunique()
    options = at.selectbox(key="h2h_b").options
    assert sorted(re.sub(r" · .*", "", o) for o in options) == sorted(per.index)
    assert [int(re.search(r"met on (\d+)", o).group(1)) for o in options] == sorted(per, reverse=True)


def test_sidebar_judge_filters_and_pages_show_texts_and_rationales(app, shipped_db):
    at = app
    at.sidebar.selectbox(key="judge").set_value("gpt-4").run()
    at = _open(at, "claude", "bard")
    want = pandas_counts(shipped_db, "claude", "bard", judge="gpt-4")
    assert _metrics(at)["Meetings"] == str(want["meetings"])
    ties = f"{want['ties']} tie{'s' if want['ties'] != 1 else ''}"
    assert (f"Verdicts: {want['wins']} claude wins, {want['losses']} bard wins, {ties}."
            in [unescape_md(c.value) for c in at.caption])
    assert f"Prompts 1–{PAGE_SIZE} of 80 (in prompt-id order)." in [c.value for c in at.caption]
    # one expander per meeting (one judge here), closed: the page holds the prompts' texts and no verdict
    meetings = [e for e in at.expander if unescape_md(e.label).startswith("gpt-4: ")]
    assert len(meetings) == PAGE_SIZE
    with Store(shipped_db) as store:
        question = store.prompt_texts("vicuna80").set_index("prompt_id")["text"]["1"]
        answers = store.answer_texts("vicuna80", "1").set_index("model")["text"]
        why = store.verdicts("vicuna80", judge="gpt-4")
    texts = [t.value for t in at.text]  # st.text shows a text without its outer blank space
    assert texts[:3] == [x.strip() for x in (question, answers["claude"], answers["bard"])]
    assert len(texts) == 3 * PAGE_SIZE and not any(m.value.startswith("Verdict ") for m in at.markdown)
    # opening the first prompt's meeting draws its two verdicts with their rationales, and only those
    at.session_state[meetings[0].key] = True
    at.run()
    assert_clean(at)
    first = why[(why["prompt_id"] == "1") & why["model_a"].isin(["claude", "bard"])
                & why["model_b"].isin(["claude", "bard"])]["explanation"].tolist()
    opened = [t.value for t in at.text][3:5]
    assert len(first) == 2 and len(at.text) == 3 * PAGE_SIZE + 2 and sorted(opened) == sorted(
        x.strip() for x in first)
    shown = [m.value[:10] for m in at.markdown if m.value.startswith("Verdict ")]
    assert shown == ["Verdict 1 ", "Verdict 2 "]

    last = 80 // PAGE_SIZE
    at.number_input(key="h2h_page").set_value(last).run()
    assert_clean(at)
    first_shown = 80 - PAGE_SIZE + 1
    assert f"Prompts {first_shown}–80 of 80 (in prompt-id order)." in [c.value for c in at.caption]
    assert any(unescape_md(m.value).startswith(f"**prompt {first_shown} · ") for m in at.markdown)
    assert not any(m.value.startswith("Verdict ") for m in at.markdown)  # another page's meetings: closed


def test_with_every_judge_pooled_a_meeting_opens_its_own_judges_verdicts(app, shipped_db):
    """All judges pooled: a prompt holds one meeting per judge (five on vicuna80), each keyed apart; opening
    gpt-3.5-turbo's meeting on the first prompt draws that judge's rationales there, no other judge's."""
    at = _open(app, "claude", "bard")
    with Store(shipped_db) as store:
        v = store.verdicts("vicuna80")
    pair = v[v["model_a"].isin(["claude", "bard"]) & v["model_b"].isin(["claude", "bard"])
             & (v["prompt_id"] == "1")]
    assert pair["judge"].nunique() >= 3  # data on which the judges' meetings can be told apart
    labels = [unescape_md(e.label) for e in at.expander]
    judges = {label.split(": ", 1)[0] for label in labels if ": " in label}
    assert len(judges) >= 3 and judges <= set(v["judge"].unique())
    closed = len(at.text)
    target = next(e for e in at.expander if unescape_md(e.label).startswith("gpt-3.5-turbo: "))
    at.session_state[target.key] = True
    at.run()
    assert_clean(at)
    want = sorted(x.strip() for x in pair.loc[pair["judge"] == "gpt-3.5-turbo", "explanation"].dropna())
    others = {x.strip() for x in pair.loc[pair["judge"] != "gpt-3.5-turbo", "explanation"].dropna()}
    opened = [t.value for t in at.text][3:3 + len(want)]  # the first prompt's question and answers, then it
    assert want and sorted(opened) == want and len(at.text) == closed + len(want)
    assert not others & set(opened)


def test_outcome_filter_counts_prompts(app, shipped_db):
    at = _open(app, "gpt35", "guanaco-65b")
    with Store(shipped_db) as store:
        v = store.verdicts("vicuna80", judge="gpt-4")
    pair = v[v["model_a"].isin(["gpt35", "guanaco-65b"]) & v["model_b"].isin(["gpt35", "guanaco-65b"])]
    at.sidebar.selectbox(key="judge").set_value("gpt-4").run()
    at.pills(key="h2h_outcomes").set_value(["inconsistent"]).run()
    assert_clean(at)
    # brute force: a prompt where gpt-4's two orders gave different results
    res = pair.assign(first=pair["model_a"], res=pair["model_a"].where(
        pair["winner"] == "A", pair["model_b"].where(pair["winner"] == "B", "tie")))
    by_prompt = res.groupby("prompt_id")
    disagree = sum(1 for _, g in by_prompt if len(g) == 2 and g["res"].nunique() == 2)
    caption = [c.value for c in at.caption if c.value.startswith("Prompts ")]
    assert disagree > PAGE_SIZE  # more than a page
    assert caption == [f"Prompts 1–{PAGE_SIZE} of {disagree} (in prompt-id order)."]
    shown = [unescape_md(e.label) for e in at.expander if unescape_md(e.label).startswith("gpt-4: ")]
    assert len(shown) == PAGE_SIZE and all(label.startswith("gpt-4: orders disagree") for label in shown)
    assert at.pills(key="h2h_outcomes").value == ["inconsistent"]
    # the meetings by outcome, drawn once opened: its "orders disagree" row is the brute-force count
    assert len(at.dataframe) == 0
    at.session_state["h2h_by_outcome"] = True
    at.run()
    assert_clean(at)
    table = at.dataframe[0].value.set_index("outcome")
    assert table.loc[outcome_label("inconsistent", "gpt35", "guanaco-65b"), "meetings"] == disagree
    assert table["meetings"].sum() == by_prompt.ngroups == int(_metrics(at)["Meetings"])


def test_dataset_without_texts_says_so(tmp_path, monkeypatch):
    """An imported file without texts: each prompt says the dataset holds no text, no error."""
    from engine.ingest.importer import import_files
    from engine.ingest.shipped import open_store

    path = tmp_path / "v.csv"
    pd.DataFrame({"prompt_id": ["p1", "p1", "p2"], "model_a": ["x", "y", "x"], "model_b": ["y", "x", "y"],
                  "winner": ["A", "A", "tie"], "order": ["AB", "AB", "AB"], "judge": ["j", "j", "j"]}
                 ).to_csv(path, index=False)
    db = tmp_path / "lens.duckdb"
    with open_store(db, ensure_default=False) as store:
        import_files(store, [path], "small")
    at = new_app(db, monkeypatch)
    at.sidebar.selectbox(key="dataset").set_value("small").run()
    at = _open(at)
    assert _metrics(at) == {"Prompts": "2", "Meetings": "2", "Win rate of A": "0.500"}
    assert "Verdicts: 1 x wins, 1 y wins, 1 tie." in [unescape_md(c.value) for c in at.caption]
    captions = [c.value for c in at.caption]
    assert "The dataset holds no question or answer texts, so only the verdicts are shown." in captions
    assert "The dataset holds no text for this prompt." not in captions and at.text.len == 0
    labels = [unescape_md(e.label) for e in at.expander if unescape_md(e.label).startswith("j: ")]
    assert labels == ["j: orders disagree (2 verdicts; x shown first: x wins; y shown first: y wins)",
                      "j: tie (1 verdict; x shown first: tie)"]


@pytest.mark.parametrize("link", [{"model_a": "vicuna-13b", "model_b": "guanaco-7b"}])
def test_link_opens_the_pair(app, link):
    app.query_params.update(link)
    at = _open(app)
    assert (at.selectbox(key="h2h_a").value, at.selectbox(key="h2h_b").value) == (link["model_a"],
                                                                                  link["model_b"])


def test_page_beyond_a_smaller_selection_falls_back_to_its_last_page(app):
    """The last page of one pair, then a filter with fewer pages: the last page of the new list, no
    error."""
    at = _open(app, "gpt4", "claude")
    pages = 80 // PAGE_SIZE
    at.number_input(key="h2h_page").set_value(pages).run()
    at.pills(key="h2h_outcomes").set_value(["tie"]).run()  # ties only: fewer prompts
    assert_clean(at)
    caption = [c.value for c in at.caption if c.value.startswith("Prompts ")]
    total = int(re.search(r"of (\d+)", caption[0]).group(1))
    last_page = -(-total // PAGE_SIZE)
    assert last_page < pages and at.number_input(key="h2h_page").value == last_page
    assert caption == [f"Prompts {(last_page - 1) * PAGE_SIZE + 1}–{total} of {total} (in prompt-id order)."]


def test_prompts_with_variants_and_turns_are_counted_both_ways(tmp_path, monkeypatch):
    """audit38: on prompts with variants and turns the page said "met on 114 prompts" for 19 prompt ids.
    Now the prompt ids are "Prompts", the (prompt, variant, turn) graphs "Prompt graphs" (each an entry of
    the pages), both counted here from the rows, and model B's options say both."""
    from engine.ingest.importer import import_files
    from engine.ingest.shipped import open_store

    rows = [{"prompt_id": f"p{p}", "variant": v, "turn": t, "model_a": a, "model_b": b, "winner": w,
             "judge": "j"}
            for p in range(5) for v in range(3 if p < 3 else 1) for t in (1, 2)
            for (a, b), w in ((("x", "y"), "A"), (("y", "z"), "B"), (("x", "z"), "tie"))
            if not (p == 4 and a == "x" and b == "y")]
    frame = pd.DataFrame(rows)
    path = tmp_path / "v.csv"
    frame.to_csv(path, index=False)
    db = tmp_path / "lens.duckdb"
    with open_store(db, ensure_default=False) as store:
        import_files(store, [path], "turns")
    at = new_app(db, monkeypatch, PAGE, query={"dataset": "turns"})
    at = _open(at, "x", "y")
    met = frame[(frame["model_a"] == "x") & (frame["model_b"] == "y")]
    ids, graphs = met["prompt_id"].nunique(), len(met.drop_duplicates(["prompt_id", "variant", "turn"]))
    assert (ids, graphs) == (4, 20)  # the shape separates the counts
    figures = _metrics(at)
    assert (figures["Prompts"], figures["Prompt graphs"]) == (str(ids), str(graphs))
    options = {re.sub(r" · .*", "", o): o for o in at.selectbox(key="h2h_b").options}
    assert options["y"].endswith(f"met on {ids} prompts ({graphs} with variants and turns)")
    assert f"Prompt graphs 1–{PAGE_SIZE} of {graphs} (in prompt-id order)." in [c.value for c in at.caption]


def test_a_pair_met_on_several_turns_and_variants_names_both_on_every_entry(tmp_path, migrated_empty_db):
    """Dataset 't' (tests/test_active_curves.py): each prompt in two variants and two turns. Every entry on
    the page is headed by its prompt, variant and turn (the first turn's was headed by its prompt alone),
    and the page's headings are the (prompt, variant, turn) instances the two models met, in order."""
    from test_active_curves import multi_instance_store

    db = multi_instance_store(tmp_path, migrated_empty_db)
    with pytest.MonkeyPatch.context() as mp:
        at = new_app(db, mp, PAGE, {"dataset": "t", "model_a": "m0", "model_b": "m1"})
    assert_clean(at)
    heads = [unescape_md(m.value) for m in at.markdown if unescape_md(m.value).startswith("**prompt ")]
    want = [f"**prompt q{p} · variant {v}, turn {t}**" for p in range(6) for v in (0, 1) for t in (1, 2)]
    assert heads == want[: len(heads)] and len(heads) == min(len(want), PAGE_SIZE)


def test_a_later_turns_entry_shows_the_conversation_before_it(tmp_path):
    """Verdicts on turn 2 of prompts whose two turns and both models' answers are stored: each entry shows,
    folded above the turn's question and answers, turn 1's question and each model's own turn-1 answer (what
    a judge of the turn is shown); a turn-1 entry has no such fold."""
    from engine.ingest.importer import import_files
    from engine.ingest.shipped import open_store
    from engine.judging.persist import write_answers, write_prompts

    db = tmp_path / "lens.duckdb"
    rows = pd.DataFrame([{"prompt_id": p, "turn": t, "model_a": "x", "model_b": "y", "winner": "A",
                          "judge": "j"} for p in ("p1", "p2") for t in (1, 2)])
    rows.to_csv(tmp_path / "v.csv", index=False)
    with open_store(db, ensure_default=False) as store:
        import_files(store, [tmp_path / "v.csv"], "mt")
        write_prompts(store, "mt", pd.DataFrame({"prompt_id": ["p1", "p1", "p2", "p2"], "turn": [1, 2, 1, 2],
                                                 "category": "c", "text": ["Q11", "Q12", "Q21", "Q22"]}))
        write_answers(store, "mt", pd.DataFrame(
            [{"prompt_id": p, "turn": t, "model": m, "text": f"{m}{p}{t}"} for p in ("p1", "p2")
             for t in (1, 2) for m in ("x", "y")]))
    with pytest.MonkeyPatch.context() as mp:
        at = new_app(db, mp, PAGE, {"dataset": "mt", "model_a": "x", "model_b": "y"})
    assert_clean(at)
    folds = [e for e in at.expander if e.label == "Turn 1: the conversation before this turn"]
    assert len(folds) == 2  # one per turn-2 entry, none for the turn-1 entries
    for fold, p in zip(folds, ("p1", "p2"), strict=True):
        assert [t.value for t in fold.text] == [f"Q{p[1]}1", f"x{p}1", f"y{p}1"]
    assert [t.value for t in at.text if t.value.startswith("Q")] == ["Q11", "Q11", "Q12", "Q21", "Q21", "Q22"]
