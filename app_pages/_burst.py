"""A run's elements leave the server together: one message burst per slider move, not one per element.

Streamlit's frontend applies each element it receives to the app's state, and React re-renders the whole
app (sidebar included, 430-760 components) once per burst of messages that arrive together. A fragment run
hands each element to the server's event loop as soon as it is made, a few ms apart (cache look-ups, the
board's Arrow conversion, the curves' markup between them): measured on the Truncation page's pooled μ
move, 31 messages in 5-8 bursts, so 5-8 whole-app renders per move, where a move whose messages came
together took 3 (docs/notes/mu39-39.md).

``one_burst()`` holds the messages the run makes in its block and hands them on in one go, in their order:
at the block's end; when the page says a slow part follows (``flush()``: the board's intervals, a curve
still to be made, so the reader sees the board while it is computed, as before); at once when another
thread sends one (Streamlit's spinner timer: it must not wait behind the computation it announces); and, for
a slow part nobody announced, ``HOLD_S`` after the first one held. What is sent, and its order, do not
change; only when the messages leave the server.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

HOLD_S = 0.25
"""The longest a made element waits for the ones after it (seconds) when no ``flush()`` came: the backstop
for a slow part the page did not announce. A move whose results are made (cache look-ups: the pooled μ
fragment takes 15-28 ms of CPU, 100-300 ms of wall at load 17) leaves in one burst."""


class _Held:
    """The messages held for one block, and the hand-on to Streamlit's queue (thread-safe: the script
    thread, the hold's timer and a spinner thread may each hand them on)."""

    def __init__(self, send: Callable, owner: threading.Thread, hold_s: float) -> None:
        self.send, self.owner, self.hold_s = send, owner, hold_s
        self.lock = threading.Lock()
        self.msgs: list = []
        self.timer: threading.Timer | None = None
        self.flushes = 0  # how many times held messages were handed on (tests)

    def enqueue(self, msg) -> None:
        """Streamlit's ``ScriptRunContext._enqueue`` while the block runs: held, or handed on at once (with
        every message held before it) when another thread sends it."""
        if threading.current_thread() is not self.owner:
            self.flush(msg)
            return
        with self.lock:
            self.msgs.append(msg)
            if self.timer is None:
                self.timer = threading.Timer(self.hold_s, self.flush)
                self.timer.daemon = True
                self.timer.start()

    def flush(self, last=None) -> None:
        """Hand on every message held (then ``last``), in order. In the script thread the hand-on is also
        where Streamlit stops a run a newer move replaced: that exception goes on up, as without the hold."""
        with self.lock:
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
            msgs, self.msgs = self.msgs, []
            if last is not None:
                msgs.append(last)
            if msgs:
                self.flushes += 1
            for msg in msgs:
                self.send(msg)


@contextmanager
def one_burst(hold_s: float = HOLD_S) -> Iterator[_Held | None]:
    """Hold the elements the block makes and send them together (module doc). Outside a script run (no
    Streamlit context), or on a Streamlit whose context has no ``_enqueue``, it does nothing: yields None."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    send = getattr(ctx, "_enqueue", None)  # Streamlit's private hand-on: a version without it sends as before
    if ctx is None or not callable(send):
        yield None
        return
    held = _Held(send, threading.current_thread(), hold_s)
    ctx._enqueue = held.enqueue
    try:
        yield held
    finally:
        ctx._enqueue = send
        held.flush()
