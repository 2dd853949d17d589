"""Real-browser test: headless Chromium drives ``streamlit run app.py`` on a free local port.

It visits every page on the shipped data, checks that no error box or exception is shown and that
nothing is fetched from outside the local server (the graph page inlines vis-network), picks a
triad in the inspector, and waits until each page has drawn every chart, table and graph; with
``LENS_SCREENSHOTS`` set it saves a screenshot of each page there (``LENS_SCREENSHOTS=docs/screenshots``
writes the README's pictures; without it, only a failed tour's pages are saved, into
tests/_artifacts/screenshots/, git-ignored). Then it
opens a dataset whose model names, prompt texts and rationales carry script and onerror payloads
and Markdown/Streamlit syntax (``'``, ``:material/home:``, ``$x$``, ``**b**``, a javascript: link)
and checks that no script ran (``window.__xss`` stays undefined, also inside the graph iframe),
that the text shows exactly as written, and that no icon, formula, bold text or link was made.

Each test's tour runs in a browser of its own, and the file's tours run side by side (browser_support.Tours),
but for the tours of CHAINS, which run one after another on one page: the tests only wait for their tour and
raise what it raised.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from browser_support import (
    FRAGMENT_RUN,
    MARKUP,
    PAGES,
    XSS_IMG,
    XSS_SCRIPT,
    _requirements,
    _serve,
    bad_file,
    errors_on,
    last_finished,
    new_page,
    open_page,
    pick_option,
    release,
    runs,
    shoot,
    snap,
    start_tours,
    wait_drawn,
    wait_idle,
    xss_verdicts,
)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, shipped_db: Path):
    """The app on a store with the shipped data only (what the screenshots show)."""
    _requirements()
    tmp = tmp_path_factory.mktemp("browser")
    shutil.copyfile(shipped_db, tmp / "lens.duckdb")
    yield from _serve(tmp / "lens.duckdb", tmp / "streamlit.log")


@pytest.fixture(scope="module")
def xss_server(tmp_path_factory: pytest.TempPathFactory, shipped_db: Path):
    """The app on a store with the shipped data and the XSS dataset."""
    _requirements()
    from engine.ingest.importer import store_report, validate_file
    from engine.ingest.shipped import open_store

    tmp = tmp_path_factory.mktemp("browser_xss")
    shutil.copyfile(shipped_db, tmp / "lens.duckdb")
    store = open_store(tmp / "lens.duckdb")
    report = validate_file(xss_verdicts(tmp / "xss.csv"), "xss.csv", dataset="xss")
    store_report(store, report, "xss")
    store.close()
    yield from _serve(tmp / "lens.duckdb", tmp / "streamlit.log")


@pytest.fixture(scope="module")
def cut_server(tmp_path_factory: pytest.TempPathFactory, shipped_db: Path):
    """The app on a store file cut short inside a block (a copy or download stopped early)."""
    _requirements()
    tmp = tmp_path_factory.mktemp("browser_cut")
    data = shipped_db.read_bytes()
    (tmp / "cut.duckdb").write_bytes(data[: len(data) // 3])
    yield from _serve(tmp / "cut.duckdb", tmp / "streamlit.log")


def expand(page, title: str, label: str) -> tuple[str, str]:
    """Open the first closed expander whose label starts with ``label`` and wait for the rerun its
    opening starts (the app draws an expander's content once it is open), which must be its fragment's
    run alone, not the page's; returns its label and the text of its content (that expander's, found by
    its place among the page's expanders)."""
    boxes = page.locator('[data-testid="stExpander"]')
    states = boxes.evaluate_all(
        "els => els.map(e => [e.querySelector('summary [data-testid=stMarkdownContainer]').innerText.trim(),"
        " !!e.querySelector('details[open]')])")
    i = next(k for k, (text, is_open) in enumerate(states) if text.startswith(label) and not is_open)
    before = runs(page)
    boxes.nth(i).locator("summary").click()
    wait_idle(page, title, after=before)
    assert last_finished(page) == FRAGMENT_RUN, (states[i][0], last_finished(page))
    return states[i][0], boxes.nth(i).locator('[data-testid="stExpanderDetails"]').inner_text()


def every_page_renders_without_error(browser, server: str, folder: Path) -> None:
    page = new_page(browser, 1440, 1300)
    outside = []
    page.on(
        "request",
        lambda r: (
            outside.append(r.url) if not r.url.startswith((server, "data:", "about:", "blob:")) else None
        ),
    )
    for i, (path, (name, _)) in enumerate(PAGES.items()):
        open_page(page, server, path, first=i == 0)
        assert errors_on(page) == [], f"page {name} shows an error"
        if i == 0:  # the app opens on all judges pooled; pick one judge, which must then persist
            page.get_by_role("combobox", name="Judge").click()
            before = runs(page)
            page.locator('[role="option"]', has_text="gpt-4").first.click()
            wait_idle(page, PAGES[path][1], after=before)
            assert errors_on(page) == [], f"page {name} shows an error with judge gpt-4"
        # the sidebar's judge (gpt-4, chosen above; a dropped widget state would show all judges) persists
        judge = page.eval_on_selector(
            '[data-testid="stSidebar"] [data-testid="stSelectbox"]:has-text("Judge")',
            "el => el.innerText + ' ' + [...el.querySelectorAll('input')].map(i => i.value).join(' ')",
        )
        assert "gpt-4" in judge, (name, judge)
        if name == "inspector":
            # a triad picked with the mouse: the verdict headings follow, the drawing redraws
            first = page.inner_text('[data-testid="stMainBlockContainer"]')
            wait_idle(page, PAGES[path][1], after=pick_option(page, "Bad triad", 2))
            main = page.inner_text('[data-testid="stMainBlockContainer"]')
            assert "Triad 3:" in main and main != first
            assert errors_on(page) == []
            wait_idle(page, PAGES[path][1], after=pick_option(page, "Bad triad", 0))
            # a pair's answers are drawn once their expander is opened (a rerun of the triad's fragment)
            label, opened = expand(page, PAGES[path][1], "Answers of ")
            a, b = label.removeprefix("Answers of ").split(" and ")  # vicuna80's names hold no " and "
            lines = [x for x in opened.splitlines() if x.strip()]
            assert lines[0] == a and b in lines and "No answer text stored." not in opened, opened[:300]
            assert errors_on(page) == []
        if name == "head_to_head":
            # a meeting's verdicts are drawn once it is opened (a rerun of the prompts' fragment)
            main = '[data-testid="stMainBlockContainer"]'
            assert "Verdict 1 ·" not in page.eval_on_selector(main, "e => e.textContent")  # hidden text too
            _, opened = expand(page, PAGES[path][1], "gpt-4: ")
            assert opened.startswith("Verdict 1 ·") and errors_on(page) == [], opened[:200]
        if name == "data":
            # a file with two bad rows: the report lists them before anything is stored
            before = runs(page)
            page.set_input_files('[data-testid="stFileUploaderDropzoneInput"]', str(bad_file(folder)))
            page.wait_for_selector('[data-testid="stMetric"]:has-text("Rejected rows")', timeout=30_000)
            wait_idle(page, PAGES[path][1], after=before)
            main = page.inner_text('[data-testid="stMainBlockContainer"]')
            assert "Rejected rows" in main and "cannot be imported" in main
        shoot(page, name)
        page.set_viewport_size({"width": 1440, "height": 1300})
    assert outside == [], f"fetched from outside the app: {outside[:5]}"
    release(page, browser)


def toolbar_labels(page) -> list[list[str]]:
    """Per visible dataframe of the page: the labels of the toolbar buttons it shows on hover."""
    found = []
    for frame in page.query_selector_all('[data-testid="stDataFrame"]'):
        if not frame.is_visible():
            continue
        frame.scroll_into_view_if_needed()
        frame.hover()
        page.wait_for_selector('[data-testid="stElementToolbar"] button', state="visible", timeout=10_000)
        found.append([b.get_attribute("aria-label") or b.inner_text()
                      for b in page.query_selector_all('[data-testid="stElementToolbar"] button')
                      if b.is_visible()])
        page.mouse.move(0, 0)
    return found


CURVES = """() => [...document.querySelectorAll('svg.curve-svg')].map(svg => {
    const box = svg.getBoundingClientRect();
    const col = svg.closest('[data-testid="stColumn"]').getBoundingClientRect();
    const ticks = [...svg.querySelectorAll('.xtick, .ytick')].map(t => {
        const r = t.getBoundingClientRect();
        return {axis: t.getAttribute('class'), size: r.height, x: r.left, right: r.right, y: r.top,
                bottom: r.bottom};
    });
    // the setting's overlay (drawn as the next element of the column) and what a pointer on a marker hits:
    // the middle marker's dot (read from the markers' path, in the svg's user units) mapped to the screen
    const over = svg.closest('[data-testid="stColumn"]').querySelector('svg.curve-setting');
    const hits = [...svg.querySelectorAll('g.hits > path')];
    const d = svg.querySelector('path.markers').getAttribute('d');
    const dots = [...d.matchAll(/M([-\\d.]+),([-\\d.]+)h0/g)];
    const mid = Math.floor(dots.length / 2);
    // each hover strip's [lo, hi) (user units): every dot lies in exactly one, which is what the pointer hits
    const spans = hits.map(h => h.getAttribute('d').match(/^M([-\\d.]+),[-\\d.]+H([-\\d.]+)/)
        .slice(1).map(Number));
    const over_dot = (x) => spans.filter(([a, b]) => a < x && x < b).length;
    const owner = hits[spans.findIndex(([a, b]) => a < Number(dots[mid][1]) && Number(dots[mid][1]) < b)];
    const titles = hits.map(h => h.querySelector('title')).filter(t => t).map(t => t.textContent);
    svg.scrollIntoView({block: 'center'});
    const o = over ? over.getBoundingClientRect() : null;
    const now = svg.getBoundingClientRect();
    const scale = now.width / svg.viewBox.baseVal.width;
    const hit = document.elementFromPoint(now.left + Number(dots[mid][1]) * scale,
                                          now.top + Number(dots[mid][2]) * scale);
    // the dots are drawn as circles: round caps on zero-length pieces, as wide as the legend's dot
    const style = getComputedStyle(svg.querySelector('path.markers'));
    return {box: [box.left, box.right, box.width, box.height], col: [col.left, col.right, col.width], ticks,
            markers: dots.length, covered: dots.filter(d => over_dot(Number(d[1])) === 1).length,
            strips: hits.length, titled: titles.length,
            // the titles' line breaks (written &#10;) are newlines in the DOM
            broken: titles.every(t => !t.includes('&#')) && titles.some(t => t.includes('\\n')),
            numbers: svg.hasAttribute('data-points'),
            dot: [style.strokeLinecap, style.strokeWidth],
            over: o ? [o.left - now.left, o.top - now.top, o.width, o.height] : null,
            hit: hit === owner ? 'marker' : (hit ? hit.outerHTML.slice(0, 160) : null)};
})"""


def curves_fit_their_columns(page) -> None:
    """The Truncation page's two sensitivity curves (inline SVG, no Plotly) at 1280 px: each fills its
    column's width and stays inside it, is at least 200 px high, every marker lies in one titled hover strip
    (whose title's lines are broken by newlines), and the tick labels are at least 9 px high on screen and
    do not overlap along their axis; the setting's red line (its own element, ``setting_svg``) covers the
    curve's box exactly and lets the pointer through."""
    curves = page.evaluate(CURVES)
    assert len(curves) == 2, curves
    for c in curves:
        (left, right, width, height), (c_left, c_right, c_width) = c["box"], c["col"]
        assert left >= c_left - 0.5 and right <= c_right + 0.5 and width >= 0.95 * c_width, c["box"]
        assert height >= 200 and c["markers"] > 0 and c["covered"] == c["markers"], c
        assert not c["numbers"], c  # the rows' numbers stay on the server (the AppTest tests read them)
        assert c["titled"] == c["strips"] and c["broken"], c  # every strip titled, its lines broken
        assert c["dot"] == ["round", "5px"], c["dot"]
        # the setting's line lies on the curve's own box (the same viewBox, so the same pixels), and the
        # pointer passes through it to the markers' hover texts
        assert c["over"] is not None and all(abs(a - b) <= 0.5 for a, b in zip(
            c["over"], [0, 0, width, height], strict=True)), c["over"]
        assert c["hit"] == "marker", c["hit"]  # the hover strip over a marker is what the pointer hits there
        for axis, lo, hi in (("xtick", "x", "right"), ("ytick", "y", "bottom")):
            ticks = sorted((t for t in c["ticks"] if t["axis"] == axis), key=lambda t: t[lo])
            assert len(ticks) >= 2 and min(t["size"] for t in ticks) >= 9, (axis, ticks)
            assert all(b[lo] >= a[hi] for a, b in zip(ticks, ticks[1:], strict=False)), (axis, ticks)


def every_page_opens_at_its_own_address_and_no_table_offers_an_unguarded_csv_download(
        browser, server: str, folder: Path) -> None:
    """Two checks on one tour, each page opened by its own address (a full load, a new session):

    - A bookmark or a link to a page (the Cycles table links to the inspector) opens that page with
      no "Page not found" dialog: with the page scripts in a folder named pages/ Streamlit's legacy
      routing showed one on every direct address but the first page's.
    - Issue 23 bug 10: st.dataframe's own "Download as CSV" wrote =1+1, @x, -inf and the intervals'
      "+0.505 / -0.614" raw, and a spreadsheet evaluates them. At 1280 px, every table of every page
      shows its toolbar (search, full screen) without a download; the pages' own buttons write guarded
      CSV.

    (Two tests until issue 24; one tour saves seven page loads of the shared 2-core machine.)"""
    page = new_page(browser, 1280, 1000)
    seen = {}
    for path, (name, _) in PAGES.items():
        open_page(page, server, path, first=True)
        text = page.inner_text("body")
        assert "Page not found" not in text, name
        assert page.url.rstrip("/").endswith(path), (name, page.url)
        assert errors_on(page) == [], name
        if name == "leaderboard":
            page.wait_for_selector('[data-testid="stDataFrame"] canvas', timeout=60_000)
        wait_drawn(page)
        seen[name] = toolbar_labels(page)
        if name == "truncation":
            curves_fit_their_columns(page)
    release(page, browser)
    assert len(seen["leaderboard"]) == 1 and sum(map(len, seen.values())) >= 4, seen
    assert all("Search" in labels for tables in seen.values() for labels in tables), seen
    offered = {name: labels for name, tables in seen.items() for labels in tables
               if any("download" in label.lower() for label in labels)}
    assert not offered, offered


def xss_dataset_runs_no_script(browser, server: str, folder: Path) -> None:
    page = new_page(browser, 1400, 1000)
    paths = ("", "cycle-map", "judge-diagnostics", "datasets", "prompt-inspector")
    for i, path in enumerate(paths):
        open_page(page, server, path, first=i == 0, query="?dataset=xss&judge=judge")
        assert page.evaluate("typeof window.__xss") == "undefined", path
        for frame in page.frames:
            assert frame.evaluate("typeof window.__xss") == "undefined", (path, frame.url)
        assert errors_on(page) == [], path
        if path == "":  # the leaderboard chart's model ticks show the names as written (no markup)
            wait_drawn(page)
            page.wait_for_function(  # the chart's ticks are laid out after its svg appears
                """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"] .ytick text')]
                          .some(e => e.textContent.startsWith('m1 '))""", timeout=60_000)
            ticks = page.eval_on_selector_all(
                '[data-testid="stPlotlyChart"] .ytick text', "els => els.map(e => e.textContent)"
            )
            assert (
                f"m1 {XSS_SCRIPT}" in ticks and f"m2 {XSS_IMG}" in ticks and "m3's :material/home:" in ticks
            ), ticks
    # the sidebar kept the XSS dataset, and the inspector shows every text exactly as written
    wait_drawn(page)
    page.wait_for_function(  # a loaded machine can draw the graph before the rationale below it
        """() => { const m = document.querySelector('[data-testid="stMainBlockContainer"]');
                   return m && m.innerText.includes('Because '); }""", timeout=60_000)
    main = page.inner_text('[data-testid="stMainBlockContainer"]')
    assert f"Question p1 {XSS_SCRIPT} {MARKUP}" in main
    assert f"Because {XSS_IMG} said so; {MARKUP}" in main
    assert "m3's :material/home:" in main and "&#x27;" not in main and "&amp;" not in main
    # ... and nothing in it became an icon, a formula, bold user text or a javascript: link
    container = '[data-testid="stMainBlockContainer"] [data-testid="stMarkdownContainer"]'
    assert page.query_selector_all(f'{container} [data-testid="stIconMaterial"]') == []
    assert page.query_selector_all(f"{container} .katex") == []
    assert page.query_selector_all('a[href^="javascript"]') == []
    bold = [b.inner_text() for b in page.query_selector_all(f"{container} strong")]
    assert not any(t.strip() == "b" for t in bold), bold
    snap(page, "xss_inspector")
    release(page, browser)


def a_store_cut_short_is_one_sentence_at_every_address(browser, cut_server: str, folder: Path) -> None:
    """Issue 23 bug 12: a truncated store showed Streamlit's generic error box (and a "Page not found"
    dialog); each page's own address shows the store's one sentence, nothing else."""
    page = new_page(browser, 1280, 900)
    for path in ("cycle-map", "", "datasets"):
        page.goto(f"{cut_server}/{path}")
        page.wait_for_selector('[data-testid="stAlertContentError"]', timeout=120_000)  # a failure bound
        wait_idle(page)  # a page that stopped on its error has no title
        assert "Page not found" not in page.inner_text("body"), path
        shown = errors_on(page)
        expected = "Cannot open the store at cut.duckdb: it is damaged (the file is "
        assert len(shown) == 1 and shown[0].startswith(expected), (path, shown)
    release(page, browser)



TOURS = {
    every_page_renders_without_error: "server",
    every_page_opens_at_its_own_address_and_no_table_offers_an_unguarded_csv_download: "server",
    xss_dataset_runs_no_script: "xss_server",
    a_store_cut_short_is_one_sentence_at_every_address: "cut_server",
}
"""Each tour, and the server fixture it drives: the tours of the selected tests run side by side
(Tours.AT_ONCE at a time, the longest first: 52, 46, 22 and 11 s alone on an idle machine)."""

CHAINS = ((every_page_opens_at_its_own_address_and_no_table_offers_an_unguarded_csv_download,
           a_store_cut_short_is_one_sentence_at_every_address),)
"""Tours that run one after another on one page (browser_support.OnePage: a new page's first load costs
Chromium ~3 s more than a full load in a page that has loaded before), each opening its first page by
a full load: the own-address tour and the cut-store tour, both at 1280 px (46 + 11 s beside the
every-page tour's 52 s)."""


@pytest.fixture(scope="module")
def tours(request: pytest.FixtureRequest):
    yield from start_tours(request, TOURS, CHAINS)


def test_every_page_renders_without_error(tours):
    tours.wait(every_page_renders_without_error)


def test_every_page_opens_at_its_own_address_and_no_table_offers_an_unguarded_csv_download(tours):
    tours.wait(every_page_opens_at_its_own_address_and_no_table_offers_an_unguarded_csv_download)


def test_xss_dataset_runs_no_script(tours):
    tours.wait(xss_dataset_runs_no_script)


def test_a_store_cut_short_is_one_sentence_at_every_address(tours):
    tours.wait(a_store_cut_short_is_one_sentence_at_every_address)
