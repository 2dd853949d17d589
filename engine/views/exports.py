"""Results as downloadable files: the leaderboard (CSV, JSON with its parameters), the per-graph
cycle table, the judge diagnostics and the judge report, alone or together in one ZIP; and the one CSV writer.

The app's download buttons call these lazily (only when clicked), so building a file never slows
a page.

Every CSV the tool writes (these files, ``--format csv`` on the command line, ``datasets export``,
rejected rows) goes through ``write_csv``, which makes cells inert for spreadsheets: a text cell (or
column name) that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return would be
evaluated as a formula by Excel, LibreOffice or Google Sheets (``=HYPERLINK(...)`` as a model name),
so it gets a leading ``'`` (the OWASP rule), which spreadsheets show as text and hide. Plain numbers
(``-0.5``, ``+3``, ``1e-3``) are left alone. A cell that already starts with ``'`` gets one more, so
``restore_csv_cell`` undoes the rule exactly (for reading such a CSV back). JSON, JSON lines and
Parquet keep the raw values.
"""

from __future__ import annotations

import io
import json
import zipfile

import pandas as pd

from engine.ingest.csv_cells import csv_safe, neutralise_cell, restore_csv_cell, write_csv  # noqa: F401 - re-exported


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """A frame as UTF-8 CSV (neutralised, no index, ``\\n`` line ends)."""
    return write_csv(frame).encode("utf-8")


def leaderboard_json(board) -> bytes:
    """An ``engine.views.appstate.AppBoard`` as JSON: params, reference note, distances and rows."""
    doc = {
        "params": board.params,
        "reference": board.reference_note,
        "distances": board.distances,
        "table": json.loads(board.table.to_json(orient="records")),
    }
    return json.dumps(doc, indent=2, default=str).encode("utf-8")


def graphs_table(overview, mu: float) -> pd.DataFrame:
    """The Cycles page's per-graph table (counts and S_mu, highest first) without the app links."""
    from engine.views.viz import graphs_by_score

    return graphs_by_score(overview.graphs, mu).drop(columns=["link"], errors="ignore")


def judges_tables(judges) -> dict[str, pd.DataFrame]:
    """The Judges page's tables by file stem (κ matrix with the judge as first column)."""
    return {
        "judges_kappa_matrix": judges.kappa_matrix.rename_axis("judge").reset_index(),
        "judges_agreement": judges.agreement,
        "judges_position_bias": judges.position,
        "judges_transitivity": judges.transitivity,
    }


def results_zip(board=None, overview=None, judges=None, *, mu: float = 1.0, about: str = "",
                judge_report=None) -> bytes:
    """One ZIP of every result given: leaderboard.csv/.json, graphs.csv, judges_*.csv, README.txt, and
    the judge report (an ``engine.views.judge_report_view.JudgeReportView``) as judge_report.json (the
    rows of ``diagnose --table judges --format json`` with its reference and notes) and judge_report.csv."""
    files: dict[str, bytes] = {}
    if board is not None:
        files["leaderboard.csv"] = csv_bytes(board.table)
        files["leaderboard.json"] = leaderboard_json(board)
    if overview is not None:
        files["graphs.csv"] = csv_bytes(graphs_table(overview, mu))
    if judges is not None:
        for stem, frame in judges_tables(judges).items():
            files[f"{stem}.csv"] = csv_bytes(frame)
    if judge_report is not None:
        files["judge_report.json"] = judge_report.report_json()
        files["judge_report.csv"] = csv_bytes(judge_report.table)
    readme = "Tournament Lens results\n" + (about.strip() + "\n" if about else "") + "".join(
        f"- {name}\n" for name in files)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("README.txt", readme)
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()
