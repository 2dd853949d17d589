"""What happens before a page's script starts on a fresh server: the browser loading the frontend and the
server answering it, on one timeline.

    python bench/frontend_timeline.py --db STORE --dataset bench [--base CHECKOUT] [--rounds 3] [--cold]

Each round starts ``streamlit run app.py`` of each checkout on its own copy of the store (``--cold``: Chromium
first, the page asked for as the health check answers; else the server idle a second first, as
bench/first_open_profile.py), opens ``/?dataset=NAME`` in a new headless Chromium tab and prints, in ms from
the navigation's start: the document's first byte and its end; the frontend's files asked for before the
websocket (how many, their bytes, the median and the longest wait for a first byte, which is the server's
part, and the end of the last; the files the page asks for later, its elements' code, are only counted); the
websocket's handshake sent and answered; the first message the browser sends on it and the first it receives;
the script state's first ``running``; and the first open (the first ``notRunning`` after it). The browser's
own part is what lies between those marks with no request outstanding (parsing and running the frontend's
JavaScript). The server's CPU over the open is the last column. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "bench")]

from browser_timing import launch, serve, wait_done  # noqa: E402

ENTRIES = """
() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const res = performance.getEntriesByType('resource').map(r => ({
    name: r.name, start: r.startTime, req: r.requestStart, first: r.responseStart, end: r.responseEnd,
    bytes: r.encodedBodySize, type: r.initiatorType}));
  return {doc_first: nav.responseStart, doc_end: nav.responseEnd, dcl: nav.domContentLoadedEventEnd,
          load: nav.loadEventEnd, res, states: window.__lensStates || []};
}
"""


def one_open(root: Path, src: Path, dataset: str, cold: bool) -> dict:
    """One fresh server of ``root`` on a copy of ``src``, one first open with its timeline (ms)."""
    tmp = Path(tempfile.mkdtemp(prefix="lens-timeline-"))
    try:
        db = tmp / src.name
        shutil.copyfile(src, db)
        with contextlib.ExitStack() as stack:
            if cold:
                context = stack.enter_context(launch())
                tab = context.new_page()
                url, watch = stack.enter_context(serve(db, tmp / "streamlit.log", root, poll_s=0.02))
            else:
                url, watch = stack.enter_context(serve(db, tmp / "streamlit.log", root))
                context = stack.enter_context(launch())
                tab = context.new_page()
                time.sleep(1.0)
            cdp = context.new_cdp_session(tab)
            events: list[tuple[str, dict]] = []
            for name in ("Network.requestWillBeSent", "Network.webSocketWillSendHandshakeRequest",
                         "Network.webSocketHandshakeResponseReceived", "Network.webSocketFrameSent",
                         "Network.webSocketFrameReceived"):
                cdp.on(name, lambda params, name=name: events.append((name, params)))
            cdp.send("Network.enable")
            server = psutil.Process(watch.proc.pid)
            cpu0 = sum(server.cpu_times()[:2])
            tab.goto(f"{url}/?dataset={dataset}", wait_until="commit")
            opened = wait_done(tab, 300, watch)
            cpu = sum(server.cpu_times()[:2]) - cpu0
            got = tab.evaluate(ENTRIES)
        t0 = next(p["timestamp"] for n, p in events if n == "Network.requestWillBeSent"
                  and p.get("type") == "Document")

        def at(name: str, nth: int = 0) -> float:
            times = [p["timestamp"] for n, p in events if n == name]
            return (times[nth] - t0) * 1000 if len(times) > nth else float("nan")

        ws_sent = at("Network.webSocketWillSendHandshakeRequest")
        static = [r for r in got["res"] if "/static/" in r["name"]]
        boot = [r for r in static if r["start"] < ws_sent]
        waits = sorted(max(0.0, r["first"] - r["req"]) for r in boot) or [float("nan")]
        running = next((t for s, t in got["states"] if s == "running"), float("nan"))
        return {
            "doc first byte": got["doc_first"], "doc end": got["doc_end"],
            "boot files": len(boot), "kB": sum(r["bytes"] for r in boot) / 1000,
            "wait median": waits[len(waits) // 2], "wait max": waits[-1],
            "boot end": max((r["end"] for r in boot), default=float("nan")),
            "later files": len(static) - len(boot),
            "other requests": json.dumps(sorted({r["name"].split("/", 3)[-1].split("?")[0] for r in got["res"]
                                                 if "/static/" not in r["name"]})),
            "ws sent": at("Network.webSocketWillSendHandshakeRequest"),
            "ws open": at("Network.webSocketHandshakeResponseReceived"),
            "first sent": at("Network.webSocketFrameSent"),
            "first received": at("Network.webSocketFrameReceived"),
            "running": running,
            "first open": (opened.first_s or float("nan")) * 1000,
            "server cpu": cpu * 1000,
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


COLUMNS = ("doc first byte", "doc end", "boot files", "kB", "wait median", "wait max", "boot end",
           "later files", "ws sent", "ws open", "first sent", "first received", "running", "first open",
           "server cpu")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--base", type=Path, help="a second checkout, run first in each round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cold", action="store_true",
                    help="Chromium first, the page asked for as the server answers")
    a = ap.parse_args()
    roots = ([a.base.resolve()] if a.base else []) + [REPO]
    print(f"load average {os.getloadavg()}; ms from the navigation's start")
    print("| checkout | round | " + " | ".join(COLUMNS) + " | load |")
    print("| --- | ---: |" + " ---: |" * (len(COLUMNS) + 1))
    others = set()
    for r in range(a.rounds):
        for root in roots:
            got = one_open(root, a.db, a.dataset, a.cold)
            others.add(got["other requests"])
            cells = [f"{got[c]:.0f}" for c in COLUMNS]
            print(f"| {root} | {r + 1} | {' | '.join(cells)} | {os.getloadavg()[0]:.1f} |", flush=True)
    print("\nother requests: " + "; ".join(sorted(others)))
    print(f"load average after {os.getloadavg()}")


if __name__ == "__main__":
    main()
