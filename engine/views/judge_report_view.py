"""The judge report as the Judges page and the JSON export show it: the table of
``engine.diagnostics.judge_report`` for a dataset (its category when chosen), its notes, each column's words,
and the report as one JSON document (``report_json``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pandas as pd

from engine.diagnostics.judge_report import (
    judge_report,
    store_lengths,
    style_length_betas,
)
from engine.graphs.stack import GRAPH_COLUMNS
from engine.views.judges_view import JUDGE_COLUMNS

COLUMN_HELP: dict[str, str] = {
    "reference": "The judge every other is compared with (human when the dataset has one).",
    "verdicts": "Valid verdicts of the judge.",
    "agreement_vs_ref": "Share of items where the judge and the reference pick the same model (or both tie).",
    "kappa_by_model": "Cohen's κ with the reference on which MODEL won, both presentation orders combined.",
    "kappa_as_shown": "Cohen's κ with the reference on which POSITION won (first / second / tie), per order.",
    "first_win_rate": "Share of verdicts won by the answer shown first (ties in the denominator).",
    "order_consistency": "Share of items judged in both orders whose two verdicts agree.",
    "mcnemar_p_ordinal": "McNemar's χ² test (continuity-corrected) of whether the answer shown first changes "
                         "the outcome, a tie counted between a loss and a win. Not the Position-bias table's "
                         "\"McNemar p (exact)\" above (the exact test with ties dropped): the two can differ "
                         "for one judge.",
    "longer_wins": "Among decisive verdicts on answers of different lengths (characters), the share the "
                   "longer answer won.",
    "style_beta_tokens": "Coefficient of the length feature (tokens) in the judge's own style-controlled "
                         "Bradley-Terry (leaderboard --judge J --style-control): log-odds per standard "
                         "deviation of (a - b)/(a + b), other style features held equal; positive: longer "
                         "wins.",
    "family": "The judge's family: the leading letters of its lower-cased name (gpt-4 → gpt).",
    "self_win_rate": "Own-family model's win share (ties half) where exactly one model is of the family.",
    "self_preference": "self_win_rate minus the reference's share on the same items.",
    "pnt": "Share of fully compared model triples that are non-transitive.",
    "graph_cycle_rate": "Share of the judge's graphs of 3 or more models that hold a cycle.",
}
"""Words for the columns a reader needs explained (the page's column help)."""

COLUMN_GROUPS: dict[str, list[str]] = {
    "Agreement with the reference": ["verdicts", "items_vs_ref", "agreement_vs_ref", "kappa_by_model",
                                     "items_shown_vs_ref", "kappa_as_shown"],
    "Position": ["first_win_rate", "first_win_rate_decisive", "order_consistency", "mcnemar_p_ordinal"],
    "Length": ["length_verdicts", "longer_wins", "style_beta_tokens"],
    "Self-preference": ["family", "self_verdicts", "self_win_rate", "self_win_rate_ref", "self_preference"],
    "Cycles": ["triples", "pnt", "graph_cycle_rate"],
}
"""The report's columns in the page's tables, each beside the judge (one table of every column does not
fit 1280 px); a column in no group goes to the last table."""


REPORT_COLUMNS: tuple[str, ...] = tuple(dict.fromkeys((*GRAPH_COLUMNS, *JUDGE_COLUMNS)))
"""The verdict columns the report reads: its graphs' and the Judges page's (no battle ids, sources or
explanations of a million verdicts)."""


@dataclass(frozen=True)
class JudgeReportView:
    """The report's table, its notes and what it was computed on."""

    dataset: str
    category: str | None
    table: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    def report_json(self) -> bytes:
        """The report as JSON: {"judge_report": {dataset, category, reference, notes, judges: [rows]}}."""
        rows = json.loads(self.table.to_json(orient="records", double_precision=10))
        ref = self.table["reference"].dropna()
        doc = {"judge_report": {"dataset": self.dataset, "category": self.category,
                                "reference": None if ref.empty else str(ref.iloc[0]),
                                "notes": self.notes, "judges": rows}}
        return json.dumps(doc, indent=2).encode("utf-8")


def judge_report_of_store(store, dataset: str, category: str | None = None,
                          reference: str | None = "default", big_graphs=None, *, counts=None,
                          n_graphs: int | None = None) -> JudgeReportView:
    """The judge report of a stored dataset (of ``category`` when given), answer lengths from its texts.

    The verdicts are grouped into counts in the store (``engine.diagnostics.judge_report.
    judge_report_of_counts``), never read as a frame, unless one has a presentation order other than AB, BA
    or none (an attached file: the frame path names its row, reading only the columns the report uses,
    ``REPORT_COLUMNS``). Only the graphs whose verdicts name three or more models are built (``big_graphs``
    when the caller holds them already: the app's cached ``judges_view.graphs_of_three_models``), the
    others counted in SQL: the cycle columns count nothing else (tests/test_judge_report_store.py).
    ``counts`` and ``n_graphs``: the selection's ``judge_counts`` and graph count when the caller holds them
    (the Judges page counts them once for its tables and this report; ``counts`` only where no verdict has
    another order)."""
    from engine.diagnostics.judge_counts import bad_order, judge_counts
    from engine.diagnostics.judge_report import has_answer_texts, judge_report_of_counts
    from engine.store.graph_tally import graph_count
    from engine.views.judges_view import graphs_of_three_models

    if big_graphs is None:
        big_graphs = graphs_of_three_models(store, dataset, category)
    if n_graphs is None:
        n_graphs = graph_count(store, dataset, category=category)
    if counts is None and bad_order(store, dataset, category):
        verdicts = store.verdicts(dataset, category=category, columns=REPORT_COLUMNS)
        lengths = store_lengths(store, dataset)
        judges = sorted(verdicts["judge"].dropna().astype(str).unique())
        betas = style_length_betas(store, dataset, judges, category) if len(lengths) else None
        table = judge_report(verdicts, reference=reference, lengths=lengths, style_betas=betas,
                             big_graphs=big_graphs, n_graphs=n_graphs)
    else:
        counts = judge_counts(store, dataset, category) if counts is None else counts
        betas = (style_length_betas(store, dataset, list(counts.judges), category)
                 if has_answer_texts(store, dataset) else None)
        table = judge_report_of_counts(store, dataset, category, counts, reference=reference,
                                       style_betas=betas, big_graphs=big_graphs, n_graphs=n_graphs)
    return JudgeReportView(dataset, category, table, list(table.attrs.get("notes") or []))
