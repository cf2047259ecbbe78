"""One rendering record and one schema: what a drawing leaves on its figure (``layout.Drawn``) and the renderings a
figure and a panel frame leave the kernel as (``render.renderings``, keyed by layout name).

Oracles: the drawing's own call with the values it was last given (a redraw in place must not leave the first
setting's recipe behind), and the payloads' keys against the schema the book's extension reads.
"""

import base64
import json

import pytest

from sts_lib.chapters.panel import FigurePanel, Ints
from sts_lib.chapters.static_panel import DARK_FRAME_LAYOUTS, FRAME_LAYOUTS, static_data
from sts_lib.presentation.layout import DESKTOP, PHONE, PRINT, describe, drawing, drawn, new_figure, redraw
from sts_lib.presentation.payload import SCHEMA_VERSION
from sts_lib.presentation.render import BOOK_LAYOUTS, picture_data, renderings


@drawing
def titled(fig=None, *, n: int = 1):
    """A panel-style drawing (``draw(fig=None, **values)``) whose title and alt text show its setting."""
    fig, (a, b) = new_figure(1, 2, height=2.0, fig=fig)
    a.plot(range(n + 1))
    b.plot(range(n + 1))
    fig.suptitle(f"n={n}")
    return describe(fig, f"Two lines of {n + 1} points.")


def test_a_panel_redrawn_in_place_is_redrawn_for_the_phone_with_its_new_setting():
    """The stale recipe: a figure drawn with n=1 and redrawn in place with n=5 (what a panel's ``update`` does)
    is drawn for a phone with n=5, as a new figure, and the one on screen is left as it is."""
    panel = FigurePanel(titled, {"n": Ints(1, 6, 1)}, alt="Two lines whose length is the panel's n.")
    first = panel.figure
    panel.update(n=5)
    assert panel.figure is first and first.get_suptitle() == "n=5"
    phone = redraw(panel.figure, PHONE)
    assert phone is not first and phone.get_suptitle() == "n=5" and drawn(phone).layout == PHONE
    assert drawn(phone).alt == "Two lines of 6 points." == drawn(first).alt
    assert first.get_suptitle() == "n=5" and drawn(first).layout == DESKTOP  # the screen's figure is untouched


def test_the_record_is_refreshed_by_every_call_and_a_redraw_in_place_drops_the_old_one():
    fig = titled(n=2)
    record = drawn(fig)
    assert record.layout == DESKTOP and record.alt == "Two lines of 3 points." and record.colorbars == []
    titled(fig, n=3)
    assert drawn(fig) is not record and drawn(fig).alt == "Two lines of 4 points."
    assert redraw(fig, PRINT) is fig  # print is the desktop layout at more dots: nothing to draw again


def test_a_reader_s_own_figure_has_no_record_and_no_dark_rendering():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3, 2))
    fig.add_subplot().plot([0, 1])
    assert drawn(fig) is None and redraw(fig, PHONE) is fig
    assert sorted(renderings(fig)) == ["desktop", "phone"]
    with pytest.raises(ValueError, match="describe"):
        describe(fig, "a line")


def test_renderings_are_keyed_by_layout_name_and_hold_no_markup():
    fig = titled(n=2)
    out = renderings(fig, ("print", *BOOK_LAYOUTS))
    assert list(out) == ["print", *BOOK_LAYOUTS]
    for name, r in out.items():
        assert set(r) == {"png", "text_px"} and r["text_px"] > 0, name
        assert base64.b64decode(r["png"])[:8] == b"\x89PNG\r\n\x1a\n", name
    data = picture_data(fig, rendered={k: v for k, v in out.items() if k != "print"})
    assert data["version"] == SCHEMA_VERSION and data["alt"] == "Two lines of 3 points."
    text = json.dumps(data)
    assert "data:" not in text and "media" not in text and "sts-" not in text  # no URI, query or DOM id
    with pytest.raises(ValueError, match="layouts must be among"):
        renderings(fig, ("desktop", "tablet"))


def test_a_panel_frame_carries_the_same_records_and_dark_frames_are_one_word():
    panel = FigurePanel(titled, {"n": Ints(1, 2, 1)}, alt="Two lines whose length is the panel's n.")
    light = static_data(panel, alt=panel.alt).data
    dark = static_data(panel, alt=panel.alt, dark=True).data
    assert light["version"] == SCHEMA_VERSION and "id" not in light
    assert [list(f["renderings"]) for f in light["frames"]] == [list(FRAME_LAYOUTS)] * 2
    assert [list(f["renderings"]) for f in dark["frames"]] == [list(DARK_FRAME_LAYOUTS)] * 2
    same = [f["renderings"]["desktop"] for f in light["frames"]] == [f["renderings"]["desktop"] for f in dark["frames"]]
    assert same  # the light pictures do not change when the dark ones are added
    assert "data:" not in json.dumps(light)
