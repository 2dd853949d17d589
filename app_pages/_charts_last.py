"""Plotly charts drawn last: a chart keeps its place on the page but reaches the browser after the page's
other elements.

Why: the browser redraws a Plotly chart for every element that arrives after it in the same run (measured
in Chromium, Streamlit 1.67: a 6 x 6 heatmap followed by 60 captions took 3.8 s of the browser's CPU, the
same page with the chart filled last 1.5 s; docs/notes/newtab-32.md). A page opened in a new tab pays that
on every open, so the Judges page, whose κ heatmap comes before its tables, draws it through
``plotly_chart`` here: an ``st.empty()`` slot is taken where the chart belongs and filled when the page's
script ends (``charts_last`` around the page's run in app.py). The page looks the same; only the order the
elements reach the browser changes.

Outside ``charts_last`` (a fragment's rerun, a page run alone in a test) ``plotly_chart`` draws at once.
A page that stops (``st.stop()``) draws its pending charts first through ``stop()``: after a stop is
requested nothing more can be drawn.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, NoReturn

import streamlit as st

_PENDING: ContextVar[list[tuple[Any, Any, dict]] | None] = ContextVar("lens_charts_last", default=None)
"""The current script run's slots and charts still to draw (None: not under ``charts_last``)."""


def plotly_chart(fig: Any, where: Any = None, **kwargs: Any) -> None:
    """``where.plotly_chart(fig, **kwargs)`` (``where`` a column or container; default the page), drawn
    when the page's script ends if the page runs under ``charts_last``, at once otherwise."""
    target = st if where is None else where
    pending = _PENDING.get()
    if pending is None:
        target.plotly_chart(fig, **kwargs)
        return
    pending.append((target.empty(), fig, kwargs))


def draw_pending() -> None:
    """Fill every slot taken so far with its chart, in page order."""
    pending = _PENDING.get()
    while pending:
        slot, fig, kwargs = pending.pop(0)
        slot.plotly_chart(fig, **kwargs)


def stop() -> NoReturn:
    """``st.stop()`` after drawing the charts already placed (a stopped run can draw nothing more)."""
    draw_pending()
    st.stop()


@contextlib.contextmanager
def charts_last() -> Iterator[None]:
    """Around a page's run: charts placed through ``plotly_chart`` are drawn when the block ends, also when
    it ends on an error (before the caller draws the error's box, as they were before). A rerun or stop
    request ends the run without them: the next run draws the page again (``stop()`` draws them first)."""
    from streamlit.runtime.scriptrunner_utils.exceptions import ScriptControlException

    token = _PENDING.set([])
    try:
        yield
    except ScriptControlException:
        raise
    except BaseException:
        with contextlib.suppress(Exception):
            draw_pending()
        raise
    else:
        draw_pending()
    finally:
        _PENDING.reset(token)
