"""Active judging: choose which judge calls to make next, refit between batches, stop when settled.

Owns the candidate pool (``pool``: every call a strategy may choose, as arrays), what is known between
batches (``fit``: the revealed verdicts, the Bradley–Terry fit with analytic intervals, the stopping
test ``separated``), the strategies (``select``: random, round-robin, swim, uncertainty, cycles), the
replay backend (``replay``: answers each call from a stored dataset's verdict) and the batch loop
(``loop``: runs the chosen calls through the judge runner, so they are cached, journaled and
resumable like every judge run, and stores the verdicts).

Interface used by the bench and the app (stable):
``Pool``, ``pool_from_verdicts`` (``pool``); ``Revealed``, ``ActiveFit``, ``fit_revealed``,
``separated``, ``uncertainty_summary`` (``fit``); ``STRATEGIES``, ``select`` (``select``).
"""
