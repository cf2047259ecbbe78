"""The built book, second half: every page at a phone width, every static panel in a browser, and the student
edition. In a module of its own so that `make test` (pytest-xdist, a whole module per worker, this one collected
last: pyproject's testpaths) runs it on the other worker once its own tests are done; the book is built by the
first half's worker, and the session fixture ``build`` here waits for that build and finds it cached.
"""

from __future__ import annotations

import fcntl
import re
import subprocess
import urllib.parse
from pathlib import Path

import pytest
from book_site import (
    BUILD_TIMEOUT_S,
    CHROMIUM_FLAGS,
    HTML,
    LOCAL_HOSTS,
    ROOT,
    SHOTS,
    book_script,
    chromium,
    missing,
    pages,
)
from browser import check_every_page
from chapter_panels import CODE_CELL, SOURCES, shown, shown_panels
from panel_html import parse_all


@pytest.mark.slow
def test_every_page_renders_offline_in_chromium_phone(server):
    check_every_page(server, "phone")


# ---------------------------------------------------------------------------------------------
# The student edition (`make book-student`): the same book without the solutions
# ---------------------------------------------------------------------------------------------

STUDENT_HTML = ROOT / "_build" / "student" / "html"


def _site_text(folder: Path) -> dict[Path, str]:
    """Every text file of a built site, HTML as the text a reader sees (tags dropped), whitespace collapsed."""
    import html

    out = {}
    for p in folder.rglob("*"):
        if p.is_file() and p.suffix in (".html", ".js", ".txt", ".ipynb", ".md", ".json"):
            raw = p.read_text(encoding="utf-8", errors="replace")
            if p.suffix == ".html":
                raw = html.unescape(re.sub(r"<[^>]+>", "", raw))
            out[p] = " ".join(raw.split())
    return out


def _solution_texts() -> dict[str, list[str]]:
    """What must not reach students, by origin: the distinctive lines of every exercise solution, and the
    first plain-text run (six words or more, no math or markup) of every self-check choice's feedback and every
    `{solution}` in the chapters."""
    import nbformat

    from sts_lib.exercises.build import solution_lines

    out = {}
    for src in sorted((ROOT / "exercises" / "source").glob("*.ipynb")):
        lines = solution_lines(nbformat.read(str(src), as_version=4))
        out[src.stem] = sorted(ln for ln in lines if len(ln) >= 16 and not re.search(r"[$`]|\*\*", ln))  # code
    for md in sorted((ROOT / "book" / "src").glob("*.md")):
        blocks = re.findall(
            r"```\{(?:admonition\}[^\n]*\n:class: dropdown sts-choice|solution\}[^\n]*)\n"
            r"(?::[^\n]*\n)*\n(.*?)\n```",
            md.read_text(),
            re.S,
        )
        for body in blocks:
            runs = [" ".join(r.split()) for r in re.split(r"\$[^$]*\$|`[^`]*`|\{[^}]*\}|[*_()\[\]]", body)]
            out.setdefault(md.stem, []).extend([r for r in runs if len(r.split()) >= 6][:1])
    return out


@pytest.mark.slow
def test_student_edition_has_no_solutions(build):
    """`make book-student` builds warning-free; no solution text is anywhere in it (pages, search index),
    while the same texts are in the full book (so the check can fail); statements, hints and questions stay."""
    with open(ROOT / "_build" / ".test_book.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = subprocess.run(
            **book_script("student_book"),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
        )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    full, student = _site_text(HTML), _site_text(STUDENT_HTML)
    secrets = _solution_texts()
    assert len(secrets) >= 13 and all(secrets.values()), secrets
    unseen, leaked = [], []
    for origin, needles in secrets.items():
        for needle in needles:
            needle = " ".join(needle.split())
            if not any(needle in t for t in full.values()):
                unseen.append(f"{origin}: {needle[:80]!r}")
            leaked += [f"{p.relative_to(ROOT)}: {needle[:80]!r}" for p, t in student.items() if needle in t]
    assert not unseen, (
        "the full book should show these solutions (is the check looking in the right place?):\n"
        + "\n".join(unseen[:20])
    )
    assert not leaked, "solution text in the student edition:\n" + "\n".join(leaked[:20])
    chapter = student[STUDENT_HTML / "book" / "07_practical_model.html"]
    assert "Write practical_forward(W, V, Z, z_query)" in chapter and chapter.count("Hint 1") == 3
    assert "positional part be the mean, not the sum, of the selected encodings?" in chapter
    assert "(b) So that the query" in chapter and "norm stays bounded as" in chapter  # a choice, not its feedback
    assert not (STUDENT_HTML / "_sources").exists()


# ---------------------------------------------------------------------------------------------
# The static book's panels answer in a browser without a kernel: every control of every panel, moved
# from the keyboard, changes the picture (a frame fetched only then, from this machine), at a desktop
# and a phone width, with no console error. (In this module so that `make test`, which hands whole
# modules to its two workers, runs every test of the built book on one worker: the book is built once.)
# ---------------------------------------------------------------------------------------------

#: The chapters that show a panel, and how many each shows, read from their sources (book/src: a ``.show()`` on what
#: a panel builder returns; tests/helpers/chapter_panels.py): ``{"01_task": 1, ...}``.
PANEL_PAGES = shown_panels()


def test_every_built_panel_spans_its_grid_with_a_picture_per_setting(build):
    """Each chapter's panel as the build drew it: more than one setting and at most the static grid's limit (64),
    every setting a picture on disk (or the error the live panel would show), no two settings the same picture.
    Chapter 1's explorer (21 settings, the dearest) is drawn over its grid here only, by the build. The built pages
    carry exactly the panels the chapters' sources show (:data:`PANEL_PAGES`), no more on any page of the book, and
    each panel's payload is of the schema its page script is held to (``payload.json_schema(ScriptPanel)``)."""
    import jsonschema

    from sts_lib.chapters.static_panel import GRID_LIMIT as limit
    from sts_lib.presentation.payload import ScriptPanel, json_schema

    schema = jsonschema.Draft202012Validator(json_schema(ScriptPanel))

    problems, built = [], {}
    for page in pages():
        datas = parse_all(page.read_text(encoding="utf-8"))
        if not datas:
            continue
        name = page.stem if page.parent == HTML / "book" else page.relative_to(HTML).as_posix()
        built[name] = len(datas)
        for data in datas:
            problems += [
                f"{name}: {'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in schema.iter_errors(data)
            ]
            frames = data["frames"]
            # a drawn setting's pictures' addresses, by layout (desktop, phone, their dark pairs): {layout: [src]}
            by_layout: dict[str, list[str]] = {}
            for f in frames:
                for layout, picture in f.get("pictures", {}).items():
                    by_layout.setdefault(layout, []).append(picture["src"])
            if not 2 <= len(frames) <= limit:
                problems.append(f"{name}: {len(frames)} settings (allowed 2 to {limit})")
            if any(not f.get("pictures") and "error" not in f for f in frames):
                problems.append(f"{name}: a setting with neither a picture nor an error")
            themes = {"desktop", "phone", "desktop-dark", "phone-dark"}  # FigurePanel(dark=True), the default
            problems += [
                f"{name}: a frame drawn for {sorted(f['pictures'])}"
                for f in frames
                if "pictures" in f and set(f["pictures"]) != themes
            ]
            for layout, srcs in by_layout.items():
                if len(set(srcs)) != len(srcs):
                    problems.append(f"{name}: two settings show the same picture ({layout})")
                problems += [
                    f"{name}: picture missing on disk: {s}"
                    for s in srcs
                    if not (page.parent / urllib.parse.unquote(s)).is_file()
                ]
    assert built == PANEL_PAGES, f"panels on the built pages {built}, shown by the chapters' sources {PANEL_PAGES}"
    assert not problems, "\n".join(problems)


_STATE_JS = """panel => {
  const img = panel.querySelector('img.sts-panel-img');
  return {src: img.getAttribute('src'), alt: img.alt, complete: img.complete, natural: img.naturalWidth,
          shown: img.getBoundingClientRect().width, box: panel.getBoundingClientRect().width,
          right: img.getBoundingClientRect().right, caption: panel.querySelector('.sts-panel-caption').textContent,
          captionShown: panel.querySelector('.sts-panel-caption').getClientRects().length > 0,
          status: panel.querySelector('.sts-panel-status').textContent,
          controls: panel.querySelectorAll('[data-control]').length,
          ready: panel.dataset.stsState === 'ready'};
}"""


@pytest.mark.slow
@pytest.mark.parametrize("width", [1280, 390])
def test_every_static_panel_answers_its_controls(server, width):
    browser_path = chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("The Python package playwright")
    problems: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=browser_path, headless=True, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": width, "height": 900})
        page.route(
            "**/*",
            lambda r: (
                r.continue_()
                if urllib.parse.urlsplit(r.request.url).hostname in LOCAL_HOSTS
                else (problems.append(f"non-local request {r.request.url}"), r.abort())
            ),
        )
        page.on("console", lambda m: m.type == "error" and problems.append(f"console error: {m.text}"))
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        frames_fetched: list[str] = []
        page.on("response", lambda r: "/_panels/" in r.url and frames_fetched.append(r.url))
        n_panels = 0
        for name in PANEL_PAGES:
            page.goto(server + f"book/{name}.html", wait_until="load")
            panels = page.query_selector_all(".sts-static-panel")
            if not panels:
                problems.append(f"{name}: no static panel on the page")
                continue
            for panel in panels:
                n_panels += 1
                panel.scroll_into_view_if_needed()
                page.wait_for_function("p => p.querySelector('img.sts-panel-img').complete", arg=panel)
                state = panel.evaluate(_STATE_JS)
                if not state["ready"] or state["natural"] == 0:
                    problems.append(f"{name}: panel not set up or its first picture did not load ({state})")
                    continue
                if not state["captionShown"]:
                    problems.append(f"{name}: the panel's caption (its setting in words) is not shown ({state})")
                if state["right"] > width + 1 or state["shown"] > state["box"] + 1:
                    problems.append(f"{name}: the panel's picture is wider than its box or the screen ({state})")
                fetched_before = len(frames_fetched)
                for control in panel.query_selector_all("[data-control]"):
                    before = panel.evaluate(_STATE_JS)
                    control.focus()
                    # The keyboard, as a reader without a mouse moves it: the next value (or the previous one
                    # at the end of the range).
                    key = "ArrowRight" if control.evaluate("c => c.tagName") == "INPUT" else "ArrowDown"
                    if control.evaluate(
                        "c => c.tagName === 'INPUT' ? +c.value === +c.max : c.selectedIndex === c.options.length - 1"
                    ):
                        key = "ArrowLeft" if key == "ArrowRight" else "ArrowUp"
                    page.keyboard.press(key)
                    page.wait_for_function("p => p.querySelector('img.sts-panel-img').complete", arg=panel)
                    after = panel.evaluate(_STATE_JS)
                    label = control.get_attribute("id")
                    if after["status"] and after["src"] == before["src"]:
                        continue  # a setting the draw function rejects: said under the controls, as live
                    if after["src"] == before["src"] or after["caption"] == before["caption"]:
                        problems.append(f"{name}: moving {label} did not change the picture ({before} -> {after})")
                    elif after["natural"] == 0:
                        problems.append(f"{name}: the picture for {label} did not load ({after['src']})")
                    elif after["alt"] == before["alt"]:
                        problems.append(f"{name}: moving {label} left the alt text as it was")
                if len(frames_fetched) == fetched_before:
                    problems.append(f"{name}: no frame was fetched on demand")
            if width == 390:
                SHOTS.mkdir(parents=True, exist_ok=True)
                panels[0].screenshot(path=str(SHOTS / f"panel-{name}-{width}.png"))
        browser.close()
    assert n_panels == sum(PANEL_PAGES.values()), f"{n_panels} static panels found, the sources show {PANEL_PAGES}"
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------------------------
# Panels agree with the text (issue 23): every setting the prose suggests trying has a frame
# ---------------------------------------------------------------------------------------------

_SETTING = re.compile(r"\$([^$=]+?)\s*=\s*(-?[\d.]+)\$")


def _suggestions(prose: str, controls: list[dict]) -> list[dict]:
    """The settings ``prose`` suggests trying on a panel with ``controls`` (its data's control records), one per
    clause: ``$symbol = value$`` for a control whose ``tex`` (or name) is that symbol, and a menu option named by
    its label. Only the text from the first "try" on counts (what the panel shows at first is described before).
    A clause that names no control's setting suggests nothing.

    >>> ctl = [{"name": "pe", "tex": "pe", "labels": ["fixed one-hot", "stochastic one-hot"], "default": 0},
    ...        {"name": "T_test", "tex": "T_{\\text{test}}", "labels": ["20", "21", "40"], "default": 2}]
    >>> _suggestions("Opens at $T=40$. Try: the fixed one-hot model at $T_{\\text{test}}=21$; the "
    ...              "stochastic one-hot model; a smaller $q$.", ctl)
    [{'T_test': '21', 'pe': 'fixed one-hot'}, {'pe': 'stochastic one-hot'}]
    """
    start = re.search(r"\btry\b", prose, re.I)
    if not start:
        return []
    by_tex = {re.sub(r"\s+", "", c.get("tex") or c["name"]): c for c in controls}
    out = []
    for clause in re.split(r";|\.\s|:\s", prose[start.start() :]):
        setting = {}
        for tex, value in _SETTING.findall(clause):
            control = by_tex.get(re.sub(r"\s+", "", tex))
            if control is not None:
                setting[control["name"]] = value.rstrip(".")
        for c in controls:
            named = [lab for lab in c["labels"] if not re.fullmatch(r"-?[\d.]+", lab) and lab in clause]
            if named:
                setting[c["name"]] = max(named, key=len)
        if setting:
            out.append(setting)
    return out


def _position(control: dict, value: str):
    """The index of ``value`` among a control's labels (numbers compared as numbers), else None."""
    for i, lab in enumerate(control["labels"]):
        try:
            if abs(float(lab) - float(value)) <= 1e-9 * max(1.0, abs(float(value))):
                return i
        except ValueError:
            if lab == value:
                return i
    return None


def test_every_setting_the_prose_suggests_has_a_frame(build):
    """Read the prose before each panel in the chapters' sources and the panel's data in the built page: every
    setting it suggests trying is on the panel's grid and has a drawn frame (issue 23, item 3)."""
    problems, checked = [], 0
    for name in PANEL_PAGES:
        source = (SOURCES / f"{name}.md").read_text()
        blocks = CODE_CELL.split(source)[::2]  # the text between the code cells (split also returns their bodies)
        # the prose right before each panel cell: since the last heading, at most the block before the cell
        proses = [re.split(r"\n#+ ", blocks[i])[-1] for i, _ in shown(source)]
        datas = parse_all((HTML / "book" / f"{name}.html").read_text(encoding="utf-8"))
        if len(datas) != len(proses):
            problems.append(f"{name}: {len(proses)} panel cells in the source, {len(datas)} panels on the page")
            continue
        for prose, data in zip(proses, datas):
            for setting in _suggestions(prose, data["controls"]):
                position = [c["default"] for c in data["controls"]]
                for j, c in enumerate(data["controls"]):
                    if c["name"] in setting:
                        position[j] = _position(c, setting[c["name"]])
                        if position[j] is None:
                            problems.append(
                                f"{name}: the text suggests {c['name']} = {setting[c['name']]}, which is "
                                f"not on the panel's grid {c['labels']}"
                            )
                if None in position:
                    continue
                frame = data["lookup"].get(",".join(map(str, position)))
                checked += 1
                if frame is None or "error" in data["frames"][frame]:
                    problems.append(f"{name}: the text suggests {setting}, for which the panel has no picture")
    assert not problems, "\n".join(problems)
    assert checked >= 5, f"only {checked} suggested settings found: is the prose still read?"


# ---------------------------------------------------------------------------------------------
# A phone's controls over the text (issue 57): the colour switch's tooltip, "Back to top"
# ---------------------------------------------------------------------------------------------

_UNDER_BACK_TO_TOP_JS = r"""
() => {
  // What lies under "Back to top" where a reader sees it: at each of 9 points of the button, the first element
  // below it; one inside the article (text, a plot, a panel) is covered content, and so is one of the header's buttons.
  const b = document.getElementById('pst-back-to-top'), r = b.getBoundingClientRect(), found = new Set();
  for (const fx of [0.1, 0.5, 0.9]) for (const fy of [0.1, 0.5, 0.9]) {
    const under = document.elementsFromPoint(r.left + fx * r.width, r.top + fy * r.height)
      .filter(e => e !== b && !b.contains(e) && e !== document.documentElement && e !== document.body)[0];
    if (under && (under.closest('.bd-article') || under.closest('.bd-header-article a, .bd-header-article button')))
      found.add(under.tagName.toLowerCase() + '.' + under.className);
  }
  return {shown: getComputedStyle(b).display !== 'none', covered: Array.from(found)};
}
"""


@pytest.mark.slow
def test_a_phone_tap_leaves_no_tooltip_and_back_to_top_covers_nothing(server):
    """On a 390 px touch screen: a tap on the colour switch changes the theme and leaves no "Color mode" tooltip over
    the text (sts-book.js turns the theme's tooltips off where nothing hovers); "Back to top", shown while the reader
    scrolls up, lies over no content of the article (sts-book.css puts it in the sticky header bar). Each check is
    also run on its planted failure: the tooltip turned back on, and the button where the theme puts it (90% down)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("The Python package playwright")
    url = server + "book/03_gd_dynamics.html"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium(), args=CHROMIUM_FLAGS)
        context = browser.new_context(
            viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True, color_scheme="light"
        )
        tips = {}
        for planted in (False, True):
            page = context.new_page()
            page.goto(url, wait_until="load")
            if planted:
                page.evaluate(
                    "() => bootstrap.Tooltip.getInstance(document.querySelector('.theme-switch-button')).enable()"
                )
            before = page.evaluate("() => document.documentElement.dataset.theme")
            page.tap(".theme-switch-button")
            page.wait_for_timeout(900)  # the theme's tooltips open 500 ms after the tap
            tips[planted] = page.evaluate(
                "() => Array.from(document.querySelectorAll('.tooltip')).filter(t => t.getClientRects().length)"
                ".map(t => t.textContent.trim())"
            )
            after = page.evaluate("() => document.documentElement.dataset.theme")
            page.close()
        assert before != after, "a tap on the colour switch did not change the theme"
        assert tips[False] == [], f"a tooltip stays over the text after a tap: {tips[False]}"
        assert tips[True] == ["Color mode"], f"the planted tooltip was not seen, so the check cannot fail: {tips}"

        covers = {}
        for planted in (False, True):
            page = context.new_page()
            page.goto(url, wait_until="load")
            if planted:  # the theme's own placement
                page.add_style_tag(
                    content="#pst-back-to-top { top: 90vh !important; width: auto !important; height: auto !important;"
                    " font-size: .8rem !important; border-radius: 2rem !important;"
                    " padding: .375rem .75rem !important; }"
                )
            for y in range(0, 6000, 300):  # read down, then scroll back up a little: the button shows
                page.evaluate(f"() => window.scrollTo(0, {y})")
                page.wait_for_timeout(20)
            page.evaluate("() => window.scrollTo(0, 5500)")
            page.wait_for_timeout(100)
            covers[planted] = page.evaluate(_UNDER_BACK_TO_TOP_JS)
            page.close()
        browser.close()
    assert covers[False]["shown"] and covers[True]["shown"], f"'Back to top' did not show on scrolling up: {covers}"
    assert covers[False]["covered"] == [], f"'Back to top' covers content: {covers[False]['covered']}"
    assert covers[True]["covered"], f"the planted placement covered nothing, so the check cannot fail: {covers}"


# Where every block of a section is, with the page's skipping of blocks off screen (sts-book.css: content-visibility)
# and without it (sections keep theirs), on a window tall enough that nothing is skipped: a skippable block is laid
# out on its own, so a block whose children's margins merged with its own (a notebook cell) moves what follows it.
_BLOCK_TOPS_JS = r"""
(planted) => {
  if (planted) {
    const s = document.createElement('style');
    s.textContent = '.bd-article section section > div.cell { content-visibility: auto; }';
    document.head.append(s);
  }
  const tops = () => Array.from(document.querySelectorAll('.bd-article section > *'))
    .filter(e => e.getClientRects().length).map(e => Math.round(e.getBoundingClientRect().top + scrollY));
  const skipping = tops();
  const s = document.createElement('style');
  s.textContent = '.bd-article section > :not(section) { content-visibility: visible !important; }';
  document.head.append(s);
  const whole = tops();
  // (only what lies well inside the window: below it the page keeps guessing heights, as it should)
  return skipping.filter((t, i) => whole[i] < innerHeight - 3000 && t !== whole[i]).length +
    (skipping.length !== whole.length);
}
"""


@pytest.mark.slow
def test_blocks_skipped_off_screen_lie_where_they_would_without_skipping(server):
    """sts-book.css lets the browser skip the layout of a paragraph, list, box or display of a section until the
    reader nears it (chapter 3's blocking time on a slow phone); laid out, each block lies exactly where it would
    without that, on chapter 3 and on the chapters whose printed outputs hold formulas (5 and 8). Planted (chapter 5):
    cells skipped too move the blocks after them."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("The Python package playwright")
    moved = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium(), args=CHROMIUM_FLAGS)
        context = browser.new_context(viewport={"width": 1280, "height": 30000}, color_scheme="light")
        for chapter in ("03_gd_dynamics", "05_length_generalization", "08_reproduction"):
            for planted in (False, True) if chapter == "05_length_generalization" else (False,):
                page = context.new_page()
                page.goto(server + f"book/{chapter}.html", wait_until="load")
                moved[chapter, planted] = page.evaluate(_BLOCK_TOPS_JS, planted)
                page.close()
        browser.close()
    assert not any(n for (_, planted), n in moved.items() if not planted), f"blocks moved: {moved}"
    assert all(n for (_, planted), n in moved.items() if planted), f"planted cells moved nothing: {moved}"
