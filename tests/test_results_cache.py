"""The engine-code fingerprint of the experiment and diagnose result caches (engine.experiments.results_cache,
engine.experiments.protocol_inputs.code_files / code_digest): a result cached by other code is never
served."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.experiments import protocol_inputs
from engine.experiments.protocol_inputs import code_digest, code_files

REPO = Path(__file__).resolve().parent.parent

LOADED = r"""
import json, sys
import numpy as np
from pathlib import Path
from engine.ingest.synthetic import SyntheticParams, generate
from engine.graphs.stack import build_stack
family = sys.argv[1]
d = generate(SyntheticParams(n_models=5, categories=2, prompts=3, paraphrases=1, samples=1, seed=1))
v = d.verdicts.assign(dataset="s", turn=1, prob_a=0.5, order="AB")
if family == "experiment":
    from engine.experiments.protocol_runs import run_protocols
    from engine.experiments.curves import keep_k_curve, mu_curve
    st = build_stack(v)
    run_protocols(st, d.truth)
    keep_k_curve(st, d.truth, ks=[2], resamples=2)
    mu_curve(st, d.truth, [1.0], k=2, resamples=2)
else:
    from engine.diagnostics import TABLES, diagnose
    for t in TABLES:
        try:
            diagnose(v, "s", table=t)
        except Exception:
            pass
engine = Path(sys.modules["engine"].__file__).resolve().parent
print(json.dumps(sorted(str(Path(m.__file__).resolve().relative_to(engine)) for n, m in sys.modules.items()
                        if (n == "engine" or n.startswith("engine.")) and getattr(m, "__file__", None))))
"""


@pytest.mark.parametrize("family", ["experiment", "diagnose"])
def test_code_files_hold_every_engine_module_python_runs(family):
    """Another way to the same set: run the family's computations in a fresh interpreter and list
    the engine modules it loaded (lazy imports included) — each must be in code_files."""
    out = subprocess.run([sys.executable, "-c", LOADED, family], capture_output=True, text=True, check=True,
                         cwd=REPO).stdout
    loaded = set(json.loads(out.strip().splitlines()[-1]))
    files = set(code_files(family))
    missing = (
        loaded - files - {"ingest/synthetic.py", "__main__.py"} if family == "diagnose" else loaded - files
    )
    assert not missing, missing
    must = {"graphs/stack.py", "graphs/cycles.py", "errors.py"}
    must |= (
        {
            "rankers/bt.py",
            "experiments/protocols.py",
            "experiments/protocol_runs.py",
            "experiments/draws.py",
            "experiments/curves.py",
            "graphs/truncation.py",
            "ranking/reference.py",
        }
        if family == "experiment"
        else {
            "diagnostics/sntd.py",
            "diagnostics/cycle_stats.py",
            "diagnostics/entropy.py",
            "graphs/triads.py",
            "diagnostics/judge_report.py",
            "rankers/bt.py",  # the judge report's per-judge style fit
        }
    )
    assert must <= files
    assert not any(f.startswith("diagnostics/") for f in code_files("experiment"))
    assert "experiments/curves.py" not in code_files("diagnose")


def test_editing_a_module_changes_only_its_familys_digest(tmp_path, monkeypatch):
    """On a copy of the engine: an edit to experiments/curves.py changes the experiment digest only; an edit
    to diagnostics/sntd.py the diagnose digest only; editing back restores both."""
    copy = tmp_path / "engine"
    shutil.copytree(protocol_inputs.ENGINE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(protocol_inputs, "ENGINE", copy)
    before = {f: code_digest(f) for f in ("experiment", "diagnose")}
    assert before == {f: code_digest(f) for f in ("experiment", "diagnose")}  # deterministic
    bt = copy / "experiments" / "curves.py"
    text = bt.read_text()
    bt.write_text(text + "\n# changed\n")
    after = {f: code_digest(f) for f in ("experiment", "diagnose")}
    assert after["experiment"] != before["experiment"] and after["diagnose"] == before["diagnose"]
    bt.write_text(text)
    sntd = copy / "diagnostics" / "sntd.py"
    sntd.write_text(sntd.read_text() + "\n# changed\n")
    again = {f: code_digest(f) for f in ("experiment", "diagnose")}
    assert again["experiment"] == before["experiment"] and again["diagnose"] != before["diagnose"]
    with pytest.raises(Exception, match="Unknown cached-result family"):
        code_files("leaderboard")


def test_code_digest_is_the_hash_of_the_files_names_and_bytes(tmp_path, monkeypatch):
    """Another way to the digest: sha256 over each of ``code_files``' names and the sha256 of its bytes read
    now, with no memo; on a copy of the engine, before and after an edit of each family's module (the
    digest takes each file's signature from the import walk, not a stat of its own)."""
    import hashlib

    copy = tmp_path / "engine"
    shutil.copytree(protocol_inputs.ENGINE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(protocol_inputs, "ENGINE", copy)

    def brute(family: str) -> str:
        h = hashlib.sha256()
        for name in code_files(family):
            h.update(name.encode())
            h.update(hashlib.sha256((copy / name).read_bytes()).hexdigest().encode())
        return h.hexdigest()

    for edit in (None, "experiments/curves.py", "diagnostics/sntd.py"):
        if edit:
            (copy / edit).write_text((copy / edit).read_text() + "\n# changed\n")
        for family in ("experiment", "diagnose"):
            assert code_digest(family) == brute(family), (edit, family)


def test_a_changed_code_digest_misses_both_caches(shipped_db, tmp_path, monkeypatch, capsys):
    """The experiment CLI and the diagnose cache each hit on a repeat and miss (and recompute the same
    numbers) once the digest of their own code changes; the other family's change leaves them alone."""
    from engine.__main__ import main
    from engine.diagnostics import diagnose_cached
    from engine.store.connection import Store

    db = tmp_path / "copy.duckdb"
    shutil.copy(shipped_db, db)
    args = ["--db", str(db), "experiment", "baselines", "--dataset", "vicuna80", "--reference", "arena",
            "--judge", "gpt-4", "--protocols", "trunc", "--resamples", "3", "--format", "csv"]

    with Store(db) as store:  # the shared shipped store may hold results of earlier tests
        store.cursor().execute("DELETE FROM results_cache")

    def rows(kind_prefix: str) -> int:
        with Store(db) as store:
            return store.cursor().execute("SELECT count(*) FROM results_cache WHERE kind LIKE ?",
                                          [kind_prefix + "%"]).fetchone()[0]

    def experiment() -> str:
        assert main(args) == 0
        return capsys.readouterr().out

    def diag():
        with Store(db) as store:
            return diagnose_cached(store, "vicuna80", judge="claude", table="position")

    first = experiment()
    d1, hit1 = diag()
    assert experiment() == first and rows("experiment") == 1
    assert diag()[1] and not hit1 and rows("diagnose") == 1
    real = protocol_inputs.code_digest
    monkeypatch.setattr(
        protocol_inputs, "code_digest", lambda f="experiment": real(f) + ("x" if f == "experiment" else "")
    )
    assert experiment() == first and rows("experiment") == 2  # missed: recomputed, same numbers
    assert diag()[1] and rows("diagnose") == 1  # diagnose code unchanged: still served
    monkeypatch.setattr(protocol_inputs, "code_digest", lambda f="experiment": real(f) + "y")
    d3, hit3 = diag()
    assert not hit3 and rows("diagnose") == 2 and d3.equals(d1)
    assert experiment() == first and rows("experiment") == 3
