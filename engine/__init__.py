"""Tournament Lens engine: verdicts → DuckDB store → tournament graphs → cycles, rankers, diagnostics.

Everything the app and the command line show is computed here; nothing in this package imports
streamlit (a test enforces it).
"""

__version__ = "0.20.8"
