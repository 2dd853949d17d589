"""engine.graphs.stack: how verdicts on one pair combine (every policy, hand-worked and against a tiny
independent implementation), graphs with only invalid verdicts, the category rule, and the
``policy`` column of the ``graphs`` command."""

from __future__ import annotations

import io
import itertools
import shutil
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from engine.__main__ import main
from engine.graphs.stack import COMBINE_POLICIES, build_stack, majority_label
from engine.ingest.importer import import_files
from engine.store.connection import Store
from engine.store.schema import DEFAULT_DATASET


def frame(rows: list[tuple], judge: str = "j") -> pd.DataFrame:
    """(prompt_id, model_a, model_b, winner[, order[, category]]) rows → a canonical verdict frame."""
    recs = []
    for r in rows:
        prompt, a, b, w = r[:4]
        recs.append({"dataset": "d", "judge": judge, "prompt_id": prompt, "variant": 0, "turn": 1,
                     "category": r[5] if len(r) > 5 else "c", "variant_kind": "original",
                     "model_a": a, "model_b": b, "winner": w, "order": r[4] if len(r) > 4 else None,
                     "prob_a": np.nan})
    return pd.DataFrame(recs)


def reference_outcome(winners: list[str], policy: str) -> str | None:
    """The policy as README.md, "Data format", states it, written out plainly. ``winners`` are the verdicts on
    one
    pair seen from one side: 'me', 'other' or 'tie' ('invalid' is ignored). None: no edge."""
    votes = [w for w in winners if w != "invalid"]
    if not votes:
        return None
    c = Counter(votes)
    if policy == "plurality":
        top = max(c.values())
        leaders = [k for k, v in c.items() if v == top]
        return leaders[0] if len(leaders) == 1 else "tie"
    if policy == "net":
        if c["me"] == c["other"]:
            return "tie"
        return "me" if c["me"] > c["other"] else "other"
    if policy == "unanimous":
        return votes[0] if len(set(votes)) == 1 and votes[0] != "tie" else "tie"
    raise AssertionError(policy)


def edge(stack, t: int, x: str, y: str) -> str | None:
    """What graph t says about x vs y: 'me' (x beat y), 'other', 'tie', or None (not compared)."""
    i, j = stack.models.index(x), stack.models.index(y)
    if not stack.observed[t, i, j]:
        assert not stack.adj[t, i, j] and not stack.adj[t, j, i]
        return None
    fwd, back = bool(stack.adj[t, i, j]), bool(stack.adj[t, j, i])
    assert fwd or back
    return "tie" if fwd and back else ("me" if fwd else "other")


# Hand-worked cases: the verdicts on the pair (x, y), as (model_a, model_b, winner, order), and the
# combined outcome from x's side under each policy.
HAND = [
    (
        "AB and BA agree",
        [("x", "y", "A", "AB"), ("x", "y", "A", "BA")],
        {"plurality": "me", "net": "me", "unanimous": "me"},
    ),
    (
        "agree, BA row written with swapped columns",
        [("x", "y", "A", "AB"), ("y", "x", "B", "BA")],
        {"plurality": "me", "net": "me", "unanimous": "me"},
    ),
    (
        "orders disagree",
        [("x", "y", "A", "AB"), ("x", "y", "B", "BA")],
        {"plurality": "tie", "net": "tie", "unanimous": "tie"},
    ),
    (
        "A, A, B",
        [("x", "y", "A"), ("x", "y", "A"), ("x", "y", "B")],
        {"plurality": "me", "net": "me", "unanimous": "tie"},
    ),
    (
        "A, B, tie",
        [("x", "y", "A"), ("x", "y", "B"), ("x", "y", "tie")],
        {"plurality": "tie", "net": "tie", "unanimous": "tie"},
    ),
    (
        "A, A, tie, tie",
        [("x", "y", "A"), ("x", "y", "A"), ("x", "y", "tie"), ("x", "y", "tie")],
        {"plurality": "tie", "net": "me", "unanimous": "tie"},
    ),
    (
        "A, A, tie",
        [("x", "y", "A"), ("x", "y", "A"), ("x", "y", "tie")],
        {"plurality": "me", "net": "me", "unanimous": "tie"},
    ),
    (
        "tie, tie, B",
        [("x", "y", "tie"), ("x", "y", "tie"), ("x", "y", "B")],
        {"plurality": "tie", "net": "other", "unanimous": "tie"},
    ),
    (
        "B, B, B, A, tie",
        [("x", "y", "B")] * 3 + [("x", "y", "A"), ("x", "y", "tie")],
        {"plurality": "other", "net": "other", "unanimous": "tie"},
    ),
    ("one tie", [("x", "y", "tie")], {"plurality": "tie", "net": "tie", "unanimous": "tie"}),
    (
        "invalid ignored",
        [("x", "y", "A"), ("x", "y", "invalid"), ("x", "y", "invalid")],
        {"plurality": "me", "net": "me", "unanimous": "me"},
    ),
    (
        "invalid does not break a disagreement",
        [("x", "y", "A"), ("y", "x", "A"), ("x", "y", "invalid")],
        {"plurality": "tie", "net": "tie", "unanimous": "tie"},
    ),
]


def test_every_policy_is_covered_by_the_hand_cases():
    assert set(COMBINE_POLICIES) == {"plurality", "net", "unanimous"}
    assert all(set(expect) == set(COMBINE_POLICIES) for _, _, expect in HAND)


@pytest.mark.parametrize("policy", sorted(COMBINE_POLICIES))
@pytest.mark.parametrize(("name", "verdicts", "expect"), HAND, ids=[h[0] for h in HAND])
def test_hand_worked_combinations(policy, name, verdicts, expect):
    # a third model keeps the graph non-trivial and checks that only the (x, y) pair is combined
    rows = [("p", *v) for v in verdicts] + [("p", "x", "z", "A"), ("p", "z", "y", "tie")]
    stack = build_stack(frame(rows), policy=policy)
    assert stack.T == 1 and stack.policy == policy
    assert edge(stack, 0, "x", "y") == expect[policy]
    assert edge(stack, 0, "y", "x") == {"me": "other", "other": "me", "tie": "tie"}[expect[policy]]
    assert (edge(stack, 0, "x", "z"), edge(stack, 0, "z", "y")) == ("me", "tie")
    # and the tiny implementation agrees with the hand-worked answer
    side = [{"A": "me" if a == "x" else "other", "B": "other" if a == "x" else "me"}.get(w, w)
            for a, _, w, *_ in verdicts]
    assert reference_outcome(side, policy) == expect[policy]


@pytest.mark.parametrize("policy", sorted(COMBINE_POLICIES))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_multi_verdict_graphs_match_the_reference(policy, seed):
    """Random graphs, 0-5 verdicts per pair in random column orientation, invalid ones mixed in:
    every pair of every graph equals the reference implementation's outcome."""
    rng = np.random.default_rng(seed)
    models = ["m0", "m1", "m2", "m3", "m4"]
    rows, truth = [], {}
    for p in range(40):
        for x, y in itertools.combinations(models, 2):
            side = []
            for _ in range(int(rng.integers(0, 6))):
                w = str(rng.choice(["me", "other", "tie", "invalid"], p=[0.35, 0.3, 0.25, 0.1]))
                side.append(w)
                if rng.random() < 0.5:  # x written as model_a
                    rows.append((f"p{p}", x, y, {"me": "A", "other": "B"}.get(w, w)))
                else:
                    rows.append((f"p{p}", y, x, {"me": "B", "other": "A"}.get(w, w)))
            truth[(f"p{p}", x, y)] = reference_outcome(side, policy)
    verdicts = frame(rows).sample(frac=1.0, random_state=seed).reset_index(drop=True)
    stack = build_stack(verdicts, policy=policy)
    prompts = stack.keys["prompt_id"].tolist()
    for (prompt, x, y), want in truth.items():
        if prompt not in prompts:  # every verdict of that prompt was invalid or absent
            assert want is None or all(
                truth[(prompt, a, b)] is None for a, b in itertools.combinations(models, 2))
            continue
        assert edge(stack, prompts.index(prompt), x, y) == want, (prompt, x, y)
    # the counts per graph: valid verdicts in n_verdicts, invalid ones in n_invalid
    counted = verdicts.groupby("prompt_id")["winner"].agg(lambda w: int((w != "invalid").sum()))
    assert stack.keys.set_index("prompt_id")["n_verdicts"].to_dict() == {
        k: v for k, v in counted.items() if v > 0}


def test_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="Unknown combine policy 'mode'"):
        build_stack(frame([("p", "x", "y", "A")]), policy="mode")


# -- graphs whose verdicts are all invalid -------------------------------------------------------
def invalid_total(stack) -> int:
    return int(stack.keys["n_invalid"].sum()) + int(stack.invalid_only["n_invalid"].sum())


def test_a_graph_with_only_invalid_verdicts_is_carried_separately():
    rows = [("p1", "x", "y", "A"), ("p1", "y", "z", "invalid"),
            ("p2", "x", "y", "invalid"), ("p2", "y", "z", "invalid"), ("p2", "x", "z", "invalid")]
    stack = build_stack(frame(rows))
    assert stack.keys["prompt_id"].tolist() == ["p1"]  # p2 is no graph: it would score 0 bad cycles
    assert stack.keys["n_invalid"].tolist() == [1]
    assert stack.invalid_only[["prompt_id", "category", "n_invalid"]].values.tolist() == [["p2", "c", 3]]
    assert invalid_total(stack) == 4
    # the frame travels with the stack
    assert stack.subset([0, 0]).invalid_only.equals(stack.invalid_only)
    assert stack.restrict_models(["x", "y"]).invalid_only.equals(stack.invalid_only)
    # nothing valid at all: an empty stack that still accounts for every invalid verdict
    empty = build_stack(frame(rows[2:]))
    assert empty.T == 0 and invalid_total(empty) == 3 and empty.models == ()


def test_models_restriction_applies_to_invalid_verdicts_too():
    rows = [("p1", "x", "y", "A"), ("p1", "x", "w", "invalid"), ("p2", "w", "y", "invalid")]
    stack = build_stack(frame(rows), models=["x", "y"])
    assert invalid_total(stack) == 0
    assert invalid_total(build_stack(frame(rows))) == 2


def store_invalid(db, dataset: str) -> int:
    with Store(db) as s:
        return int(
            s.cursor()
            .execute("SELECT count(*) FROM verdicts WHERE dataset = ? AND winner = 'invalid'", [dataset])
            .fetchone()[0]
        )


SMALL_CSV = """prompt_id,model_a,model_b,winner,judge,category
1,x,y,A,j1,math
1,y,z,error,j1,math
2,x,y,error,j1,code
2,y,z,error,j1,code
2,x,z,error,j1,code
3,x,y,B,j2,math
3,x,y,error,j2,math
"""


def test_invalid_counts_add_up_on_a_hand_made_csv(db_path, tmp_path):
    path = tmp_path / "small.csv"
    path.write_text(SMALL_CSV)
    with Store(db_path) as s:
        assert import_files(s, [path], "small").status == "stored"
        stack = build_stack(s.verdicts("small"))
    assert store_invalid(db_path, "small") == 5
    assert invalid_total(stack) == 5
    assert stack.keys[["judge", "prompt_id", "n_invalid"]].values.tolist() == [["j1", "1", 1], ["j2", "3", 1]]
    assert stack.invalid_only[["judge", "prompt_id", "category", "n_invalid"]].values.tolist() == [
        ["j1", "2", "code", 3]]


def test_invalid_counts_add_up_on_the_shipped_data(shipped_db):
    with Store(shipped_db) as s:
        verdicts = s.verdicts(DEFAULT_DATASET)
    want = store_invalid(shipped_db, DEFAULT_DATASET)
    assert want == 13
    for policy in COMBINE_POLICIES:
        assert invalid_total(build_stack(verdicts, policy=policy)) == want
    for judge, part in verdicts.groupby("judge"):
        assert invalid_total(build_stack(part)) == int((part["winner"] == "invalid").sum()), judge


def test_graphs_command_notes_invalid_only_graphs(shipped_db, tmp_path, capsys):
    db_path = tmp_path / "cli.duckdb"
    shutil.copy(shipped_db, db_path)  # already initialised: no first-use import in this test
    path = tmp_path / "small.csv"
    path.write_text(SMALL_CSV)
    assert main(["--db", str(db_path), "import", str(path), "--dataset", "small"]) == 0
    capsys.readouterr()
    assert main(["--db", str(db_path), "graphs", "--dataset", "small", "--format", "csv"]) == 0
    cap = capsys.readouterr()
    assert cap.err == (
        "note: 1 graph has only invalid verdicts (3) and is not in the table\n"
        "note: 2 of 2 graphs cannot hold a cycle (fewer than 3 models, or no compared triple): their "
        "cycle counts are 0 by construction, not a measurement (no coverage, no s_mu)\n"
    )
    df = pd.read_csv(io.StringIO(cap.out), dtype={"prompt_id": str})
    assert df["prompt_id"].tolist() == ["1", "3"] and int(df["n_invalid"].sum()) == 2
    assert df.columns[-1] == "policy" and set(df["policy"]) == {"plurality"}
    assert (
        main(["--db", str(db_path), "graphs", "--dataset", "small", "--policy", "net", "--format", "csv"])
        == 0
    )
    assert set(pd.read_csv(io.StringIO(capsys.readouterr().out))["policy"]) == {"net"}
    # a filter that leaves only the invalid-only graph
    assert (
        main(["--db", str(db_path), "graphs", "--dataset", "small", "--category", "code", "--format", "csv"])
        == 2
    )
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err == ("error: There are no valid verdicts for dataset 'small', category 'code' "
                       "(only 3 invalid judge outputs).\n")


# -- the category of a graph ---------------------------------------------------------------------
def test_category_is_the_most_frequent_then_first_by_name():
    rows = [
        ("p1", "x", "y", "A", None, "writing"), ("p1", "y", "z", "A", None, "math"),
        ("p1", "x", "z", "A", None, "math"),                                   # math 2 : writing 1
        ("p2", "x", "y", "A", None, "writing"), ("p2", "y", "z", "A", None, "math"),  # 1 : 1 → math
        ("p3", "x", "y", "A", None, None), ("p3", "y", "z", "invalid", None, "code"),  # only value: code
        ("p4", "x", "y", "A", None, None),                                     # none → missing
    ]
    df = frame(rows)
    want = {"p1": "math", "p2": "math", "p3": "code", "p4": None}
    for seed in range(5):  # whatever the row order
        stack = build_stack(df.sample(frac=1.0, random_state=seed))
        assert dict(zip(stack.keys["prompt_id"], stack.keys["category"], strict=True)) == want


def test_majority_label_against_counter():
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"g": rng.integers(0, 30, 600),
                       "label": rng.choice(["a", "b", "c", None], 600, p=[0.3, 0.3, 0.3, 0.1])})
    got = majority_label(df, "label", ["g"]).set_index("g")["label"].to_dict()
    want = {}
    for g, part in df.groupby("g"):
        c = Counter(v for v in part["label"] if v is not None)
        if c:
            top = max(c.values())
            want[g] = min(k for k, v in c.items() if v == top)
    assert got == want
