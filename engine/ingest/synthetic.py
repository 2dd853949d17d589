"""Synthetic pairwise-judgement datasets with a known ground truth, clearly flagged as synthetic.

Why: the real data here has no paraphrases, so the protocols of paper 000 need a dataset where
every pool exists and where the right answer is known. The generative story (our own, in the
spirit of paper 000, Sections 3.1 and 5):

- n models with true strengths evenly spaced in [−spread/2, spread/2]; the truth ranks them.
- Each prompt has its own idiosyncrasy: strengths shifted by N(0, prompt_sd²) per model. A
  paraphrase keeps a share ``paraphrase_keep`` of that shift and redraws the rest, so paraphrases
  give partly fresh evidence; a sampling replicate keeps the whole shift (only the judge's draw
  changes), which is why the sampling-only pool stays biased.
- Each graph is *clean* (the judge discriminates with sharpness ``sharp``) or, with probability
  ``bad_rate``, *confused*: the judge half-follows a distractor (one fixed, quality-unrelated
  ordering of the models, like a taste for long answers, weight ``distractor``) at low sharpness
  ``blur`` — so confused graphs carry both many cyclic triads and a shared bias.
- A pair ties with probability ``tie_rate``·exp(−|Δ|); otherwise i beats j with σ(s·Δ).
- With ``soft`` the judge also states a probability that the answer shown first is better
  (``prob_a``): σ(s·Δ + ε) with ε ~ N(0, ``soft_noise``²) per verdict, oriented to the shown
  order. ε is pair-level noise, so the stated probabilities are not exactly consistent in odds
  (SNTD > 0 even on a clean graph).

Every draw of the verdicts comes from one seeded generator; the probabilities come from a second
stream seeded by (seed, ``SOFT_STREAM``), so asking for them leaves every verdict as it was. The
dataset is written through the ingest module
(validated like any upload) with ``synthetic = TRUE`` and its truth in ``synthetic_truth``.
"""

from __future__ import annotations

import io
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from engine.errors import LensError
from engine.store.connection import Store

DEFAULT_SEED = 20260324
SOFT_STREAM = 0x50524F42
"""Second entry of the probability stream's seed (the verdicts use ``seed`` alone)."""


@dataclass(frozen=True)
class SyntheticParams:
    """Shape and noise of a synthetic dataset; defaults mirror paper 000's MT-Bench setup
    (8 categories × 10 prompts × 5 prompt instances, 20 models) plus 4 sampling replicates."""

    n_models: int = 20
    categories: int = 8
    prompts: int = 10
    paraphrases: int = 4
    samples: int = 4
    spread: float = 3.0
    prompt_sd: float = 0.8
    paraphrase_keep: float = 0.3
    sharp: float = 2.0
    blur: float = 0.5
    distractor: float = 3.0
    bad_rate: float = 0.4
    tie_rate: float = 0.15
    soft: bool = False
    soft_noise: float = 0.5
    judge: str = "synthetic-judge"
    seed: int = DEFAULT_SEED

    def validate(self) -> SyntheticParams:
        """These parameters when every count and rate is in range, else one LensError sentence."""
        for name in ("n_models", "categories", "prompts"):
            if getattr(self, name) < (3 if name == "n_models" else 1):
                raise LensError(f"A synthetic dataset needs {name} ≥ {3 if name == 'n_models' else 1}.")
        for name in ("paraphrases", "samples"):
            if getattr(self, name) < 0:
                raise LensError(f"A synthetic dataset needs {name} ≥ 0.")
        for name in ("bad_rate", "tie_rate", "paraphrase_keep"):
            if not 0 <= getattr(self, name) <= 1:
                raise LensError(f"The synthetic parameter {name} must lie in [0, 1].")
        if not (np.isfinite(self.soft_noise) and self.soft_noise >= 0):
            raise LensError(
                f"The synthetic parameter soft_noise must be a finite number ≥ 0; got {self.soft_noise!r}."
            )
        return self


@dataclass(frozen=True)
class SyntheticData:
    """Verdict rows (canonical input columns), the truth (strength by model) and per-graph labels."""

    verdicts: pd.DataFrame
    truth: pd.Series
    graphs: pd.DataFrame
    params: SyntheticParams


def model_names(n: int) -> list[str]:
    """Names that do not give the truth away: sorted names are not the strength order."""
    rng = np.random.default_rng(0)
    return [f"model-{c}" for c in rng.permutation([f"{i:02d}" for i in range(1, n + 1)])]


def generate(params: SyntheticParams | None = None) -> SyntheticData:
    """Draw a dataset (vectorised over all graphs and pairs)."""
    p = (params or SyntheticParams()).validate()
    rng = np.random.default_rng(p.seed)
    n = p.n_models
    names = model_names(n)
    theta = np.linspace(p.spread / 2, -p.spread / 2, n)
    n_var = 1 + p.paraphrases + p.samples
    n_prompts = p.categories * p.prompts
    G = n_prompts * n_var
    prompt_shift = rng.normal(0.0, p.prompt_sd, (n_prompts, 1, n))
    fresh = rng.normal(0.0, p.prompt_sd, (n_prompts, n_var, n))
    kind = np.array(["original"] + ["paraphrase"] * p.paraphrases + ["sample"] * p.samples)
    keep = np.where(kind == "paraphrase", p.paraphrase_keep, 1.0)[None, :, None]
    shift = keep * prompt_shift + np.sqrt(1 - keep**2) * fresh  # same variance, partly redrawn
    strength = (theta[None, None, :] + shift).reshape(G, n)
    confused = rng.random(G) < p.bad_rate
    lure = rng.permutation(np.linspace(p.distractor / 2, -p.distractor / 2, n))
    strength = np.where(confused[:, None], 0.5 * strength + lure[None, :], strength)
    sharp = np.where(confused, p.blur, p.sharp)
    iu, ju = np.triu_indices(n, 1)
    delta = strength[:, iu] - strength[:, ju]
    u_tie, u_win = rng.random(delta.shape), rng.random(delta.shape)
    tie = u_tie < p.tie_rate * np.exp(-np.abs(delta))
    a_wins = u_win < 1.0 / (1.0 + np.exp(-sharp[:, None] * delta))
    winner = np.where(tie, "tie", np.where(a_wins, "A", "B"))
    g_idx = np.repeat(np.arange(G), iu.size)
    prompt = g_idx // n_var
    variant = g_idx % n_var
    cats = np.array([f"cat-{c + 1}" for c in range(p.categories)])
    # present each pair in a random order, so position carries no information
    flip = rng.random(g_idx.size) < 0.5
    a = np.tile(iu, G)
    b = np.tile(ju, G)
    w = winner.ravel()
    w = np.where(flip & (w == "A"), "B", np.where(flip & (w == "B"), "A", w))
    model_arr = np.array(names)
    extra = {}
    if p.soft:  # its own stream: the verdicts above are the same with or without probabilities
        soft_rng = np.random.default_rng([p.seed, SOFT_STREAM])
        logit = (sharp[:, None] * delta).ravel() + soft_rng.normal(0.0, p.soft_noise, delta.size)
        p_first = 1.0 / (1.0 + np.exp(-np.where(flip, -logit, logit)))  # P(the answer shown first is better)
        extra["prob_a"] = np.clip(p_first, 1e-6, 1 - 1e-6)
    verdicts = pd.DataFrame({
        "prompt_id": (prompt + 1).astype(str),
        "variant": variant,
        "variant_kind": kind[variant],
        "category": cats[prompt // p.prompts],
        "judge": p.judge,
        "model_a": model_arr[np.where(flip, b, a)],
        "model_b": model_arr[np.where(flip, a, b)],
        "winner": w,
        **extra,
    })
    graphs = pd.DataFrame({
        "prompt_id": (np.arange(G) // n_var + 1).astype(str), "variant": np.arange(G) % n_var,
        "variant_kind": kind[np.arange(G) % n_var], "confused": confused,
    })
    truth = pd.Series(theta, index=pd.Index(names, name="model"), name="strength")
    return SyntheticData(verdicts, truth, graphs, p)


def write_synthetic(store: Store, name: str, params: SyntheticParams | None = None, replace: bool = True):
    """Generate and store a synthetic dataset through the ingest module; returns its ImportResult."""
    from engine.ingest.importer import store_report
    from engine.ingest.verdicts import validate_bytes
    from engine.store.truth import replace_truth  # lazy, like the two above: generating needs no store

    data = generate(params)
    p = data.params
    buf = io.StringIO()
    data.verdicts.to_csv(buf, index=False)
    report = validate_bytes(buf.getvalue().encode("utf-8"), f"{name}.csv", dataset=name, fmt="csv")
    desc = (f"SYNTHETIC data with a known ground truth (engine/ingest/synthetic.py, seed {p.seed}): "
            f"{p.n_models} models, {p.categories} categories × {p.prompts} prompts, {p.paraphrases} "
            f"paraphrases and {p.samples} sampling replicates per prompt, {p.bad_rate:.0%} confused graphs"
            + (f", judge probabilities (logit noise sd {p.soft_noise})." if p.soft else "."))
    result = store_report(store, report, name, replace=replace, description=desc,
                          source=f"engine.ingest.synthetic {asdict(p)}", synthetic=True)
    if result.status != "stored":
        raise LensError(f"The synthetic dataset {name!r} was not stored: {result.message}.")
    truth = data.truth.rename("strength").reset_index()
    truth["rank"] = truth["strength"].rank(ascending=False, method="first").astype(int)
    truth["dataset"] = name
    truth["seed"] = p.seed
    replace_truth(store, name, truth)
    return result


def synthetic_truth(store: Store, name: str) -> pd.Series:
    """The ground-truth strength by model of a synthetic dataset (higher is better)."""
    from engine.store.truth import truth_frame

    df = truth_frame(store, name)
    if df.empty:
        raise LensError(f"Dataset {name!r} has no stored ground truth (only synthetic datasets do).")
    return pd.Series(df["strength"].to_numpy(), index=pd.Index(df["model"], name="model"), name="strength")
