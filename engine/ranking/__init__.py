"""Ranking with the rankers: votes read from the store, the leaderboard service, bootstrap intervals
(from graphs or from vote counts), distances between rankings and external reference rankings.

May import: ``engine.rankers``, ``engine.graphs``, ``engine.ingest`` (a synthetic dataset's truth, for the
reference choice), ``engine.store``, ``engine.errors``.
"""
