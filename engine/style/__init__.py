"""Style features of answers (issue 24): the per-side counts a style-controlled fit reads.

``features``: their names, where a verdict's counts come from and how they are read; ``counting``: how
counts are made from an answer's text (tokens and markdown).
"""
