"""The AppTest harness's process-wide shortcuts (tests/app/apphelpers.py) keep AppTest's behaviour: a
script compiled once per process is compiled again when its file changes, and a run that outlasts its
timeout still stops and ends in AppTest's timeout error (the wait no longer polls)."""

from __future__ import annotations

from pathlib import Path

import pytest
from apphelpers import compile_scripts_once, scan_installed_components_once, wait_for_runs_without_polling


@pytest.fixture
def harness():
    """AppTest with the shortcuts new_app installs."""
    from streamlit.testing.v1 import AppTest

    scan_installed_components_once()
    compile_scripts_once()
    wait_for_runs_without_polling()
    return AppTest


def test_an_edited_script_runs_its_new_text(harness, tmp_path: Path):
    script = tmp_path / "page.py"

    def shown() -> list[str]:
        return [m.value for m in harness.from_file(str(script), default_timeout=60).run().markdown]

    script.write_text('import streamlit as st\nst.write("first")\n', encoding="utf-8")
    assert shown() == ["first"]
    assert shown() == ["first"]
    script.write_text('import streamlit as st\nst.write("second, longer")\n', encoding="utf-8")
    assert shown() == ["second, longer"]


def test_a_run_past_its_timeout_stops_with_apptests_error(harness, tmp_path: Path):
    script = tmp_path / "slow.py"
    # the run sleeps 0.6 s, 3x the 0.2 s timeout: the timed-out run's stop waits out that sleep (a sleeping
    # script thread cannot be stopped), then the second run sleeps again (was 1.5 s: 3 s of the test's wall)
    script.write_text('import time\nimport streamlit as st\nst.write("early")\ntime.sleep(0.6)\n'
                      'st.write("late")\n', encoding="utf-8")
    with pytest.raises(RuntimeError, match=r"timed out after 0\.2\(s\)"):
        harness.from_file(str(script), default_timeout=0.2).run()
    at = harness.from_file(str(script), default_timeout=30).run()  # within its timeout: the whole run
    assert [m.value for m in at.markdown] == ["early", "late"]
