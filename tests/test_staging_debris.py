"""A killed import's staging folder is removed by the next import (issue 23, bug 16).

Before: every kill -9 of an import left its ``lens-import-*`` folder (29 kills: 549 MB, never
removed). Now a stage folder's name carries its process id and pid namespace, and each new stage
removes the folders whose process is gone; a live process's folder, one from another namespace (a
container sharing the folder) and one without an id (an older version's) are left alone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from engine.ingest import staging
from engine.ingest.staging import PREFIX, Stage, remove_orphans
from tests.conftest import REPO, run_engine


def _stages(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith(PREFIX))


def _dead_pid() -> int:
    """The id of a process that has ended (and been reaped)."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_a_killed_import_leaves_its_folder_and_the_next_import_removes_it(tmp_path):
    n = 200_000
    rng = np.random.default_rng(0)
    big = tmp_path / "big.csv"
    pd.DataFrame({"prompt_id": np.arange(n) // 5, "model_a": rng.choice(["a", "b"], n), "model_b": "c",
                  "winner": rng.choice(["A", "B", "tie"], n)}).to_csv(big, index=False)
    stage_root = tmp_path / "stage"
    stage_root.mkdir()
    env = {**os.environ, "LENS_TMPDIR": str(stage_root), "LENS_IMPORT_BATCH_ROWS": "2000"}
    db = tmp_path / "lens.duckdb"
    assert run_engine(["--db", db, "datasets"], env=env).returncode == 0  # the shipped dataset first
    assert _stages(stage_root) == []  # the shipped import's stage went with its report
    proc = subprocess.Popen([sys.executable, "-m", "engine", "--db", str(db), "import", str(big), "--dataset",
                             "big"], cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):  # until the import has staged a batch (or ended)
            if any((stage_root / s).iterdir() for s in _stages(stage_root)) or proc.poll() is not None:
                break
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    left = _stages(stage_root)
    assert left  # what the kill leaves
    small = tmp_path / "small.csv"
    small.write_text("prompt_id,model_a,model_b,winner\n1,a,b,A\n")
    res = run_engine(["--db", db, "import", small, "--dataset", "small"], env=env)
    assert res.returncode == 0, res.stderr
    assert _stages(stage_root) == []  # old: the killed import's folder still there


def test_only_folders_of_gone_processes_in_this_namespace_are_removed(tmp_path):
    ns = staging._pid_namespace()
    dead = _dead_pid()
    keep = [f"{PREFIX}{ns}-{os.getpid()}-live", f"{PREFIX}{ns + 1}-{dead}-other-namespace",
            f"{PREFIX}old-style", f"{PREFIX}{ns}-{dead}-a-file"]
    gone = [f"{PREFIX}{ns}-{dead}-killed"]
    for name in keep[:3] + gone:
        (tmp_path / name).mkdir()
        (tmp_path / name / "good-1.parquet").write_bytes(b"x")
    (tmp_path / keep[3]).write_text("not a folder")
    assert remove_orphans(tmp_path) == [tmp_path / gone[0]]
    assert _stages(tmp_path) == sorted(keep)


def test_a_stage_names_its_process(tmp_path, monkeypatch):
    monkeypatch.setenv("LENS_TMPDIR", str(tmp_path))
    stage = Stage()
    assert stage.dir.name.startswith(f"{PREFIX}{staging._pid_namespace()}-{os.getpid()}-")
    assert remove_orphans(tmp_path) == [] and stage.dir.exists()  # this process is alive
