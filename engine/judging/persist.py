"""Writing judging outputs into the store: prompts, answers, verdicts, runs and variant lineage.

Judging's table access lives in two modules and nowhere else: this one (prompts, answers, verdicts,
paraphrase variants and their lineage, runs) and ``call_rows`` (the call cache's ``judge_calls`` and
``judge_call_leases``); ``paraphrase`` (variant numbering), ``cache`` (keys, lease policy) and the CLI
call their named functions and build no SQL. They stay in the judging package rather than in
``engine.store`` because those tables, their run-liveness and lease rules and their row shapes
(ChatRequest, run stats) are judging's own, while the store layer may import nothing above it.

Verdicts replace, never duplicate: storing the rows of a pair first deletes that pair's earlier rows
for the same dataset, judge and prompt instance, so a rerun or a resumed run leaves exactly one set.
Each write is one transaction and, when it changes something, takes a fresh dataset version from
the store's one counter, so cached results refresh (texts already stored as they are change
nothing). The SQL on the shared dataset tables (datasets, prompts, answers, verdicts) is
``engine.store.writes``'s; the run and lineage tables below are judging's own.

Runs are recorded with their process id and host. Two live runs that would make the same calls
(same kind, dataset, backend and model), or two ``perturb`` runs of one dataset (they would hand out
the same new variant numbers), are not allowed at once: the second ``start_run`` refuses with one
sentence (``RunInProgress``), checked and recorded in one transaction so two processes starting
together cannot both pass. The DuckDB file lock alone would let both run and pay for every call twice.
A run's process is recognised by its id *and* start time (``liveness``): a killed run whose id now
belongs to another process counts as gone. ``force=True`` starts anyway and marks the clashing runs
``interrupted`` (the call cache's claims still keep the two from paying for one call twice).
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager

import duckdb
import pandas as pd

from engine.errors import LensError
from engine.judging.liveness import me, same_process_alive
from engine.store import writes
from engine.store.connection import Store
from engine.store.sql import scalar


class RunInProgress(LensError):
    """Another live process is already doing this run on the same store."""


_PAIR_KEY = ["prompt_id", "variant", "turn", "model_a", "model_b"]


def write_prompts(store: Store, dataset: str, prompts: pd.DataFrame, *, source: str = "judging") -> int:
    """Upsert prompt texts (prompt_id, variant, turn, category, variant_kind, parent_variant, text); the
    dataset takes a new version only when a text is new or changed (a rerun's identical texts write
    nothing: no version moves and no datasets row is rewritten)."""
    df = prompts.copy()
    for col, default in (("variant", 0), ("variant_kind", "original"), ("parent_variant", None)):
        if col not in df:
            df[col] = default
    with store.transaction() as cur:
        if writes.upsert_prompts(cur, dataset, df):
            writes.dataset_written(cur, dataset, description="judge run", source=source)
    return len(df)


def write_answers(store: Store, dataset: str, answers: pd.DataFrame, *, source: str = "judging") -> int:
    """Upsert answer texts (prompt_id, variant, turn, model, text); a new version only when one is new
    or changed, as ``write_prompts``."""
    df = answers.copy()
    if "variant" not in df:
        df["variant"] = 0
    with store.transaction() as cur:
        if writes.upsert_answers(cur, dataset, df):
            writes.dataset_written(cur, dataset, description="judge run", source=source)
    return len(df)


def write_verdicts(
    store: Store, dataset: str, judge: str, rows: pd.DataFrame, *, source: str, first_line: int = 1
) -> int:
    """Replace the verdicts of every pair in ``rows`` (protocols.ROW_COLUMNS) for this judge.

    ``source`` names the run (source_file) and rows are numbered from ``first_line`` (source_line),
    so every stored verdict points back to the run and its position in it.
    """
    if rows.empty:
        return 0
    df = rows.copy()
    df["source_line"] = range(first_line, first_line + len(df))
    df["prob_a"] = df["prob_a"].astype("float64")
    with store.transaction() as cur:
        writes.dataset_written(cur, dataset, description="judge run", source=source)
        writes.replace_pair_verdicts(cur, dataset, judge, df, source)
    return len(df)


def mark_interrupted(store: Store) -> int:
    """Mark runs left ``running`` by a process that is gone (killed) as ``interrupted``; how many.

    Only runs started on this host are checked (another host's process cannot be seen); runs
    recorded before the pid column existed count as gone. A process counts as the run's only when
    its start time matches the one recorded (a reused pid is another process).
    """
    host = socket.gethostname()
    rows = (
        store.cursor()
        .execute("SELECT run_id, pid, host, pid_started FROM judge_runs WHERE status = 'running'")
        .fetchall()
    )
    dead = [
        rid
        for rid, pid, h, started in rows
        if pid is None or (h == host and not same_process_alive(int(pid), started))
    ]
    if dead:
        with store.transaction() as cur:
            cur.execute(
                "UPDATE judge_runs SET status = 'interrupted' WHERE status = 'running' AND run_id IN ("
                + ", ".join("?" for _ in dead)
                + ")",
                dead,
            )
    return len(dead)


def _conflict(cur, kind: str, dataset: str, backend: str, model: str) -> tuple | None:
    """A live run of another process on this host that clashes with the one about to start."""
    host, mypid = socket.gethostname(), os.getpid()
    rows = cur.execute(
        "SELECT run_id, kind, backend, model, pid, pid_started FROM judge_runs WHERE status = 'running'"
        " AND dataset = ? AND host = ? AND pid IS NOT NULL AND pid <> ? AND kind = ? ORDER BY run_id",
        [dataset, host, mypid, kind],
    ).fetchall()
    for row in rows:
        same_calls = row[2] == backend and row[3] == model
        if (same_calls or kind == "perturb") and same_process_alive(int(row[4]), row[5]):
            return row[:5]
    return None


def _refusal(dataset: str, row: tuple) -> RunInProgress:
    run_id, kind, backend, model, pid = row
    return RunInProgress(
        f"Run {run_id} ({kind} of dataset {dataset!r} with {backend} model {model!r}, process {pid}) is "
        "still running on this store; wait for it to finish or stop it, then rerun (its finished calls "
        "are reused), or add --force if that process is not this run."
    )


def require_prompts(store: Store, dataset: str, purpose: str, *, variants: list[int] | None = None) -> None:
    """Refuse (one sentence) a run on a dataset that does not exist or has no turn-1 prompt texts
    (of ``variants``, when given): it would record a run that does nothing. Checked before
    ``start_run``. ``purpose`` completes "has no prompt texts to ...", e.g. ``paraphrase``."""
    if not store.has_dataset(dataset):
        names = list(store.datasets()["name"])
        known = (
            "known datasets: "
            f"{', '.join(names[:12])}{f' and {len(names) - 12} more' if len(names) > 12 else ''}"
            if names
            else "the store holds no datasets yet (load prompts with judge --inputs mt_bench)"
        )
        raise LensError(f"There is no dataset named {dataset!r} in {store.path}; {known}.")
    sql = "SELECT count(*) FROM prompts WHERE dataset = ? AND turn = 1"
    params: list = [dataset]
    if variants is not None:
        sql += f" AND variant IN ({', '.join('?' for _ in variants) or 'NULL'})"
        params += [int(v) for v in variants]
    if scalar(store.cursor(), sql, params) == 0:
        which = f" of variant {', '.join(map(str, variants))}" if variants is not None else ""
        raise LensError(
            f"Dataset {dataset!r} has no prompt texts{which} to {purpose}; load prompts with "
            "judge --inputs, or choose a dataset that has them."
        )


def ensure_no_live_run(
    store: Store, kind: str, dataset: str, backend: str, model: str, *, force: bool = False
) -> None:
    """Refuse early (before any input is written) if ``start_run`` would refuse; see the module docstring."""
    if force:
        return
    with store.session():
        row = _conflict(store.cursor(), kind, dataset, backend, model)
    if row is not None:
        raise _refusal(dataset, row)


def start_run(
    store: Store,
    kind: str,
    dataset: str,
    backend: str,
    model: str,
    protocol: str | None,
    params: dict,
    *,
    force: bool = False,
) -> int:
    """Record a new run (status ``running``, this process's pid); first mark killed runs interrupted.

    Raises ``RunInProgress`` if a live process is doing a clashing run (module docstring); the check
    and the insert are one transaction.
    """
    mark_interrupted(store)
    with store.transaction() as cur:
        while (clash := _conflict(cur, kind, dataset, backend, model)) is not None:
            if not force:
                raise _refusal(dataset, clash)
            cur.execute("UPDATE judge_runs SET status = 'interrupted' WHERE run_id = ?", [clash[0]])
        host, pid, started = me()
        run_id = scalar(
            cur,
            "INSERT INTO judge_runs (kind, dataset, backend, model, protocol, params, pid, host, pid_started)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING run_id",
            [
                kind,
                dataset,
                backend,
                model,
                protocol,
                json.dumps(params, sort_keys=True, default=str),
                pid,
                host,
                started,
            ],
        )
    return int(run_id)


def run_status(stats, error: BaseException | None = None) -> str:
    """``done``, ``failed-calls`` (some calls failed after all retries), ``failed`` or ``interrupted``."""
    if isinstance(error, KeyboardInterrupt):
        return "interrupted"
    if error is not None:
        return "failed"
    return "done" if stats.failed == 0 else "failed-calls"


def finish_run(store: Store, run_id: int, stats, status: str, *, truncated_pairs: int = 0) -> None:
    """Record a run's end: its status, call counts and truncated pairs, so ``calls --runs`` shows the
    outcome."""
    with store.transaction() as cur:
        cur.execute(
            "UPDATE judge_runs SET status = ?, calls_made = ?, calls_cached = ?, calls_failed = ?,"
            " truncated_pairs = ?, finished_at = current_timestamp WHERE run_id = ?",
            [status, stats.made, stats.cached, stats.failed, truncated_pairs, run_id],
        )


@contextmanager
def recorded_run(
    store: Store, kind: str, dataset: str, runner, params: dict, *, force: bool = False
) -> Iterator[int]:
    """A ``start_run`` … ``finish_run`` bracket for a generate or perturb run driven by ``runner``:
    yields the run id (also set on the runner, so its calls name the run) and records the final
    status whatever happens inside (``interrupted`` on Ctrl-C, ``failed`` on an error)."""
    run_id = start_run(
        store, kind, dataset, runner.backend.name, runner.backend.model, None, params, force=force
    )
    runner.run_id = run_id
    error: BaseException | None = None
    try:
        yield run_id
    except BaseException as exc:
        error = exc
        raise
    finally:
        try:
            finish_run(store, run_id, runner.stats, run_status(runner.stats, error))
        except (LensError, OSError, duckdb.Error):
            if error is None:
                raise  # else the run's own error (often: the store is unavailable) is the one to report


# -- paraphrase variants (perturb) -------------------------------------------------------------------
PROMPT_COLUMNS = writes.PROMPT_TEXT_COLUMNS
LINEAGE_COLUMNS = (
    "prompt_id",
    "variant",
    "turn",
    "parent_variant",
    "candidate_index",
    "generator_call",
    "check_call",
)


def write_variants(store: Store, dataset: str, prompts: pd.DataFrame, lineage_rows: pd.DataFrame) -> None:
    """Insert new paraphrase variants (PROMPT_COLUMNS) and their lineage rows (LINEAGE_COLUMNS) in one
    transaction, naming every column so a migration that adds one cannot shift the values."""
    lcols = writes.identifiers(LINEAGE_COLUMNS)
    with store.transaction() as cur:
        writes.dataset_written(cur, dataset, description="judge run", source="perturb")
        writes.insert_prompts(cur, dataset, prompts)
        cur.register("_l", lineage_rows[list(LINEAGE_COLUMNS)])
        cur.execute(f"INSERT INTO variant_lineage (dataset, {lcols}) SELECT ?, {lcols} FROM _l", [dataset])
        cur.unregister("_l")


def highest_variants(store: Store, dataset: str) -> dict[str, int]:
    """Per prompt, the highest variant number used anywhere (prompts, answers or verdicts), so a new
    paraphrase never takes a number that answers or verdicts already refer to."""
    rows = store.cursor().execute(
        "SELECT prompt_id, max(variant) FROM ( SELECT prompt_id, variant FROM prompts WHERE dataset = ?"
        " UNION ALL SELECT prompt_id, variant FROM answers WHERE dataset = ?"
        " UNION ALL SELECT prompt_id, variant FROM verdicts WHERE dataset = ?) GROUP BY prompt_id",
        [dataset, dataset, dataset],
    ).fetchall()
    return {str(pid): int(v) for pid, v in rows}


def lineage(store: Store, dataset: str) -> pd.DataFrame:
    """The lineage rows of a dataset's paraphrased variants."""
    return store.cursor().execute(
        "SELECT * FROM variant_lineage WHERE dataset = ? ORDER BY prompt_id, variant", [dataset]
    ).df()


def run_table(store: Store) -> pd.DataFrame:
    """Every recorded run (without its parameter JSON), oldest first, for ``calls --runs``.

    A run that never finished (killed) never wrote its counts: its ``calls_made`` is the number of
    calls the cache holds from it (those only in its journal are filed, and counted, by the next run)."""
    return store.cursor().execute(
        "SELECT * EXCLUDE (params) REPLACE (CASE WHEN finished_at IS NULL THEN (SELECT count(*) FROM"
        " judge_calls c WHERE c.run_id = r.run_id) ELSE calls_made END AS calls_made)"
        " FROM judge_runs r ORDER BY run_id"
    ).df()
