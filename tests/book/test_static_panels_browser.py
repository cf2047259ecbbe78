"""The static book's panels answer in a browser without a kernel: every control of every panel, moved
from the keyboard, changes the picture (a frame fetched only then, from this machine), at a desktop
and a phone width, with no console error. Uses the book tier's session fixtures ``build`` and ``server`` (the book is built once per run).
"""

from __future__ import annotations

import urllib.parse

import pytest

from book_site import CHROMIUM_FLAGS, LOCAL_HOSTS, SHOTS
from book_site import chromium as _chromium, missing as _missing

PANEL_PAGES = ["01_task", "02_fcn_lower_bound", "03_gd_dynamics", "04_positional_encodings",
               "05_length_generalization", "06_related_results"]

_STATE_JS = """panel => {
  const img = panel.querySelector('img.sts-panel-img');
  return {src: img.getAttribute('src'), alt: img.alt, complete: img.complete, natural: img.naturalWidth,
          shown: img.getBoundingClientRect().width, box: panel.getBoundingClientRect().width,
          right: img.getBoundingClientRect().right, caption: panel.querySelector('.sts-panel-caption').textContent,
          status: panel.querySelector('.sts-panel-status').textContent,
          controls: panel.querySelectorAll('[data-control]').length,
          ready: panel.classList.contains('sts-panel-ready')};
}"""


@pytest.mark.slow
@pytest.mark.parametrize("width", [1280, 390])
def test_every_static_panel_answers_its_controls(server, width):  # noqa: F811
    chromium = _chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("The Python package playwright")
    problems: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": width, "height": 900})
        page.route("**/*", lambda r: r.continue_() if urllib.parse.urlsplit(r.request.url).hostname in LOCAL_HOSTS
                   else (problems.append(f"non-local request {r.request.url}"), r.abort()))
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
                if state["right"] > width + 1 or state["shown"] > state["box"] + 1:
                    problems.append(f"{name}: the panel's picture is wider than its box or the screen ({state})")
                fetched_before = len(frames_fetched)
                for control in panel.query_selector_all("[data-control]"):
                    before = panel.evaluate(_STATE_JS)
                    control.focus()
                    # The keyboard, as a reader without a mouse moves it: the next value (or the previous one
                    # at the end of the range).
                    key = "ArrowRight" if control.evaluate("c => c.tagName") == "INPUT" else "ArrowDown"
                    if control.evaluate("c => c.tagName === 'INPUT' ? +c.value === +c.max"
                                        " : c.selectedIndex === c.options.length - 1"):
                        key = "ArrowLeft" if key == "ArrowRight" else "ArrowUp"
                    page.keyboard.press(key)
                    page.wait_for_function("p => p.querySelector('img.sts-panel-img').complete", arg=panel)
                    after = panel.evaluate(_STATE_JS)
                    label = control.get_attribute("id")
                    if after["status"] and after["src"] == before["src"]:
                        continue    # a setting the draw function rejects: said under the controls, as live
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
    assert n_panels >= 6, f"only {n_panels} static panels found"
    assert not problems, "\n".join(problems)
