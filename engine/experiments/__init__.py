"""Experiments of paper 000: the resampling protocols (Table 2), sensitivity curves over keep-K and
mu, the theory lab's random tournaments, what their results depend on, and the result cache.

May import: ``engine.ranking``, ``engine.rankers``, ``engine.graphs``, ``engine.ingest`` (synthetic
truth), ``engine.store``, ``engine.errors``.
"""
