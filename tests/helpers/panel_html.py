"""A static panel's page as the book writes it (book/_ext/sts_book/panels.py, frames left inline), and reading it back:
its JSON payload and a frame's PNG (shared by the unit and integration tiers)."""

import base64
import json
import sys
from html.parser import HTMLParser
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "book" / "_ext"))
from sts_book.panels import panel_markup


def page(static_panel) -> str:
    """The markup the book writes for ``static_panel`` (a StaticPanel), its pictures inlined as ``data:`` URIs."""
    return panel_markup(static_panel.data, lambda png: "data:image/png;base64," + png)


class _Payloads(HTMLParser):
    """The text of every ``<script class="sts-panel-data">`` of a page, in page order (an HTML parser, not a
    pattern: the payload is read as a browser reads it)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found, self._inside = [], False

    def handle_starttag(self, tag, attrs):
        classes = (dict(attrs).get("class") or "").split()
        if tag == "script" and "sts-panel-data" in classes:
            self._inside = True
            self.found.append("")

    def handle_endtag(self, tag):
        if tag == "script":
            self._inside = False

    def handle_data(self, data):
        if self._inside:
            self.found[-1] += data


def parse_all(page_html: str) -> list[dict]:
    """Every panel's JSON payload on a page, in page order."""
    reader = _Payloads()
    reader.feed(page_html)
    reader.close()
    return [json.loads(text) for text in reader.found]


def parse(panel_html: str) -> dict:
    """The first panel's JSON payload in ``panel_html``."""
    return parse_all(panel_html)[0]


def png_of(frame: dict, layout: str = "desktop") -> bytes:
    """The PNG a parsed frame shows for ``layout`` (its address inlined by :func:`page`)."""
    return base64.b64decode(frame["pictures"][layout]["src"].split(",", 1)[1])
