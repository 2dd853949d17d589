"""Issue 23, bug 4: a judge run that has not finished (still running, or killed -9) leaves a
part-written dataset; every CLI command that shows or ranks it says so in one sentence on stderr,
every app page that shows it has a warning at the top, ``calls --runs`` counts the calls the killed
run stored, and a rerun that completes the dataset removes every notice. The run is real (a `judge`
process against the fake server, killed with SIGKILL); the counts are read back with plain SQL."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import duckdb
import pandas as pd
from apphelpers import assert_clean, new_app, unescape_md
from conftest import REPO, run_engine
from judging_fake_openai import FakeOpenAI
from test_judging_api import judge_cmd

PAGES = [f"app_pages/{p}.py" for p in ("1_leaderboard", "2_truncation", "3_cycles", "4_inspector",
                                        "5_judges")]  # fmt: skip
CALLS = 16 * 3 * 2  # MT-Bench --limit 2: 16 prompts x 3 pairs x 2 orders


def _wait_for(cond, seconds: float = 120.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.01)
    return False


def _shows(db: Path, tmp_path: Path) -> dict[str, subprocess.CompletedProcess]:
    """The commands that show or rank dataset k, run in this process."""
    base = ["--db", str(db)]
    prompt = _one(db, "SELECT min(prompt_id) FROM verdicts WHERE dataset = 'k'")
    return {
        "leaderboard": run_engine([*base, "leaderboard", "--dataset", "k"]),
        "diagnose": run_engine([*base, "diagnose", "--dataset", "k", "--table", "overview"]),
        "graphs": run_engine([*base, "graphs", "--dataset", "k"]),
        "triads": run_engine([*base, "triads", "--dataset", "k", "--prompt-id", str(prompt)]),
        "datasets": run_engine([*base, "datasets"]),
        "export": run_engine([*base, "datasets", "export", "k", str(tmp_path / "k.csv")]),
    }


def _notes(out: subprocess.CompletedProcess) -> list[str]:
    return [line for line in out.stderr.splitlines() if "is incomplete" in line]


def _page_warnings(db: Path, monkeypatch) -> dict[str, list[str]]:
    """Per page, its warnings about an incomplete dataset, dataset k chosen (by the address's query,
    as a link to it does), the pages visited in one session."""
    at = new_app(db, monkeypatch, PAGES[0], {"dataset": "k"})
    seen = {}
    for page in PAGES:
        if page != PAGES[0]:
            at = at.switch_page(page).run()
        assert at.session_state["dataset"] == "k"
        assert_clean(at)
        seen[page] = [unescape_md(w.value) for w in at.warning if "is incomplete" in w.value]
    return seen


def _one(db: Path, sql: str):
    """``sql``'s one number, read while a judge process may hold the file for a moment (retried)."""
    for _ in range(3000):
        try:
            con = duckdb.connect(str(db), read_only=True)
        except duckdb.Error:
            time.sleep(0.01)
            continue
        try:
            return con.execute(sql).fetchone()[0]
        finally:
            con.close()
    raise AssertionError(f"{db} stayed locked")


def test_an_unfinished_judge_run_marks_its_dataset_everywhere_until_a_rerun_completes_it(
    tmp_path, monkeypatch
):
    """Fails on fa0c159: no command and no page says anything, and `calls --runs` shows 0 calls made
    for the killed run."""
    db = tmp_path / "k.duckdb"
    run = "judge run 1 (openai model 'fake-judge', protocol swapped)"
    # the gate closes at the 51st request (about 23 of 48 pairs judged): the run stays alive, its next calls
    # waiting inside the server, and the verdict writer writes the finished pairs within its 2 s
    with FakeOpenAI(delay_s=0.05, gate_after=50) as srv:
        cmd = judge_cmd(db, "k", srv.base_url, "--concurrency", "4", limit="2")
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            assert _wait_for(lambda: srv.at_gate >= 4 or proc.poll() is not None) and proc.poll() is None
            assert _wait_for(
                lambda: time.sleep(0.1) or _one(db, "SELECT count(*) FROM verdicts WHERE dataset = 'k'") > 0
            )
            live = run_engine(["--db", str(db), "leaderboard", "--dataset", "k"])
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            srv.gate.set()
        assert live.returncode == 0 and _notes(live) == [
            f"note: dataset 'k' is incomplete: {run} is still writing to it, so its numbers will change "
            "when the run ends."
        ], live.stderr
        stored = _one(db, "SELECT count(*) FROM judge_calls WHERE run_id = 1")
        assert 0 < stored < CALLS
        killed = (
            f"dataset 'k' is incomplete: {run} was killed before it finished ({stored} calls stored), so "
            "results over it cover only what that run wrote; rerun the same command to complete it "
            "(stored calls are not paid again)."
        )
        for name, out in _shows(db, tmp_path).items():
            assert out.returncode == 0, (name, out.stderr)
            assert _notes(out) == [f"note: {killed}"], (name, out.stderr)
            assert "incomplete" not in out.stdout
        runs = run_engine(["--db", str(db), "calls", "--runs", "--format", "csv"])
        row = pd.read_csv(pd.io.common.StringIO(runs.stdout)).iloc[0]
        assert (row.status, row.calls_made) == ("interrupted", stored)  # marked by `calls --runs`
        interrupted = killed.replace("was killed", "was interrupted or killed")
        leaderboard = run_engine(["--db", str(db), "leaderboard", "--dataset", "k"])
        assert _notes(leaderboard) == [f"note: {interrupted}"]
        assert _page_warnings(db, monkeypatch) == {p: [interrupted[0].upper() + interrupted[1:]]
                                                  for p in PAGES}  # fmt: skip

        srv.delay_s = 0.0  # the slow replies only kept the kill inside the run; the rerun needs none
        done = run_engine(judge_cmd(db, "k", srv.base_url, limit="2")[3:])
    assert done.returncode == 0, done.stderr
    assert _notes(done) == []
    for name, out in _shows(db, tmp_path).items():
        assert out.returncode == 0 and _notes(out) == [], (name, out.stderr)
    assert _page_warnings(db, monkeypatch) == {p: [] for p in PAGES}
