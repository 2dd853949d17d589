"""Target-model answers: one model answers every prompt instance of a dataset (local or API).

Answers go to the store's ``answers`` table under the given model name, for every variant asked
(so paraphrased prompts get answers to judge). Calls go through the runner, hence the call cache:
rerunning never pays twice. Turn 1 only (see ``inputs``).
"""

from __future__ import annotations

import pandas as pd

from engine.errors import LensError
from engine.frames import records
from engine.judging.backends import ChatRequest, Decoding
from engine.judging.persist import write_answers
from engine.judging.runner import Runner
from engine.judging.templates import Template
from engine.store.connection import Store

ANSWER_DECODING = Decoding(max_tokens=512)


def generate_answers(
    store: Store,
    dataset: str,
    runner: Runner,
    template: Template,
    *,
    model_name: str | None = None,
    variants: list[int] | None = None,
    decoding: Decoding = ANSWER_DECODING,
    turn: int = 1,
) -> pd.DataFrame:
    """Ask ``runner``'s model to answer each prompt instance; stores and returns the answers made."""
    prompts = store.prompt_texts(dataset)
    prompts = prompts[prompts["turn"] == turn]
    if variants is not None:
        prompts = prompts[prompts["variant"].isin(variants)]
    if prompts.empty:
        raise LensError(f"Dataset {dataset!r} has no prompt texts to answer.")
    reqs = [
        ChatRequest(template.render(question=t), decoding, template.id, template.version)
        for t in prompts["text"]
    ]
    res = runner.call(reqs, desc="answers")
    name = model_name or runner.backend.model
    rows = [
        {
            "prompt_id": p.prompt_id,
            "variant": int(p.variant),
            "turn": int(p.turn),
            "model": name,
            "text": r.text,
        }
        for p, r in zip(records(prompts), res, strict=True)
        if r is not None
    ]
    out = pd.DataFrame(rows, columns=["prompt_id", "variant", "turn", "model", "text"])
    write_answers(store, dataset, out, source=f"generate:{runner.backend.name}:{runner.backend.model}")
    return out
