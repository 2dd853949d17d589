"""A disconnected comparison graph is reported per component (issue 23, bug 17 and point 6).

On fa0c159 every ranker ordered the components of a disconnected comparison graph against each other
with only a note about strong connectivity. Now the table's ``component`` column says which models
no verdict links, stderr (and the app's leaderboard notes) name the models of each component and say
that scores and ranks compare only within one. The labels are checked against networkx's connected
components.
"""

from __future__ import annotations

import io
import json

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from engine.graphs.reachability import comparison_components
from engine.views.leaderboard_view import board_view
from tests.conftest import run_engine


@pytest.fixture
def db_path(shipped_db_copy):
    """This file's CLI commands read their own dataset only: they start from the shipped store."""
    return shipped_db_copy


@pytest.mark.parametrize("seed", range(12))
def test_components_match_networkx_and_are_numbered_by_size_then_first_model(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    compared = np.triu(rng.random((n, n)) < rng.uniform(0.0, 0.12), 1)
    compared |= compared.T
    label = comparison_components(compared)
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(zip(*np.nonzero(compared), strict=True))
    comps = sorted((sorted(c) for c in nx.connected_components(g)), key=lambda c: (-len(c), c[0]))
    expect = np.empty(n, dtype=np.int64)
    for k, c in enumerate(comps, start=1):
        expect[c] = k
    np.testing.assert_array_equal(label, expect)


DISCONNECTED = [("1", "a", "b", "A"), ("2", "a", "b", "B"), ("3", "c", "d", "A"), ("4", "c", "d", "tie"),
                ("5", "d", "e", "A"), ("6", "f", "g", "A")]


@pytest.mark.parametrize("ranker", ["bt", "kemeny"])  # the count path and the graph path
def test_the_board_names_each_component_and_flags_ranks_across_them(db_path, tmp_path, ranker):
    path = tmp_path / "v.csv"
    path.write_text("prompt_id,model_a,model_b,winner\n" + "".join(",".join(r) + "\n" for r in DISCONNECTED))
    run_engine(["--db", db_path, "import", path, "--dataset", "d"], check=True)
    board = ["--db", db_path, "leaderboard", "--dataset", "d", "--ranker", ranker, "--format"]
    out = run_engine([*board, "csv"], check=True)
    table = pd.read_csv(io.StringIO(out.stdout)).set_index("model")
    assert table["component"].to_dict() == {"c": 1, "d": 1, "e": 1, "a": 2, "b": 2, "f": 3, "g": 3}
    assert ("comparison graph: 3 components that no verdict links: 1 (c, d, e); 2 (a, b); 3 (f, g); scores "
            "and ranks compare only within a component") in out.stderr
    js = run_engine([*board, "json"], check=True)
    assert json.loads(js.stdout)["params"]["components"] == [["c", "d", "e"], ["a", "b"], ["f", "g"]]


def test_a_connected_graph_has_one_component_and_no_note(db_path, tmp_path):
    """The library's table always has the column (all 1 here); the CLI prints it only when there is more
    than one component, as it prints the interval columns only with --bootstrap."""
    from engine.ranking.leaderboard import leaderboard
    from engine.store.connection import Store

    path = tmp_path / "v.csv"
    path.write_text("prompt_id,model_a,model_b,winner\n1,a,b,A\n2,b,c,A\n3,c,a,tie\n")
    run_engine(["--db", db_path, "import", path, "--dataset", "d"], check=True)
    out = run_engine(["--db", db_path, "leaderboard", "--dataset", "d", "--format", "csv"], check=True)
    assert "component" not in pd.read_csv(io.StringIO(out.stdout)).columns
    assert "comparison graph:" not in out.stderr
    store = Store(db_path)
    try:
        board = leaderboard(store, "d")
    finally:
        store.close()
    assert board.table["component"].tolist() == [1, 1, 1] and board.params["components"] is None


def test_the_app_view_carries_the_same_note():
    table = pd.DataFrame({"rank": [1, 2, 1, 2], "model": ["a", "b", "c", "d"],
                          "score": [1.0, -1.0, 1.0, -1.0], "ci_low": np.nan, "ci_high": np.nan,
                          "component": [1, 1, 2, 2]})
    view = board_view(table, ranker="bt", n_graphs=20)
    assert any(n.startswith("comparison graph: 2 components that no verdict links: 1 (a, b); 2 (c, d)")
               for n in view.notes)
