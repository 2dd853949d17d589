"""Ranking with the rankers: votes read from the store, the leaderboard service, bootstrap intervals
(from graphs or from vote counts), distances between rankings and external reference rankings.

May import: ``engine.rankers``, ``engine.graphs``, ``engine.store``, ``engine.errors``.
"""
