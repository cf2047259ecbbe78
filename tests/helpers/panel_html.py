"""A static panel's page as the book writes it (book/_ext/sts_panels.py, frames left inline), and reading it back:
its JSON payload and a frame's PNG (shared by the unit and integration tiers)."""

import base64
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "book" / "_ext"))
from sts_panels import panel_markup


def page(static_panel) -> str:
    """The markup the book writes for ``static_panel`` (a StaticPanel), its pictures inlined as ``data:`` URIs."""
    return panel_markup(static_panel.data, lambda png: "data:image/png;base64," + png)


_PAYLOAD = re.compile(r'<script type="application/json" class="sts-panel-data">(.*?)</script>', re.S)


def parse(panel_html: str) -> dict:
    """The first panel's JSON payload in ``panel_html``."""
    return json.loads(_PAYLOAD.search(panel_html).group(1))


def parse_all(page_html: str) -> list[dict]:
    """Every panel's JSON payload on a page, in page order."""
    return [json.loads(m.group(1)) for m in _PAYLOAD.finditer(page_html)]


def png_of(frame: dict, layout: str = "desktop") -> bytes:
    """The PNG a parsed frame shows for ``layout`` (its address inlined by :func:`page`)."""
    return base64.b64decode(frame["pictures"][layout][0].split(",", 1)[1])
