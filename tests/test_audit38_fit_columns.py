"""audit38: ``fit_columns`` widens the Leaderboard's model column to its longest name (a fixed 180 px cut
"65b-guanaco-vicuna-generations-topp0.9-temp0.7") as far as the other default columns leave room in a
1280 px window's table, and the Data listing's name and description fill that width. The widths are
added up here column by column from the page's own configs; the browser tours (TABLES_FIT in
tests/test_browser_stress.py) check the drawn tables do not scroll sideways."""

from __future__ import annotations

import pytest

from app_pages._lens import (
    MODEL_PX_MIN,
    NAMED_WIDTHS,
    TABLE_PX_1280,
    board_columns,
    extra_for_names,
    fit_columns,
    name_px,
)
from engine.views.leaderboard_view import DEFAULT_EXTRA, MAIN_COLUMNS, NAME_ROOM_GIVE_UP

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


MEASURED = {"65b-guanaco-vicuna-generations-topp0.9-temp0.7": 294.1,
            "Meta-Llama-3.1-405B-Instruct-Turbo": 211.6,
            "chatbot_arena_2024_08_14": 162.5, "claude-3-5-sonnet-20240620": 166.4, "WWWWWWWWWW": 110.0,
            "MMMMMMMMMM": 101.8, "gemini-2.0-flash-lite-preview-02-05": 204.7,
            "phi-3-mini-4k-instruct-june-2024": 189.5}
"""Text widths in the grid's font (14 px Source Sans), canvas measureText in Chromium on the app's page."""


def test_name_px_covers_the_measured_text_and_the_cell_padding():
    """At least the text and the padding, and no more than 12 px over (nits39: audit38's estimate was up to
    50 px over, which cost the other columns their room)."""
    for text, px in MEASURED.items():
        assert px + 16 <= name_px(text) <= px + 16 + 12, text


def _left_out_by_search(config, shown_main, extra, names, give_up):
    """The fewest of ``give_up``'s first columns to leave out so the longest name fits (all when none does),
    tried one count after another, the room summed from the configs here."""
    longest = max(name_px(n) for n in names)
    for k in range(len(give_up) + 1):
        keep = [c for c in extra if c not in give_up[:k]]
        others = sum(_px(config[c]["width"]) for c in [*shown_main, *keep] if c != "model")
        if TABLE_PX_1280 - 4 - others >= longest:
            return keep
    return [c for c in extra if c not in give_up]


@pytest.mark.parametrize("names", [QLORA, FIELD, SHORT, ["gemini-2.0-flash-lite-preview-02-05", "gpt4"]])
@pytest.mark.parametrize("reference", [True, False])
def test_default_columns_give_way_to_long_names(names, reference):
    """nits39: beside the reference columns the field's 26-35-character names had 194 px and were cut; the
    Leaderboard leaves out win rate, then rank (UB), at first while the longest name would not fit."""
    config = board_columns("a note", "bt")
    order = [*MAIN_COLUMNS, *(c for c in DEFAULT_EXTRA if reference or not c.startswith("ref_"))]
    extra = [c for c in DEFAULT_EXTRA if c in order]
    got = extra_for_names(order, MAIN_COLUMNS, extra, config, names, NAME_ROOM_GIVE_UP)
    assert got == _left_out_by_search(config, MAIN_COLUMNS, extra, names, NAME_ROOM_GIVE_UP)
    shown = [c for c in order if c in MAIN_COLUMNS or c in got]
    width = fit_columns(config, shown, {"model": names})["model"]["width"]
    if names is SHORT or not reference:  # the names were whole before: nothing given up
        assert got == extra
    else:  # something given up, and the longest name whole now
        assert got != extra and width >= max(name_px(n) for n in names)


ACTIVE = {"prompt_id": {"width": 90}, "model_a": {"label": "model A"}, "model_b": {"label": "model B"},
          "order": {"width": 60}, "p_a_wins": {"width": 80}, "information": {"width": 72},
          "pair_calls_so_far": {"width": 124}, "rank_a": {"width": 64}}
"""Active judging's next-batch columns and widths (app_pages/9_active.py's ``batch_config``)."""
ACTIVE_MAIN = ("prompt_id", "model_a", "model_b", "p_a_wins")
ACTIVE_EXTRA = ["order", "information", "pair_calls_so_far"]
ACTIVE_GIVE_UP = ("pair_calls_so_far", "information", "order")


@pytest.mark.parametrize("names", [QLORA, FIELD, SHORT, ["gpt4", "gemini-2.0-flash-lite-preview-02-05"]])
def test_two_name_columns_share_the_room_and_each_holds_the_longest_name(names):
    """Active judging (audit38's leftover): model A and model B share what the other columns leave; the
    defaults given up (in order) are the fewest with which an equal share holds the longest name of both
    columns (a search over how many, the room summed here, as ``fit_columns`` caps each at an equal share),
    and then ``fit_columns`` draws both whole."""
    order = [*ACTIVE, "rank_b"]
    by_column = {"model_a": names, "model_b": list(reversed(names))[:1]}
    got = extra_for_names(order, ACTIVE_MAIN, ACTIVE_EXTRA, ACTIVE, by_column, ACTIVE_GIVE_UP)
    longest = max(name_px(n) for n in names)
    want = [c for c in ACTIVE_EXTRA if c not in ACTIVE_GIVE_UP]
    for k in range(len(ACTIVE_GIVE_UP) + 1):
        keep = [c for c in ACTIVE_EXTRA if c not in ACTIVE_GIVE_UP[:k]]
        others = sum(ACTIVE[c]["width"] for c in [*ACTIVE_MAIN, *keep] if c not in by_column)
        if (TABLE_PX_1280 - 4 - others) // 2 >= longest:
            want = keep
            break
    assert got == want
    shown = [c for c in order if c in ACTIVE_MAIN or c in got]
    widths = fit_columns(ACTIVE, shown, by_column, least=140)
    assert sum(widths[c]["width"] for c in shown) <= TABLE_PX_1280 - 4  # no sideways scroll
    if names is SHORT:
        assert got == ACTIVE_EXTRA  # nothing given up where the names fit
    for c, texts in by_column.items():  # each column whole (fit_columns gives each its own longest)
        assert widths[c]["width"] >= max(name_px(n) for n in texts), c
