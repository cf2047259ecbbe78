"""Reading a static panel's HTML back: its JSON payload and a frame's PNG (shared by the unit and integration tiers)."""

import base64
import json
import re


def parse(panel_html: str) -> dict:
    payload = re.search(r'<script type="application/json" class="sts-panel-data">(.*?)</script>', panel_html, re.S)
    return json.loads(payload.group(1))


def png_of(frame: dict) -> bytes:
    return base64.b64decode(frame["src"].split(",", 1)[1])
