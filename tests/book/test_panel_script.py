"""The page script of a static panel (``book/_ext/static/sts-static-panels.js``) in Chromium, on a toy panel's markup
as the book writes it (``sts_panels.panel_markup``), no build needed: moving a control points every picture of the
panel at the frame's picture read by name from the payload (``src``, ``text_px``, ``width``, ``height``:
``sts_lib.presentation.payload.ScriptPicture``). A page whose payload is of the version before (each picture a
positional list) is planted, and the check sees it. Every built panel is moved in the book tier too
(``test_book_late.py``), minutes into a run; this is the same script on one page, in seconds.
"""

from __future__ import annotations

import json

from book_site import CHROMIUM_FLAGS, ROOT, chromium, missing
from panel_html import page as panel_page
from panel_html import parse

from sts_lib.chapters.panel import FigurePanel, Ints
from sts_lib.chapters.static_panel import static_data
from sts_lib.presentation.layout import new_figure

SCRIPT = ROOT / "book" / "_ext" / "static" / "sts-static-panels.js"
#: What each picture element of the panel shows: its layout, address, size and smallest text.
_SHOWN_JS = """() => Array.from(document.querySelectorAll('.sts-static-panel [data-layout]')).map(el => ({
  layout: el.dataset.layout, src: el.getAttribute(el.tagName === 'IMG' ? 'src' : 'srcset'),
  width: el.getAttribute('width'), height: el.getAttribute('height'), text_px: el.dataset.textPx}))"""


def _draw(fig=None, *, n: int = 2):
    fig, ax = new_figure(height=1.5 + 0.5 * n, width=3, fig=fig)  # each setting its own size
    ax.plot(range(n + 1))
    return fig


def _misplaced(browser, markup: str, payload: dict) -> list[str]:
    """Load ``markup`` with the page script, move the panel's control to its next value, and say where a picture
    element does not show the frame's picture that ``payload`` (the page's script data) names for its layout."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.set_content(f"<html><body>{markup}</body></html>")
    page.add_script_tag(path=str(SCRIPT))
    page.wait_for_function("() => document.querySelector('.sts-static-panel').dataset.stsState === 'ready'")
    page.eval_on_selector("[data-control]", "c => { c.value = '1'; c.dispatchEvent(new Event('input')); }")
    shown = page.evaluate(_SHOWN_JS)
    page.close()
    frame = payload["frames"][payload["lookup"]["1"]]
    for el in shown:
        want = frame["pictures"][el["layout"]]
        # as the script writes them: attributes are strings, a number as JavaScript prints it (12, not 12.0)
        want = {k: format(v, "g") if isinstance(v, float) else str(v) for k, v in want.items()}
        got = {k: el[k] for k in want}
        if got != want:
            errors.append(
                f"{el['layout']}: shows {json.dumps(got)[:160]}, the frame's picture is {json.dumps(want)[:160]}"
            )
    return errors


def test_moving_a_control_shows_the_frames_pictures_read_by_name():
    path = chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("The Python package playwright")
    panel = FigurePanel(_draw, {"n": Ints(2, 3, 2)}, alt="A toy line of n points, each setting its own size.")
    markup = panel_page(static_data(panel, alt=panel.alt))
    payload = parse(markup)
    first, moved = (payload["frames"][payload["lookup"][k]]["pictures"]["desktop"] for k in ("0", "1"))
    assert first["height"] != moved["height"]  # the move must change every field the script sets
    # The version before: each picture a list [src, text px, width, height], which this script no longer reads.
    old = json.loads(json.dumps(payload))
    for frame in old["frames"]:
        frame["pictures"] = {
            lay: [p["src"], p["text_px"], p["width"], p["height"]] for lay, p in frame["pictures"].items()
        }
    data = json.dumps(payload, separators=(",", ":")).replace("</", "<\\/")
    assert data in markup  # the payload is planted where the book writes it
    planted = markup.replace(data, json.dumps(old, separators=(",", ":")).replace("</", "<\\/"))
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_FLAGS)
        good, bad = _misplaced(browser, markup, payload), _misplaced(browser, planted, payload)
        browser.close()
    assert good == []
    assert len(bad) == 2 and all("shows" in line for line in bad), bad  # the desktop <img> and the phone <source>
