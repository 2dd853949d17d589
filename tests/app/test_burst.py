"""app_pages/_burst.py in a real Streamlit run (AppTest): inside ``one_burst`` the elements a run makes reach
Streamlit's queue (the script runner's) only together, at the block's end or ``hold_s`` after the first one
held; a message another thread sends goes at once, after those held before it; every element is shown, in
the order made, as without the hold."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _script(mode: str) -> None:
    import threading
    import time

    import streamlit as st
    from streamlit.runtime.scriptrunner_utils.script_run_context import add_script_run_ctx, get_script_run_ctx

    from app_pages._burst import one_burst

    ctx = get_script_run_ctx()
    runner = ctx._enqueue.__self__  # the real script runner whose queue the messages reach

    def queued() -> list[str]:
        """The markdown bodies that reached the runner's queue so far, in order."""
        return [m.delta.new_element.markdown.body for m in runner.forward_msg_queue._queue
                if m.WhichOneof("type") == "delta" and m.delta.new_element.WhichOneof("type") == "markdown"]

    seen: dict[str, list[str]] = {}
    st.markdown("before")
    seen["start"] = queued()
    with one_burst(hold_s=0.5 if mode != "timer" else 0.05) as held:
        st.markdown("a")
        st.markdown("b")
        seen["held"] = queued()
        if mode == "timer":
            time.sleep(0.6)  # well past the hold: the timer has handed them on
            seen["after hold"] = queued()
            st.markdown("c")
            seen["c held"] = queued()
        if mode == "thread":
            slot = st.empty()
            thread = threading.Thread(target=lambda: slot.markdown("from a thread"))
            add_script_run_ctx(thread, ctx)
            thread.start()
            thread.join()
            seen["thread"] = queued()
            st.markdown("c")
        if mode == "explicit":
            held.flush()  # the page's "a slow part follows"
            seen["flushed"] = queued()
            st.markdown("c")
            seen["c held"] = queued()
        seen["flushes"] = [str(held.flushes)]
    seen["end"] = queued()
    st.markdown("after")
    st.session_state["seen"] = seen


def test_the_block_s_elements_reach_the_queue_together_at_its_end():
    at = AppTest.from_function(_script, args=("plain",)).run(timeout=30)
    assert not at.exception
    seen = at.session_state["seen"]
    assert seen["start"] == ["before"]
    assert seen["held"] == ["before"]  # made, not handed on
    assert seen["end"] == ["before", "a", "b"]
    assert seen["flushes"] == ["0"]
    assert [m.value for m in at.markdown] == ["before", "a", "b", "after"]


def test_a_slow_block_hands_on_what_it_made_after_the_hold():
    at = AppTest.from_function(_script, args=("timer",)).run(timeout=30)
    assert not at.exception
    seen = at.session_state["seen"]
    assert seen["held"] == ["before"]
    assert seen["after hold"] == ["before", "a", "b"]
    assert seen["c held"] == ["before", "a", "b"]  # a new hold begins with the next element
    assert seen["end"] == ["before", "a", "b", "c"]
    assert seen["flushes"] == ["1"]
    assert [m.value for m in at.markdown] == ["before", "a", "b", "c", "after"]


def test_another_thread_s_message_goes_at_once_after_those_held():
    at = AppTest.from_function(_script, args=("thread",)).run(timeout=30)
    assert not at.exception
    seen = at.session_state["seen"]
    assert seen["thread"] == ["before", "a", "b", "from a thread"]
    assert seen["end"] == ["before", "a", "b", "from a thread", "c"]
    assert [m.value for m in at.markdown] == ["before", "a", "b", "from a thread", "c", "after"]


def test_the_page_hands_on_what_it_drew_before_a_slow_part():
    at = AppTest.from_function(_script, args=("explicit",)).run(timeout=30)
    assert not at.exception
    seen = at.session_state["seen"]
    assert seen["flushed"] == ["before", "a", "b"]
    assert seen["c held"] == ["before", "a", "b"]
    assert seen["end"] == ["before", "a", "b", "c"]
    assert seen["flushes"] == ["1"]
    assert [m.value for m in at.markdown] == ["before", "a", "b", "c", "after"]


def test_outside_a_script_run_it_does_nothing():
    from app_pages._burst import one_burst

    with one_burst() as held:
        assert held is None
