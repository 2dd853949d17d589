"""Style features of answers (issue 24): the per-side counts a style-controlled fit reads.

``given``: the counts a verdict file gives (a Chatbot-Arena ``conv_metadata`` field, explicit
``tokens_a .. bold_b`` columns) and their checks; ``counting``: counts made from an answer's text (tokens of
tiktoken's o200k_base, markdown by LMArena's rule); ``features``: their names, the order of the sources and
how a read fills ``VoteRows.style``. May import: ``engine.store``, ``engine.errors``.
"""
