"""``graphs`` in bounded memory: the verdicts read in pieces of whole graphs (Store.verdict_pieces), the table
written piece by piece (write_frames), the coverage scaled against the best-covered graph of every piece.
Each is checked against the whole read at once: the same rows, the same text, the same numbers."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import engine.cli.graphs as graphs_cli
from engine.__main__ import main
from engine.cli._common import TERMINAL_ROWS, write_frame, write_frames
from engine.graphs.buckets import build_buckets
from engine.graphs.cycles import cycle_capacity
from engine.graphs.stack import GRAPH_COLUMNS
from engine.graphs.structure import graph_table
from engine.graphs.truncation import can_hold_cycle, graph_scores
from engine.ingest.importer import import_files
from engine.store.connection import Store

MODELS = ("m1", "m2", "m3", "m4", "m5")


def _rows() -> list[dict]:
    """Verdicts that tell a piece from the whole: three judges, prompt ids whose byte order is not their
    ASCII look ("z" before "é", "10" before "9"), variants and turns, repeats of one pair, an invalid-only
    graph, two-model graphs (no cycle), and graphs that compare every pair of 3, 4 or 5 models beside
    sparse ones, so the best-covered graph sits in one piece only."""
    rng = np.random.default_rng(7)
    out = []
    prompts = ["10", "9", "a", "z", "é", "ß-1"]
    for judge in ("j-b", "j-a", "J"):
        for p_i, prompt in enumerate(prompts):
            for variant, turn in ((0, 1), (1, 1), (0, 2)):
                size = int(rng.integers(2, 6))
                models = MODELS[:size]
                pairs = [(a, b) for i, a in enumerate(models) for b in models[i + 1:]]
                if (p_i + variant) % 2:  # sparse: drop some pairs
                    pairs = [pr for k, pr in enumerate(pairs) if k % 3 != 1]
                if judge == "J" and prompt == "é" and variant == 0 and turn == 1:
                    pairs = [(a, b) for i, a in enumerate(MODELS) for b in MODELS[i + 1:]]  # the best covered
                for a, b in pairs:
                    for _ in range(int(rng.integers(1, 3))):
                        winner = str(rng.choice(["A", "B", "tie"], p=[0.45, 0.45, 0.1]))
                        kind = "original" if variant == 0 else ("sample" if judge == "J" else "paraphrase")
                        out.append(dict(prompt_id=prompt, variant=variant, turn=turn, model_a=a, model_b=b,
                                        winner=winner, judge=judge, category=["math", "code"][p_i % 2],
                                        variant_kind=kind, tstamp=1_700_000_000 + len(out) * 7 % 1000))
    out.append(dict(prompt_id="only-bad", variant=0, turn=1, model_a="m1", model_b="m2", winner="error",
                    judge="j-a", category="math", variant_kind="original", tstamp=1_700_000_000))
    # a model met in invalid verdicts only: not a model of the selection (no vote names it)
    out.append(dict(prompt_id="a", variant=0, turn=1, model_a="m9", model_b="m1", winner="error",
                    judge="j-b", category="code", variant_kind="original", tstamp=1_700_000_001))
    # one graph's verdicts under two categories: prompt "a" (math) of judge j-a also judged as code, a clean
    # round robin there (no bad cycle, every pair: the graph keep-K keeps first under category code), so a
    # read of the kept graphs by prompt id that forgot the category would add the math verdicts to it
    for a, b in [(a, b) for i, a in enumerate(MODELS[:4]) for b in MODELS[i + 1:4]]:
        out.append(dict(prompt_id="a", variant=0, turn=1, model_a=a, model_b=b, winner="A", judge="j-a",
                        category="code", variant_kind="original", tstamp=1_700_000_002 + len(out)))
    return out


@pytest.fixture(scope="module")
def pieces_db(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("pieces") / "lens.duckdb"
    csv = path.parent / "v.csv"
    pd.DataFrame(_rows()).to_csv(csv, index=False)
    with Store(path) as s:
        assert import_files(s, [csv], "pieces").status == "stored"
    return str(path)


def _key(frame: pd.DataFrame) -> list[tuple[str, str]]:
    return list(zip(frame["judge"], frame["prompt_id"], strict=True))


@pytest.mark.parametrize("rows", [1, 5, 23, 10**6])
@pytest.mark.parametrize("judge, category", [(None, None), ("j-a", None), (None, "code")])
def test_pieces_are_the_whole_read_in_key_order_each_key_in_one_piece(pieces_db, rows, judge, category):
    with Store(pieces_db) as s:
        whole = s.verdicts("pieces", judge=judge, category=category, columns=GRAPH_COLUMNS)
        pieces = list(s.verdict_pieces("pieces", rows=rows, judge=judge, category=category,
                                       columns=GRAPH_COLUMNS))
    joined = pd.concat(pieces, ignore_index=True)
    # the same rows, each once (a verdict's id names it)
    assert sorted(joined["verdict_id"]) == sorted(whole["verdict_id"])
    pd.testing.assert_frame_equal(joined.sort_values("verdict_id", ignore_index=True),
                                  whole.sort_values("verdict_id", ignore_index=True))
    # within a piece by verdict id, as the whole read is
    for p in pieces:
        assert p["verdict_id"].is_monotonic_increasing
    # each (judge, prompt) in one piece, pieces in Python's order of the keys (the graphs' key order)
    seen: list[tuple[str, str]] = []
    for p in pieces:
        keys = sorted(set(_key(p)))
        assert not seen or keys[0] > seen[-1]
        seen += keys
        # a piece starts its last key before ``rows`` verdicts: it holds fewer than rows + that key's
        sizes = p.groupby(["judge", "prompt_id"]).size()
        assert len(p) - sizes[keys[-1]] < rows
    assert seen == sorted(set(_key(whole)))
    if rows == 1:
        assert len(pieces) == len(seen)
    if rows == 10**6:
        assert len(pieces) == 1


def _whole_table(db: str, mu: float | None, score: str = "coverage") -> tuple[pd.DataFrame, int]:
    """The graphs table computed the other way (every verdict read at once, the graphs built as one set)
    and how many of its graphs cannot hold a cycle."""
    with Store(db) as s:
        verdicts = s.verdicts("pieces", columns=GRAPH_COLUMNS)
    g = build_buckets(verdicts)
    table = graph_table(g)
    table["policy"] = g.policy
    capacity = cycle_capacity(g)
    holds = can_hold_cycle(capacity)
    s_mu, table["coverage"] = graph_scores(table, capacity, mu=1.0 if mu is None else mu, score=score,
                                           among=np.flatnonzero(holds))
    cols = list(graphs_cli.COLUMNS)
    if mu is not None:
        table["s_mu"] = np.where(holds, s_mu, np.nan)
        cols.append("s_mu")
    return table[cols], int((~holds).sum())


@pytest.mark.parametrize("piece_rows", [1, 40])
@pytest.mark.parametrize("extra, mu, score", [([], None, "coverage"), (["--mu", "0.5"], 0.5, "coverage"),
                                              (["--mu", "2", "--score", "raw"], 2.0, "raw")])
def test_the_graphs_command_in_pieces_prints_the_whole_computation(pieces_db, capsys, monkeypatch, piece_rows,
                                                                   extra, mu, score):
    monkeypatch.setattr(graphs_cli, "PIECE_ROWS", piece_rows)
    want, no_cycle = _whole_table(pieces_db, mu, score)
    # the best-covered graph is one of many: a piece scored against its own best would differ
    assert want["coverage"].nunique() > 3 and 0 < no_cycle < len(want)
    for fmt in ("csv", "json", "table"):
        assert main(["--db", pieces_db, "graphs", "--dataset", "pieces", "--format", fmt, *extra]) == 0
        cap = capsys.readouterr()
        expect = io.StringIO()
        write_frame(want, fmt, expect)
        assert cap.out == expect.getvalue(), fmt
        assert cap.err == (
            "note: 1 graph has only invalid verdicts (1) and is not in the table\n"
            f"note: {no_cycle} of {len(want)} graphs cannot "
            "hold a cycle (fewer than 3 models, or no compared triple): their cycle counts are 0 by "
            "construction, not a measurement (no coverage, no s_mu)\n"
        )


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


_TEXTS = st.one_of(st.none(), st.text(alphabet=st.sampled_from("ab,\"\n=é\x1b -+"), max_size=6))


@st.composite
def _frames_and_cuts(draw):
    n = draw(st.integers(0, 3 * TERMINAL_ROWS // 2))
    frame = pd.DataFrame({
        "name": pd.Series([draw(_TEXTS) for _ in range(n)], dtype=object),
        "count": pd.Series(draw(st.lists(st.integers(-10**6, 10**6), min_size=n, max_size=n)), dtype="int64"),
        "rate": pd.Series(draw(st.lists(st.one_of(st.floats(allow_infinity=False), st.just(float("nan"))),
                                        min_size=n, max_size=n)), dtype="float64"),
    })
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=5)))
    return frame, cuts


def _texts_only_at_the_top(n: int = TERMINAL_ROWS + 1) -> pd.DataFrame:
    """A text column whose shown tail is all missing while a row above holds a text (hypothesis found it:
    pandas' ``map`` then made the column a string one, so the whole table showed None as NaN, the tail
    alone as None)."""
    names = [None] * n
    names[8] = ""
    return pd.DataFrame({"name": pd.Series(names, dtype=object), "count": np.zeros(n, np.int64),
                         "rate": np.zeros(n)})


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_frames_and_cuts(), st.sampled_from(["csv", "json", "table-terminal", "table"]))
@example((_texts_only_at_the_top(), []), "table-terminal")
@example((_texts_only_at_the_top(), [30, 31]), "table")
def test_writing_in_pieces_is_writing_the_whole(frame_cuts, fmt):
    frame, cuts = frame_cuts
    bounds = [0, *cuts, len(frame)]
    pieces = [frame.iloc[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    kind = fmt.split("-")[0]
    made = _Terminal() if fmt.endswith("terminal") else io.StringIO()
    want = _Terminal() if fmt.endswith("terminal") else io.StringIO()
    write_frames(iter(pieces), kind, made)
    write_frame(frame, kind, want)
    assert made.getvalue() == want.getvalue()


def test_json_with_times_is_refused_piece_by_piece():
    frame = pd.DataFrame({"at": pd.to_datetime(["2026-11-28 03:00:00.5"])})
    with pytest.raises(ValueError, match="without times"):
        write_frames([frame], "json", io.StringIO())


@pytest.mark.parametrize("n", [TERMINAL_ROWS - 1, TERMINAL_ROWS, TERMINAL_ROWS + 1, TERMINAL_ROWS + 15])
@pytest.mark.parametrize("size", [1, 3, 7, 100])
def test_a_terminal_shows_the_same_rows_of_a_table_written_in_small_pieces(n, size):
    frame = pd.DataFrame({"name": [f"model-{i}" * (1 + i % 3) for i in range(n)], "score": np.arange(n) / 7})
    made, want = _Terminal(), _Terminal()
    write_frames((frame.iloc[i:i + size] for i in range(0, n, size)), "table", made)
    write_frame(frame, "table", want)
    assert made.getvalue() == want.getvalue()


@pytest.mark.parametrize("prompt, judge", [("é", None), ("10", "J"), ("9", None), ("nothing", None)])
def test_triads_reads_one_prompt_as_the_whole_filtered_in_memory(pieces_db, capsys, prompt, judge):
    """``triads`` reads one prompt's rows in SQL: its table is the one from every verdict filtered here."""
    from engine.graphs.stack import build_stack
    from engine.graphs.triads import nontransitive_triads

    with Store(pieces_db) as s:
        every = s.verdicts("pieces", judge=judge, columns=GRAPH_COLUMNS)
    mine = every[every["prompt_id"] == prompt]
    args = ["--db", pieces_db, "triads", "--dataset", "pieces", "--prompt-id", prompt, "--format", "csv"]
    rc = main(args + (["--judge", judge] if judge else []))
    out = capsys.readouterr().out
    if mine.empty:
        assert rc == 2 and out == ""
        return
    stack = build_stack(mine)
    want = nontransitive_triads(stack)
    got = pd.read_csv(io.StringIO(out), dtype=str, keep_default_na=False)
    assert rc == 0 and len(got) == len(want) > 0
    triples = {tuple(r) for r in want[["model_a", "model_b", "model_c", "kind"]].astype(str).to_numpy()}
    assert {tuple(r) for r in got[["model_a", "model_b", "model_c", "kind"]].to_numpy()} == triples



def _kept_board_from_the_whole(db: str, spec, judge=None, category=None):
    """A count ranker's keep-K board the other way: every verdict read at once, keep-K over every graph
    (``keep_k_graphs``), the votes of every verdict cut to the kept graphs (0.20.1's leaderboard)."""
    from engine.graphs.truncation import keep_k_graphs
    from engine.ranking.count_board import leaderboard_from_votes, ordered_votes, vote_fetch_order
    from engine.ranking.vote_query import frame_vote_rows, key_hashes

    with Store(db) as s:
        verdicts = s.verdicts("pieces", judge=judge, category=category)
    kept = keep_k_graphs(build_buckets(verdicts, policy=spec.policy), spec.keep_k, mu=spec.mu,
                         per_category=spec.per_category, pool=spec.pool)
    rows = frame_vote_rows(verdicts, order_by=vote_fetch_order(spec, verdicts.columns))
    votes = ordered_votes(rows.take(np.isin(rows.graph, key_hashes(kept.table))), spec)
    return kept, leaderboard_from_votes(votes, spec, kept=kept.table)


@pytest.mark.parametrize("piece_rows", [1, 40])
@pytest.mark.parametrize("ranker, keep_k, mu, per_category, pool, judge, category", [
    ("bt", 6, 1.0, False, "perturbed", None, None),
    ("elo", 4, 0.5, False, "all", None, None),
    ("davidson", 3, 2.0, True, "perturbed", None, None),
    ("bt", 2, 1.0, False, "sampling", None, None),
    ("winrate", 5, 1.0, True, "all", "j-a", None),
    ("copeland", 3, 1.0, False, "all", "J", None),
    ("bt", 4, 1.0, False, "perturbed", None, "code"),
])
def test_keep_k_over_pieces_is_keep_k_over_the_whole(pieces_db, monkeypatch, piece_rows, ranker, keep_k, mu,
                                                    per_category, pool, judge, category):
    """``leaderboard --keep-k`` of a count ranker reads its selection in pieces: the kept graphs, their
    table and notes, and the board are the ones computed from every verdict at once."""
    import engine.ranking.keep_k_pieces as pieces
    from engine.ranking.board import BoardSpec
    from engine.ranking.leaderboard import leaderboard

    monkeypatch.setattr(pieces, "PIECE_ROWS", piece_rows)
    # the kept graphs' verdicts by prompt id (a few kept prompts) or in pieces
    monkeypatch.setattr(pieces, "KEPT_PROMPTS_BY_NAME", 0 if piece_rows == 40 else 2000)
    spec = BoardSpec(ranker=ranker, keep_k=keep_k, mu=mu, per_category=per_category, pool=pool, bootstrap=20,
                     seed=1)
    kept, want = _kept_board_from_the_whole(pieces_db, spec, judge, category)
    with Store(pieces_db) as s:
        got = leaderboard(s, "pieces", spec, judge=judge, category=category)
    pd.testing.assert_frame_equal(got.kept.reset_index(drop=True), kept.table.reset_index(drop=True))
    assert got.params["keep_note"] == (kept.note or None) and got.params["n_graphs_pool"] == kept.n_pool
    assert got.params["threshold"] == (kept.threshold if not isinstance(kept.threshold, pd.Series)
                                       else kept.threshold.to_dict())
    pd.testing.assert_frame_equal(got.table, want.table)
    with Store(pieces_db) as s:
        every = s.verdicts("pieces", judge=judge, category=category)
    assert got.params["n_invalid_verdicts"] == int((every["winner"] == "invalid").sum())
    assert got.params["judges"] == sorted(every["judge"].unique())
    # the board's own parameters as the whole computation's (the models it dropped, named the same), and
    # dropped models said to be dropped by keep-K
    told = {"dataset", "dataset_version", "judge", "judges", "category", "n_invalid_verdicts", "keep_k", "mu",
            "per_category", "pool", "threshold", "keep_note", "n_graphs_pool"}  # the command's own, above
    for name, value in want.params.items():
        assert name in told or got.params.get(name) == value, name
    assert got.params.get("dropped_after_keep_k", False) == bool(want.params.get("dropped_models"))


def test_keep_k_over_pieces_refuses_as_the_whole_read(pieces_db, monkeypatch):
    import engine.ranking.keep_k_pieces as pieces
    from engine.errors import LensError
    from engine.ranking.leaderboard import leaderboard

    monkeypatch.setattr(pieces, "PIECE_ROWS", 3)
    with Store(pieces_db) as s, pytest.raises(LensError, match="has no valid verdict for category 'nope'"):
        leaderboard(s, "pieces", ranker="bt", keep_k=3, category="nope")


@pytest.mark.parametrize("prompt_type", ["int64", "float64", "str"])
def test_pieces_of_parquet_read_in_place_keep_the_frames_order_whatever_the_key_type(tmp_path, capsys,
                                                                                    monkeypatch, prompt_type):
    """A Parquet file read in place may hold integer (or float) prompt ids: the frame reads them as text and
    sorts them as text ("10" before "9"), so the pieces must too (DuckDB orders integers as numbers)."""
    rng = np.random.default_rng(3)
    rows = []
    for judge in ("j2", "j1"):
        for prompt in range(1, 13):
            models = MODELS[: 3 + prompt % 3]
            for i, a in enumerate(models):
                for b in models[i + 1:]:
                    rows.append(dict(judge=judge, prompt_id=prompt, model_a=a, model_b=b,
                                     winner=str(rng.choice(["A", "B", "tie"]))))
    frame = pd.DataFrame(rows)
    frame["prompt_id"] = frame["prompt_id"].astype(prompt_type)
    path = tmp_path / "v.parquet"
    frame.to_parquet(path, index=False)
    db = str(tmp_path / "lens.duckdb")
    assert main(["--db", db, "datasets", "attach", "inplace", str(path)]) == 0
    outs = []
    for piece_rows in (10**6, 5):
        capsys.readouterr()
        monkeypatch.setattr(graphs_cli, "PIECE_ROWS", piece_rows)
        assert main(["--db", db, "graphs", "--dataset", "inplace", "--format", "csv"]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1]
    got = pd.read_csv(io.StringIO(outs[0]), dtype=str)
    assert got["judge"].tolist() == sorted(got["judge"])  # j1 first
    assert len(got) == 24
    # keep-K over the same pieces, its kept graphs' verdicts read by prompt id or in pieces
    import engine.ranking.keep_k_pieces as pieces

    boards = []
    for piece_rows, by_name in ((10**6, 2000), (5, 0)):
        monkeypatch.setattr(pieces, "PIECE_ROWS", piece_rows)
        monkeypatch.setattr(pieces, "KEPT_PROMPTS_BY_NAME", by_name)
        assert main(["--db", db, "leaderboard", "--dataset", "inplace", "--keep-k", "5", "--ranker", "elo",
                     "--show-kept", "--format", "csv"]) == 0
        assert main(["--db", db, "leaderboard", "--dataset", "inplace", "--keep-k", "5",
                     "--format", "csv"]) == 0
        boards.append(capsys.readouterr())
    assert boards[0] == boards[1]
    assert "keep_rank" in boards[0].out and "model" in boards[0].out


def test_keep_k_in_pieces_refuses_a_bad_row_outside_the_kept_graphs(tmp_path, capsys):
    """A Parquet file read in place and changed since it was attached: a winner keep-K's kept graphs never
    hold is still refused in one sentence, as the read of every verdict refused it."""
    rows = [dict(judge="j", prompt_id=f"p{p}", model_a=a, model_b=b, winner="A")
            for p in range(4) for a, b in (("m1", "m2"), ("m2", "m3"), ("m1", "m3"))]
    path = tmp_path / "v.parquet"
    pd.DataFrame(rows).to_parquet(path, index=False)
    db = str(tmp_path / "lens.duckdb")
    assert main(["--db", db, "datasets", "attach", "inplace", str(path)]) == 0
    bad = rows + [dict(judge="j", prompt_id="two", model_a="m1", model_b="m2", winner="X")]
    pd.DataFrame(bad).to_parquet(path, index=False)
    capsys.readouterr()
    assert main(["--db", db, "leaderboard", "--dataset", "inplace", "--keep-k", "2", "--format", "csv"]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and "Verdict winners must be A, B, tie or invalid; found 'X'." in cap.err
