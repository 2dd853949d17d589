"""The Elo-like scale, 1000 + 400·log10 units, and its one conversion from a ranker's score.

A Bradley-Terry or Davidson score is a natural-log strength s (mean-centred); on the arena's scale it
reads 1000 + (400 / ln 10) · s, so a gap of 400 points is a 10:1 strength ratio and the mean model sits
at 1000. Elo ratings already are 400·log10 units (factor 1). The rankers' ``scale="elo"`` (the CLI's
``--param scale=elo``) and the app's Elo-like toggle both call ``to_elo_scale`` here, so the command
line and the page show the same numbers (issue 24: the CLI used to print 400·log10 units around 0).
"""

from __future__ import annotations

import numpy as np

ELO_FACTOR = 400.0 / np.log(10.0)
"""400·log10 units per natural-log unit of strength."""

ELO_CENTRE = 1000.0
"""The Elo-like scale is centred here (the arena's customary starting rating)."""


def to_elo_scale(values, factor: float = ELO_FACTOR):
    """``values`` (a score, array or Series on the ranker's own scale) as 1000 + ``factor`` · value."""
    return ELO_CENTRE + factor * values


def from_elo_scale(values, factor: float = ELO_FACTOR):
    """The inverse of ``to_elo_scale``: a score on the Elo-like scale back on the ranker's own scale."""
    return (values - ELO_CENTRE) / factor
