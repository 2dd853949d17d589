"""app_pages/_charts_last.py in a real Streamlit run (AppTest): a chart placed under ``charts_last`` is held
until the block ends, then shown where it was placed (beside, above and below the same elements as if drawn
at once), with its own figure; ``stop()`` draws the held charts before stopping; an error still shows them;
outside ``charts_last`` a chart is drawn at once."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest


def _script(mode: str) -> None:
    import plotly.graph_objects as go
    import streamlit as st

    from app_pages import _charts_last as cl

    fig_a = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]))
    fig_b = go.Figure(go.Heatmap(z=[[1, 0], [0, 1]]))

    def page() -> None:
        st.markdown("first")
        cl.plotly_chart(fig_a, width="stretch")
        left, right = st.columns(2)
        cl.plotly_chart(fig_b, left, width="stretch")
        right.markdown("right")
        pending = cl._PENDING.get()
        st.session_state["held"] = None if pending is None else len(pending)
        if mode == "stop":
            cl.stop()
        if mode == "error":
            raise ValueError("planned")
        st.markdown("last")

    if mode == "plain":
        page()
    else:
        with cl.charts_last():
            page()


def _run(mode: str) -> AppTest:
    at = AppTest.from_function(_script, kwargs={"mode": mode}, default_timeout=30)
    return at.run()


def _layout(at: AppTest) -> list:
    """The main area as (kind, text or figure data) in page order, columns flattened in place."""
    out: list = []

    def walk(node) -> None:
        for child in node.children.values():
            if child.type == "plotly_chart":
                out.append(("plotly", json.loads(child.proto.spec)["data"][0]["type"]))
            elif child.type == "markdown":
                out.append(("markdown", child.value))
            elif hasattr(child, "children") and child.children:
                walk(child)
            else:
                out.append((child.type, None))

    walk(at.main)
    return out


EXPECTED = [("markdown", "first"), ("plotly", "bar"), ("plotly", "heatmap"), ("markdown", "right")]


def test_held_until_the_end_then_in_place() -> None:
    at = _run("last")
    assert not at.exception
    assert at.session_state["held"] == 2  # both charts were still held when the page's last lines ran
    assert _layout(at) == [*EXPECTED, ("markdown", "last")]


def test_drawn_at_once_outside_the_block_with_the_same_layout() -> None:
    at = _run("plain")
    assert at.session_state["held"] is None
    assert _layout(at) == [*EXPECTED, ("markdown", "last")]


def test_stop_draws_the_held_charts_first() -> None:
    at = _run("stop")
    assert _layout(at) == EXPECTED  # both charts, nothing after the stop


def test_an_error_still_shows_the_charts() -> None:
    at = _run("error")
    assert at.exception  # the error reaches Streamlit (app.py's guarded_session draws its sentence)
    assert [x for x in _layout(at) if x[0] == "plotly"] == [("plotly", "bar"), ("plotly", "heatmap")]
