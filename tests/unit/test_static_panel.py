"""Static panels (sts_lib.chapters.static_panel): the book's kernel-free panels draw every frame with the
panel's own draw function over the declared grid, clamp settings as the live panel does, and map every
control position to a frame.

The browser half (moving the controls of every panel on the built page) is in tests/book/test_book.py.
"""

from __future__ import annotations

import html
import json
import re

import pytest
from panel_html import page, parse, png_of

from sts_lib.chapters.panel import Choice, FigurePanel, Ints, LogFloats
from sts_lib.chapters.static_panel import ENV, StaticPanel, clamp, figure_png, static_data, static_grid
from sts_lib.presentation.layout import describe, new_figure
from sts_lib.presentation.payload import MIME_PANEL
from sts_lib.presentation.render import compact

pytest.importorskip("ipywidgets")


def draw_line(fig=None, *, T: int = 4, q: int = 1, kind: str = "a"):
    """A toy panel figure whose picture depends on every value (the oracle for the frames)."""
    if kind == "bad" and q > 2:
        raise ValueError(f"kind 'bad' rejects q={q} > 2")
    fig, ax = new_figure(height=2, width=3, fig=fig)
    ax.plot(range(T), [q * i for i in range(T)], c="C0" if kind == "a" else "C1")
    ax.set_title(f"T={T} q={q} {kind}")
    return fig


def toy_panel(**kw) -> FigurePanel:
    controls = {
        "T": Ints(2, 5, 4),
        "q": Ints(1, 5, 1),
        "kind": Choice((("first", "a"), ("second", "b"), ("broken", "bad")), "a", label="kind"),
    }
    return FigurePanel(
        draw_line,
        controls,
        bounds=lambda v: {"q": (1, v["T"])},
        alt="A toy line whose slope is q, over T points.",
        **kw,
    )


def tiny_panel(**kw) -> FigurePanel:
    """Two frames: for the checks that do not need the toy panel's 60 settings (each frame is drawn twice,
    for the column and the phone, so the toy panel costs about 15 s a build)."""
    return FigurePanel(
        lambda fig=None, *, q=1: draw_line(fig, T=3, q=q),
        {"q": Ints(1, 2, 1)},
        alt="A toy line whose slope is q, over T points.",
        **kw,
    )


@pytest.fixture(scope="module")
def toy_html() -> str:
    """The toy panel's static HTML, built once for the module."""
    panel = toy_panel()
    return page(static_data(panel, alt=panel.alt))


def test_small_grid_offers_every_combination_and_starts_at_the_panel_setting():
    panel = toy_panel()
    mode, positions, options = static_grid(panel)
    assert mode == "all"
    assert len(positions) == 4 * 5 * 3 == len(set(positions))
    assert [v for v, _ in options[2]] == ["a", "b", "bad"] and [lab for _, lab in options[2]] == [
        "first",
        "second",
        "broken",
    ]
    assert positions[0] == (2, 0, 0)  # T=4, q=1, kind=a: the defaults
    panel.update(T=3, q=2)
    assert static_grid(panel)[1][0] == (1, 1, 0)  # what update() set is where the static panel starts


def test_large_grid_moves_one_control_at_a_time():
    panel = toy_panel()
    mode, positions, options = static_grid(panel, limit=10)
    assert mode == "one"
    assert len(positions) == 1 + 3 + 4 + 2
    start = positions[0]
    for pos in positions[1:]:
        assert sum(a != b for a, b in zip(pos, start)) == 1


def test_every_frame_is_the_draw_functions_picture_of_its_clamped_setting(toy_html):
    panel = toy_panel()
    data = parse(toy_html)
    mode, positions, options = static_grid(panel)
    assert set(data["lookup"]) == {",".join(map(str, p)) for p in positions}
    pictures = {}  # the draw function's picture of each clamped setting, drawn once (positions share settings)
    for pos in positions:
        raw = {k: options[j][i][0] for j, (k, i) in enumerate(zip(panel.controls, pos))}
        want = clamp(raw, panel.bounds)
        frame = data["frames"][data["lookup"][",".join(map(str, pos))]]
        if want["kind"] == "bad" and want["q"] > 2:
            assert "rejects" in frame["error"] and "pictures" not in frame
            continue
        key = tuple(sorted(want.items()))
        if key not in pictures:
            pictures[key] = compact(figure_png(draw_line(None, **want)))  # the 256-colour picture of it
        assert png_of(frame) == pictures[key]
        assert (
            frame["caption"]
            == f"T = {want['T']}, q = {want['q']}, kind = "
            + {"a": "first", "b": "second", "bad": "broken"}[want["kind"]]
        )
        assert frame["alt"].startswith(panel.alt) and frame["caption"] in frame["alt"]


def test_clamped_positions_share_the_frame_of_the_setting_they_clamp_to(toy_html):
    data = parse(toy_html)
    # T=2 (index 0) with q = 3, 4, 5 (indices 2-4) all clamp to q = 2: one frame, not three.
    same = {data["lookup"][f"0,{i},0"] for i in range(1, 5)}
    assert len(same) == 1
    assert data["frames"][same.pop()]["caption"].startswith("T = 2, q = 2")
    assert len(data["frames"]) == len({json.dumps(f, sort_keys=True) for f in data["frames"]})


def test_static_values_choose_the_offer_and_bad_ones_fail_when_the_panel_is_built():
    panel = toy_panel(static={"T": (2, 5), "q": (1,)})
    mode, positions, options = static_grid(panel)
    assert [v for v, _ in options[0]] == [2, 4, 5]  # the start (4) is always offered
    assert [v for v, _ in options[1]] == [1]
    with pytest.raises(ValueError, match="static values for 'T'"):
        toy_panel(static={"T": (7,)})
    log = FigurePanel(
        lambda fig=None, lr=1.0: draw_line(fig, T=3),
        {"lr": LogFloats(-1.5, 0.5, 0.3)},
        static={"lr": (0.0316, 1.0, 3.0)},
        alt="A flat toy line whatever the rate.",
    )
    assert [lab for _, lab in static_grid(log)[2][0]] == ["0.0316", "0.3", "1", "3"]


def test_a_panel_without_its_alt_text_fails_when_it_is_built():
    """The figure in words is required where the panel is built (a chapter's builder, a cell), not found missing
    minutes into the book's build, when its static frames are drawn."""
    draw, controls = lambda fig=None, q=1: draw_line(fig, T=3, q=q), {"q": Ints(1, 2, 1)}
    with pytest.raises(TypeError, match="required keyword-only argument: 'alt'"):
        FigurePanel(draw, controls)
    for short in ("", "a line", "  " * 20):
        with pytest.raises(ValueError, match="alt must describe the figure in words"):
            FigurePanel(draw, controls, alt=short)


def test_html_has_native_labelled_controls_alt_text_and_a_note_of_what_is_precomputed(toy_html):
    panel = toy_panel()
    tiny = static_data(tiny_panel(), alt=panel.alt)
    bundle = tiny._repr_mimebundle_()
    assert isinstance(tiny, StaticPanel) and bundle[MIME_PANEL] == tiny.data and "image/png" in bundle
    assert page(static_data(tiny_panel(), alt=panel.alt)) == page(tiny)  # the same page on every build
    text = toy_html
    assert len(re.findall(r'<input type="range"', text)) == 2 and text.count("<select") == 1
    for cid in re.findall(r'id="(sts-panel-[0-9a-f]+-\w+)"', text):
        assert f'<label for="{cid}">' in text
    assert re.search(
        r'<img class="sts-panel-img" src="data:image/png;base64,[^"]+" width="\d+" height="\d+" '
        r'loading="lazy" decoding="async" alt="A toy line',
        text,
    )
    note = re.search(r'<p class="sts-panel-note">(.*?)</p>', text).group(1)
    assert "without a kernel" in note and "T ∈ {2, 3, 4, 5}" in html.unescape(note) and "notebook" in note
    with pytest.raises(ValueError, match="alt"):
        static_data(panel, alt="a line")


def test_a_closing_script_tag_in_a_label_cannot_end_the_data_script():
    panel = FigurePanel(
        lambda fig=None, c="x": draw_line(fig),
        {"c": Choice((("</script><b>", "x"), ("y", "y")), "x")},
        alt="A toy figure with a hostile option label.",
    )
    text = page(static_data(panel, alt=panel.alt))
    assert text.count("</script>") == 1
    assert [lab for lab in parse(text)["controls"][0]["labels"]] == ["</script><b>", "y"]


def test_show_is_the_live_widget_in_a_notebook_and_the_static_panel_under_the_book_build(monkeypatch):
    panel = tiny_panel()
    monkeypatch.delenv(ENV, raising=False)
    assert panel.show() is panel.widget
    monkeypatch.setenv(ENV, "1")
    shown = panel.show()
    assert isinstance(shown, StaticPanel) and 'class="sts-static-panel"' in page(shown)


def test_a_frames_alt_text_is_what_its_figure_says_it_shows():
    """A draw function may describe the very picture it drew (``layout.describe``); that, not the panel's template,
    becomes the frame's alt text, so two settings that draw different things are described differently."""

    def draw(fig=None, *, q: int = 1):
        fig, ax = new_figure(height=2, width=3, fig=fig)
        ax.plot(range(4), [q * i for i in range(4)])
        return describe(fig, f"A line of slope {q}, {'steep' if q > 2 else 'flat'}.")

    panel = FigurePanel(draw, {"q": Ints(1, 4, 1)}, alt="A toy line whose slope is q, over four points.")
    data = static_data(panel, alt=panel.alt).data
    alts = [f["alt"] for f in data["frames"]]
    assert alts[0] == "A line of slope 1, flat. Setting: q = 1." and "steep" in alts[-1]
    html_text = page(static_data(tiny_panel(), alt="A toy line whose slope is q, over T points. More words here."))
    assert 'aria-label="A toy line whose slope is q, over T points."' in html_text  # a sentence, never cut mid-word
