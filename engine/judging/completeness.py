"""Which datasets a judging run left incomplete: the one rule behind the CLI's stderr sentence and the
app's page note.

A judge, generate or perturb run writes into its dataset as it goes (verdicts, answers or paraphrases
a small batch at a time), so a run that did not finish leaves the dataset part-written: a leaderboard
over it ranks whatever pairs happened to be judged. A dataset is *incomplete* while its latest run of
some kind of calls (same kind, backend, model and protocol: what a rerun of the same command does) did
not finish: it is still running (its process is alive: the dataset is growing), it was killed
(recorded ``running`` but its process is gone), interrupted (Ctrl-C) or ``failed`` (a stop error such
as an unreachable server or a full store). A later run of the same calls that finishes (``done``, or
``failed-calls``: every pair was tried, the failed calls counted) completes it again.

Reads only (liveness is judged here, nothing is marked), so a read-only caller such as the app can
ask; the process check is ``liveness``'s (pid and start time, on this host).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

from engine.judging.liveness import same_process_alive
from engine.store.connection import Store

FINISHED = ("done", "failed-calls")
"""Run statuses after which the run's dataset holds everything the run set out to write."""


@dataclass(frozen=True)
class UnfinishedRun:
    """The latest run of one kind of calls on a dataset, which did not finish."""

    run_id: int
    dataset: str
    kind: str
    backend: str
    model: str
    protocol: str | None
    state: str  # running | killed | interrupted | failed
    calls_stored: int  # calls of this run in the call cache

    def sentence(self) -> str:
        """One sentence for a person: which dataset, which run, what happened, what to do."""
        what = f"{self.kind} run {self.run_id} ({self.backend} model {self.model!r}"
        what += f", protocol {self.protocol})" if self.protocol else ")"
        if self.state == "running":
            return (
                f"dataset {self.dataset!r} is incomplete: {what} is still writing to it, so its numbers "
                "will change when the run ends."
            )
        how = {
            "killed": "was killed",
            "interrupted": "was interrupted or killed",
            "failed": "stopped on an error",
        }
        return (
            f"dataset {self.dataset!r} is incomplete: {what} {how[self.state]} before it finished "
            f"({self.calls_stored} calls stored), so results over it cover only what that run wrote; "
            "rerun the same command to complete it (stored calls are not paid again)."
        )


def unfinished_runs(store: Store, dataset: str | None = None) -> list[UnfinishedRun]:
    """The unfinished latest runs (module docstring) of ``dataset``, or of every dataset the store
    still holds (a deleted dataset's runs say nothing); oldest first.

    A run left ``running`` by a process that is gone reads ``killed``; one that ``calls --runs`` or
    a later run already marked reads ``interrupted`` (killed, or stopped with Ctrl-C)."""
    sql = """
        WITH latest AS (
            SELECT *, row_number() OVER (
                PARTITION BY dataset, kind, backend, model, coalesce(protocol, '') ORDER BY run_id DESC
            ) AS newest
            FROM judge_runs
        )
        SELECT run_id, dataset, kind, backend, model, protocol, status, pid, host, pid_started
        FROM latest WHERE newest = 1 AND status NOT IN ('done', 'failed-calls')
          AND dataset IN (SELECT name FROM datasets)
    """
    params: list = []
    if dataset is not None:
        sql += " AND dataset = ?"
        params.append(dataset)
    # every command asks (engine.cli._common.note_incomplete), every page run too (app_pages._lens.current),
    # and most stores have no run left unfinished: one plain look says so (about 1 ms) before the window
    # query (5-7 ms, 1/20 of a command's start-up), and while the store file is unchanged since a look that
    # found none, the answer is still none without opening the file (``Store.read_unless_changed``; a run's
    # rows are only ever written by commits). Which runs are unfinished, and whether their processes live,
    # is read each time.
    unfinished = "SELECT 1 FROM judge_runs WHERE status NOT IN ('done', 'failed-calls') LIMIT 1"
    if not store.read_unless_changed("runs_unfinished",
                                     lambda: bool(store.cursor().execute(unfinished).fetchall())):
        return []
    cur = store.cursor()
    rows = cur.execute(sql + " ORDER BY run_id", params).fetchall()
    host = socket.gethostname()
    out = []
    for run_id, ds, kind, backend, model, protocol, status, pid, rhost, started in rows:
        state = status if status in ("interrupted", "failed") else "failed"
        if status == "running":
            alive = pid is not None and (rhost != host or same_process_alive(int(pid), started))
            state = "running" if alive else "killed"
        row = cur.execute("SELECT count(*) FROM judge_calls WHERE run_id = ?", [run_id]).fetchone()
        stored = int(row[0]) if row else 0
        out.append(UnfinishedRun(int(run_id), ds, kind, backend, model, protocol, state, stored))
    return out


def incomplete_sentences(store: Store, datasets: list[str] | None = None) -> list[str]:
    """One sentence per unfinished run of the named datasets (all datasets when ``None``); never raises
    for a store it cannot read (a notice must not stop the command that asked)."""
    try:
        if datasets is None:
            return [r.sentence() for r in unfinished_runs(store)]
        return [r.sentence() for d in dict.fromkeys(datasets) for r in unfinished_runs(store, d)]
    except Exception:  # noqa: BLE001 - the notice is advice; the command's own reads report real errors
        return []
