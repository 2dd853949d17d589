"""Page-facing views: what the app's pages and the exports show, computed here and drawn by
``app_pages`` (which only render). Never imports streamlit.

May import every engine layer below it (store, ingest, graphs, rankers, ranking, experiments,
diagnostics); nothing in the engine imports a view.
"""
