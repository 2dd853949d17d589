"""Verdict input: files of every accepted format (``formats``: FastChat, Arena-Hard, AlpacaEval,
evalica, arena logs), validation row by row, bounded-memory staging, the importer that writes a
dataset all-or-nothing, the shipped vicuna80 dataset and synthetic datasets.

May import: ``engine.store``, ``engine.errors``.
"""
