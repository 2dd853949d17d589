"""audit38: ``fit_columns`` widens the Leaderboard's model column to its longest name (a fixed 180 px cut
"65b-guanaco-vicuna-generations-topp0.9-temp0.7") as far as the other default columns leave room in a
1280 px window's table, and the Data listing's name and description fill that width. The widths are
added up here column by column from the page's own configs; the browser tours (TABLES_FIT in
tests/test_browser_stress.py) check the drawn tables do not scroll sideways."""

from __future__ import annotations

import pytest

from app_pages._lens import MODEL_PX_MIN, NAMED_WIDTHS, TABLE_PX_1280, board_columns, fit_columns, name_px
from engine.views.leaderboard_view import DEFAULT_EXTRA, MAIN_COLUMNS

QLORA = ["gpt4", "65b-guanaco-vicuna-generations-topp0.9-temp0.7", "bard"]
FIELD = ["claude-3-5-sonnet-20240620", "Meta-Llama-3.1-405B-Instruct-Turbo", "gpt-4o-2024-05-13"]
SHORT = ["gpt4", "bard"]


def _px(width) -> int:
    return NAMED_WIDTHS.get(width, width) if isinstance(width, str) else width


@pytest.mark.parametrize("names", [QLORA, FIELD, SHORT])
@pytest.mark.parametrize("reference", [True, False])
def test_the_model_column_fits_its_longest_name_within_the_table(names, reference):
    config = board_columns("a note", "bt")
    shown = [*MAIN_COLUMNS, *(c for c in DEFAULT_EXTRA if reference or not c.startswith("ref_"))]
    fitted = fit_columns(config, shown, {"model": names})
    others = sum(_px(config[c]["width"]) for c in shown if c != "model")
    room = TABLE_PX_1280 - 4 - others
    width = fitted["model"]["width"]
    assert others + width <= TABLE_PX_1280 - 4
    longest = max(name_px(n) for n in names)
    assert width == max(MODEL_PX_MIN, min(longest, room))
    if names is not QLORA and not reference:  # the field's names whole beside the default columns
        assert width >= longest
    unchanged = {c: v for c, v in config.items() if c != "model"}
    assert {c: v for c, v in fitted.items() if c != "model"} == unchanged


def test_a_fill_column_takes_the_rest_and_an_unsized_column_leaves_the_config():
    config = {"name": {"label": "name"}, "n": {"width": 60}, "m": {"width": "small"}, "d": {"label": "d"}}
    names = ["chatbot_arena_2024_08_14", "x"]
    fitted = fit_columns(config, ["name", "n", "m", "d"], {"name": names}, fill="d", least=120)
    assert fitted["name"]["width"] == name_px("chatbot_arena_2024_08_14") >= 163 + 16  # measured in Chromium
    assert fitted["d"]["width"] == TABLE_PX_1280 - 4 - 60 - 75 - fitted["name"]["width"]
    assert fit_columns(config, ["name", "d"], {"name": names}) == config  # "d" has no width: room unknown


MEASURED = {"65b-guanaco-vicuna-generations-topp0.9-temp0.7": 294, "Meta-Llama-3.1-405B-Instruct-Turbo": 212,
            "chatbot_arena_2024_08_14": 163, "claude-3-5-sonnet-20240620": 166, "WWWWWWWWWW": 110,
            "MMMMMMMMMM": 102}
"""Text widths in the grid's font (14 px Source Sans), canvas measureText in Chromium on the app's page."""


def test_name_px_covers_the_measured_text_and_the_cell_padding():
    for text, px in MEASURED.items():
        assert px + 16 <= name_px(text) <= px + 16 + 60, text
