"""The diagnose command and structure summary on the shipped vicuna80 data, each number checked
against an independent computation (plain loops, networkx, engine.graphs.cycles)."""

from __future__ import annotations

import io
import itertools
from collections import Counter

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from cli_inprocess import run_engine

from engine.diagnostics import diagnose
from engine.diagnostics.summary import structure_summary
from engine.graphs.cycles import cycle_counts
from engine.graphs.stack import GraphStack, build_stack


def run_cli(db, *args) -> tuple[int, str, str]:
    """``python -m engine --db DB diagnose ARGS`` (in this process): exit code, stdout, stderr."""
    done = run_engine(["--db", db, "diagnose", *args])
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
def verdicts(shipped_db):
    from engine.store.connection import Store

    with Store(shipped_db) as s:
        return s.verdicts("vicuna80")


def test_overview_csv_against_direct_computations(shipped_db, verdicts):
    rc, out, err = run_cli(shipped_db, "--dataset", "vicuna80", "--format", "csv")
    assert rc == 0 and err == ""
    t = pd.read_csv(io.StringIO(out)).set_index("judge")
    assert set(t.index) == {"bard", "claude", "gpt-3.5-turbo", "gpt-4", "human", "vicuna-13b"}
    stack = build_stack(verdicts)
    cc = cycle_counts(stack)
    for judge in ("gpt-3.5-turbo", "gpt-4"):
        idx = np.nonzero((stack.keys["judge"] == judge).to_numpy())[0]
        # PNT = bad triads / complete triples; C3_bad counts exactly the bad triads (engine.graphs.triads)
        complete = sum(
            all(stack.observed[t, x, y] for x, y in itertools.combinations(tri, 2))
            for t in idx for tri in itertools.combinations(range(stack.n), 3)
        )
        assert t.loc[judge, "pnt"] == pytest.approx(cc["c3_bad"].to_numpy()[idx].sum() / complete)
        # ρ_non-trans with networkx SCCs
        nt = nv = 0
        for k in idx:
            a = stack.adj[k]
            present = [i for i in range(stack.n) if stack.observed[k, i].any()]
            g = nx.DiGraph([(i, j) for i in present for j in present if a[i, j]])
            g.add_nodes_from(present)
            nv += len(present)
            for comp in nx.strongly_connected_components(g):
                if len(comp) > 2 and any(not (a[u, v] and a[v, u]) for u in comp for v in comp if u != v):
                    nt += len(comp)
        assert t.loc[judge, "rho_nontrans"] == pytest.approx(nt / nv)
    # order consistency and first-position rate by plain loops over the verdict rows
    v = verdicts[(verdicts["judge"] == "claude") & (verdicts["winner"] != "invalid")]
    firsts, seen = 0, {}
    for r in v.itertuples():
        first = r.model_a if r.order == "AB" else r.model_b
        won = None if r.winner == "tie" else (r.model_a if r.winner == "A" else r.model_b)
        firsts += won == first
        seen.setdefault((r.prompt_id, frozenset((r.model_a, r.model_b))), []).append(won)
    pairs = [w for w in seen.values() if len(w) == 2]
    assert t.loc["claude", "first_win_rate"] == pytest.approx(firsts / len(v))
    assert t.loc["claude", "order_consistency"] == pytest.approx(np.mean([w[0] == w[1] for w in pairs]))


def test_agreement_with_human_majority_by_loops(verdicts):
    t = diagnose(verdicts, "vicuna80", table="agreement", reference="human").set_index("judge_1")
    v = verdicts[verdicts["winner"] != "invalid"]

    def outcomes(judge):
        votes = {}
        for r in v[v["judge"] == judge].itertuples():
            won = "tie" if r.winner == "tie" else (r.model_a if r.winner == "A" else r.model_b)
            votes.setdefault((r.prompt_id, frozenset((r.model_a, r.model_b))), []).append(won)
        res = {}
        for item, ws in votes.items():
            top = Counter(ws).most_common(2)
            res[item] = top[0][0] if len(top) == 1 or top[0][1] > top[1][1] else "tie"
        return res

    human = outcomes("human")
    llm = outcomes("gpt-3.5-turbo")
    shared = [k for k in llm if k in human]
    assert t.loc["gpt-3.5-turbo", "items"] == len(shared)
    assert t.loc["gpt-3.5-turbo", "agreement"] == pytest.approx(np.mean([llm[k] == human[k] for k in shared]))


def test_every_table_runs_and_bad_requests_are_one_sentence(shipped_db):
    for table in ("pnt", "entropy", "position", "agreement", "structure"):
        rc, out, err = run_cli(shipped_db, "--dataset", "vicuna80", "--table", table, "--judge", "claude",
                               "--format", "json")
        assert rc == 0 and out.strip().startswith("[")
    for args, needle in (
        (["--table", "pnt", "--source", "soft"], "no judge probabilities"),
        (["--table", "pnt", "--by", "judge,nonsense"], "Cannot group"),
        (["--judge", "nobody"], "no judge 'nobody' (--judge); its judges are bard, claude"),
        (["--table", "cycles", "--length-bound", "2"], "at least 3"),
    ):
        rc, out, err = run_cli(shipped_db, "--dataset", "vicuna80", *args)
        assert rc == 2 and out == "" and needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_structure_summary_against_networkx():
    rng = np.random.default_rng(0)
    T, n = 30, 5
    o = rng.choice(3, size=(T, n, n), p=[0.45, 0.4, 0.15])  # i>j, j>i, tie
    iu, ju = np.triu_indices(n, 1)
    adj = np.zeros((T, n, n), dtype=bool)
    adj[:, iu, ju] = (o[:, iu, ju] == 0) | (o[:, iu, ju] == 2)
    adj[:, ju, iu] = (o[:, iu, ju] == 1) | (o[:, iu, ju] == 2)
    obs = np.ones((T, n, n), dtype=bool) & ~np.eye(n, dtype=bool)
    keys = pd.DataFrame({"dataset": "d", "judge": "j", "prompt_id": [str(t) for t in range(T)], "variant": 0,
                         "turn": 1, "category": np.where(np.arange(T) % 2, "odd", "even"),
                         "variant_kind": "original", "n_verdicts": 10, "n_invalid": 0})
    s = structure_summary(GraphStack(tuple("abcde"), adj, obs, keys)).set_index("category")
    for cat, sel in (("even", range(0, T, 2)), ("odd", range(1, T, 2))):
        scc = [
            max(len(c) for c in nx.strongly_connected_components(nx.DiGraph(adj[t].astype(int)))) for t in sel
        ]
        draws = [(adj[t] & adj[t].T)[iu, ju].mean() for t in sel]
        assert s.loc[cat, "largest_scc_mean"] == pytest.approx(np.mean(scc))
        assert s.loc[cat, "draw_rate_mean"] == pytest.approx(np.mean(draws))


def test_overview_with_judge_probabilities():
    # one graph, x>y (0.8), y>z (0.7), z>x (P(x>z) = 0.4): a soft strict cycle; hard verdicts agree
    rows = [("p", "x", "y", 0.8), ("p", "y", "z", 0.7), ("p", "x", "z", 0.4)]
    v = pd.DataFrame(rows, columns=["prompt_id", "model_a", "model_b", "prob_a"])
    v["winner"] = np.where(v["prob_a"] > 0.5, "A", "B")
    for c, val in {"dataset": "d", "judge": "j", "variant": 0, "turn": 1, "category": "c",
                   "variant_kind": "original", "order": "AB"}.items():
        v[c] = val
    t = diagnose(v, "d", table="overview").iloc[0]
    assert t["pnt"] == 1.0 and t["pnt_soft"] == 1.0
    # SNTD by hand, in odds: odds(x>y) implied via z = odds(x>z) / odds(y>z), and so on
    implied = {"xy": 0.4 * 0.3 / (0.4 * 0.3 + 0.6 * 0.7), "yz": 0.4 * 0.2 / (0.4 * 0.2 + 0.6 * 0.8),
               "xz": 0.8 * 0.7 / (0.8 * 0.7 + 0.2 * 0.3)}
    observed = {"xy": 0.8, "yz": 0.7, "xz": 0.4}

    def jsd(p, q):
        m = (p + q) / 2
        return sum(0.5 * a * np.log2(a / b) for a, b in ((p, m), (1 - p, 1 - m), (q, m), (1 - q, 1 - m)))

    assert t["sntd_mean"] == pytest.approx(np.mean([jsd(observed[k], implied[k]) for k in observed]))


def test_cached_tables_equal_fresh_ones(shipped_db):
    from engine.diagnostics import diagnose_cached
    from engine.store.connection import Store

    with Store(shipped_db) as store:
        fresh = diagnose(store, "vicuna80", judge="claude", table="position")
        first, hit1 = diagnose_cached(store, "vicuna80", judge="claude", table="position")
        again, hit2 = diagnose_cached(store, "vicuna80", judge="claude", table="position")
        other, hit3 = diagnose_cached(
            store, "vicuna80", judge="claude", table="position", by=("judge", "lo", "hi")
        )
    assert (hit1, hit2, hit3) == (False, True, False)
    pd.testing.assert_frame_equal(again, fresh, check_dtype=False)
    assert len(other) == 10  # the 10 pairs of claude's five models


def small_frame(seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for judge, p, (x, y) in itertools.product(("human", "llm"), range(8), itertools.combinations("abcd", 2)):
        for f, s in ((x, y), (y, x)):
            rows.append((judge, str(p), "even" if p % 2 == 0 else "odd", f, s,
                         rng.choice(["A", "B", "tie"], p=[0.45, 0.4, 0.15])))
    v = pd.DataFrame(rows, columns=["judge", "prompt_id", "category", "model_a", "model_b", "winner"])
    for c, val in {"dataset": "d", "variant": 0, "turn": 1, "variant_kind": "original", "order": "AB",
                   "prob_a": np.nan}.items():
        v[c] = val
    return v


def test_every_table_by_judge_and_category_is_consistent():
    from engine.diagnostics import TABLES

    v = small_frame()
    grouped = {
        "pnt",
        "patterns",
        "heatmap",
        "entropy",
        "cycles",
        "cycle-lengths",
        "participation",
        "cycle-prompts",
        "position",
        "stress",
        "structure",
        "cycle-fit",
    }
    out = {}
    for table in TABLES:
        if table == "sntd":
            continue  # needs probabilities; covered in test_overview_with_judge_probabilities
        params = {"by": ("judge", "category")} if table in grouped else {}
        out[table] = diagnose(v, "d", table=table, **params)
        assert len(out[table]) > 0, table
        if table in grouped:
            assert set(out[table]["category"]) == {"even", "odd"}, table
    # the same cycles seen three ways
    assert (
        out["cycle-prompts"]["cycles"].sum()
        == out["cycles"]["cycles"].sum()
        == out["cycle-graphs"]["cycles"].sum()
    )
    assert out["cycle-lengths"]["cycles"].sum() == out["cycles"]["cycles"].sum()
    assert out["pnt"]["triples"].sum() == 2 * 8 * 4  # two judges, 8 complete graphs, C(4,3) triples each
    assert out["stress"]["ordering_graphs"].sum() == 2 * 8 * 24


def test_heatmap_is_per_judge_and_takes_a_win_rate_file(shipped_db, verdicts, tmp_path):
    from engine.diagnostics.nontransitivity import gap_heatmap, model_win_rates

    rc, out, err = run_cli(shipped_db, "--dataset", "vicuna80", "--table", "heatmap", "--format", "csv")
    assert rc == 0 and err == ""
    h = pd.read_csv(io.StringIO(out))
    assert set(h["judge"]) == {"bard", "claude", "gpt-3.5-turbo", "gpt-4", "human", "vicuna-13b"}
    assert (h.groupby("judge").size() == 35 * 35).all()
    gaps = out.splitlines()[1:]
    assert not any("e-1" in line.split(",")[1] or "e-1" in line.split(",")[2] for line in gaps)
    assert (h["gap_ab"] == 0.0).any()  # the centre of the odd grid prints as 0, not 2.8e-17
    # the human judge's own win rates as a file: gpt-4's grid must equal the library call with them
    stack = build_stack(verdicts)
    rates = model_win_rates(stack.subset(np.flatnonzero((stack.keys["judge"] == "human").to_numpy())))
    path = tmp_path / "wr.csv"
    rates.rename_axis("model").reset_index().to_csv(path, index=False)
    rc, out, err = run_cli(shipped_db, "--dataset", "vicuna80", "--table", "heatmap", "--judge", "gpt-4",
                           "--win-rates", str(path), "--grid", "9", "--no-cache", "--format", "csv")
    assert rc == 0, err
    got = pd.read_csv(io.StringIO(out))
    g4 = build_stack(verdicts[verdicts["judge"] == "gpt-4"])
    ref = gap_heatmap(g4, win_rates=pd.read_csv(path).set_index("model")["win_rate"], grid=9)
    assert np.array_equal(got["triples"], ref["triples"])
    assert np.allclose(got[["gap_ab", "gap_bc", "pnt"]], ref[["gap_ab", "gap_bc", "pnt"]], equal_nan=True)
    # a file that lacks a model, or --win-rates on another table: one sentence each
    rates.drop("bard").rename_axis("model").reset_index().to_csv(path, index=False)
    for args, needle in ((["--table", "heatmap"], "No win rate for model(s) bard"),
                         (["--table", "pnt"], "heatmap table only")):
        rc, out, err = run_cli(
            shipped_db, "--dataset", "vicuna80", *args, "--win-rates", str(path), "--no-cache"
        )
        assert rc == 2 and needle in err and err.count("\n") == 1


def test_by_is_refused_where_it_does_not_apply(shipped_db):
    for table in ("overview", "entropy-graphs", "cycle-graphs"):
        rc, out, err = run_cli(shipped_db, "--dataset", "vicuna80", "--table", table, "--by", "category")
        assert rc == 2 and out == "" and "cannot be grouped" in err and err.count("\n") == 1


def test_cycles_count_every_length_by_default(shipped_db, verdicts):
    rc, out, err = run_cli(shipped_db, "--dataset", "vicuna80", "--table", "cycle-graphs", "--judge", "gpt-4",
                           "--format", "csv")
    assert rc == 0
    t = pd.read_csv(io.StringIO(out))
    assert (t["length_bound"] == 9).all() and (t["models"] == 9).all()
    stack = build_stack(verdicts[verdicts["judge"] == "gpt-4"])
    cc = cycle_counts(stack)
    assert np.array_equal(t["len_3"], cc["c3_bad"]) and np.array_equal(t["len_4"], cc["c4_bad"])
    # two graphs against networkx's unbounded enumeration (bad = not all ties)
    for k in (0, 41):
        a = stack.adj[k]
        tie = a & a.T
        lens = Counter(len(c) for c in nx.simple_cycles(nx.DiGraph(a.astype(int)))
                       if len(c) >= 3 and not all(tie[c[s], c[(s + 1) % len(c)]] for s in range(len(c))))
        assert [t.loc[k, f"len_{n}"] for n in range(3, 10)] == [lens.get(n, 0) for n in range(3, 10)]
    rc, out, err = run_cli(shipped_db, "--dataset", "vicuna80", "--table", "cycles", "--format", "csv")
    r = pd.read_csv(io.StringIO(out)).set_index("judge")
    assert (
        r.loc["gpt-4", "length_bound"] == 9
        and r.loc["claude", "length_bound"] == 5
        and r["all_lengths"].all()
    )


def test_patterns_table_through_the_cli(shipped_db):
    rc, out, err = run_cli(shipped_db, "--dataset", "vicuna80", "--table", "patterns", "--format", "csv")
    pats = pd.read_csv(io.StringIO(out))
    rc2, out2, _ = run_cli(shipped_db, "--dataset", "vicuna80", "--table", "pnt", "--format", "csv")
    pnt = pd.read_csv(io.StringIO(out2)).set_index("judge")
    assert rc == rc2 == 0 and (pats.groupby("judge").size() == 14).all()
    assert pats.groupby("judge")["triples"].sum().to_dict() == pnt["nontransitive"].to_dict()
    cyc = pats[pats["kind"] == "cycle"].groupby("judge")["triples"].sum()
    assert cyc.to_dict() == pnt["cycle"].to_dict()


def test_paper_variants_are_flags_of_their_own_tables(shipped_db, verdicts):
    """--r2 pmf (paper 003's R²) and --sntd per-order (paper 001's eq. 3) belong to one table each."""
    from engine.diagnostics.cycle_stats import count_fits, cycle_table
    from engine.graphs.buckets import build_buckets

    for args, needle in (
        (["--table", "cycles", "--r2", "pmf"], "--r2 applies to the cycle-fit table only"),
        (["--table", "pnt", "--sntd", "per-order"], "--sntd applies to the sntd table only"),
    ):
        rc, out, err = run_cli(shipped_db, "--dataset", "vicuna80", *args)
        assert rc == 2 and out == "" and needle in err and err.count("\n") == 1
    rc, out, err = run_cli(shipped_db, "--dataset", "vicuna80", "--judge", "human", "--table", "cycle-fit",
                           "--edges", "strict", "--r2", "pmf", "--no-cache", "--format", "csv")
    assert rc == 0
    got = pd.read_csv(io.StringIO(out))
    table, _ = cycle_table(build_buckets(verdicts[verdicts["judge"] == "human"]), edges="strict")
    want = count_fits(table, r2_on="pmf")
    assert got["r2_on"].tolist() == ["pmf"]
    assert got["nb_r2"].iloc[0] == pytest.approx(want["nb_r2"].iloc[0], rel=1e-9)
    assert got["mean"].iloc[0] == pytest.approx(want["mean"].iloc[0], rel=1e-12)
