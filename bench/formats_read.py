"""Validation time of a generated Arena battle log read by the `arena` tool reader, beside the
same battles as a canonical JSON Lines file (wall time, peak RSS of this process).

    python bench/formats_read.py [N]      # default N = 200000
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from engine.ingest.verdicts import validate_bytes  # noqa: E402


def arena_log(n: int, seed: int = 0) -> tuple[bytes, bytes]:
    """The same n battles as an Arena log and as canonical rows."""
    rng = np.random.default_rng(seed)
    models = [f"m{i}" for i in range(60)]
    arena, canon = [], []
    for i in range(n):
        a, b = rng.choice(60, size=2, replace=False)
        w = int(rng.integers(4))
        voter = f"arena_user_{int(rng.integers(5000))}"
        arena.append(
            json.dumps(
                {
                    "question_id": f"{i:08x}",
                    "model_a": models[a],
                    "model_b": models[b],
                    "winner": ["model_a", "model_b", "tie", "tie (bothbad)"][w],
                    "judge": voter,
                    "turn": 1,
                    "anony": True,
                    "language": "English",
                    "tstamp": 1.7e9 + i,
                    "num": i,
                }
            )
        )
        canon.append(json.dumps({"prompt_id": f"{i:08x}", "model_a": models[a], "model_b": models[b],
                                 "winner": ["A", "B", "tie", "tie"][w], "judge": "human", "annotator": voter,
                                 "tstamp": 1.7e9 + i, "battle_id": i}))
    return ("\n".join(arena) + "\n").encode(), ("\n".join(canon) + "\n").encode()


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    arena, canon = arena_log(n)
    for name, data in (("canonical.jsonl", canon), ("arena.jsonl", arena)):
        t = time.perf_counter()
        rep = validate_bytes(data, name, dataset="bench")
        dt = time.perf_counter() - t
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"{name}: read as {rep.format}, {rep.n_good} verdicts, {dt:.1f} s, peak RSS so far {rss:.0f} MB"
        )


if __name__ == "__main__":
    main()
