"""One typed payload (``sts_lib.presentation.payload``): real payloads against its JSON Schema, the page script's reads
against the same schema, and planted payloads and scripts that must fail.

Oracles: the schema is derived from the records (``json_schema``) and checked as draft 2020-12 by ``jsonschema``;
the payloads are what the library and the book's extension write (a chapter's panel built small, a figure's
``picture_data``, the page's script payload from ``sts_panels.panel_markup``); the script is read as text
(``book/_ext/static/sts-static-panels.js``), every field it reads of a record named by the variable that holds it.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import jsonschema
import pytest
from panel_html import page, parse

from sts_lib.chapters.ch2_fcn_widgets import bound_explorer
from sts_lib.chapters.panel import FigurePanel, Ints
from sts_lib.chapters.static_panel import FRAME_LAYOUTS, static_data
from sts_lib.presentation import payload
from sts_lib.presentation.layout import new_figure
from sts_lib.presentation.payload import PanelData, PictureData, ScriptPanel, json_schema
from sts_lib.presentation.render import BOOK_LAYOUTS, picture_data

SCRIPT = Path(__file__).resolve().parents[2] / "book" / "_ext" / "static" / "sts-static-panels.js"
#: Where the page script reads each record of :class:`ScriptPanel`: the expression that holds it, then ``.field``.
READS = {
    "ScriptPanel": r"\bdata",
    "ScriptControl": r"\bdata\.controls\[[^\]]+\]",
    "ScriptFrame": r"\bframe",
    "ScriptPicture": r"\bpicture",
}
#: A picture (or any part of the payload) read by position: ``picture[0]``, ``frame.pictures.desktop[2]``.
POSITIONAL = re.compile(r"\b(?:data|frame|pictures?|controls|frames)\b(?:\.\w+)*\[\d+\]")


def errors(record, document) -> list[str]:
    """Every way ``document`` breaks ``json_schema(record)`` (none when it is one), as ``path: message``."""
    validator = jsonschema.Draft202012Validator(json_schema(record))
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]


def script_reads(source: str) -> dict[str, set[str]]:
    """The fields the page script reads of each record (:data:`READS`), comments left out."""
    code = re.sub(r"/\*.*?\*/|//[^\n]*", "", source, flags=re.S)
    return {record: set(re.findall(held + r"\.(\w+)", code)) for record, held in READS.items()}


def script_faults(source: str) -> list[str]:
    """What the page script reads that the schema does not hold, and every positional read of the payload."""
    defs = json_schema()["$defs"]
    code = re.sub(r"/\*.*?\*/|//[^\n]*", "", source, flags=re.S)
    faults = [f"reads by position: {m.group(0)}" for m in POSITIONAL.finditer(code)]
    for record, names in script_reads(source).items():
        faults += [
            f"reads {record}.{n}, which the schema does not hold"
            for n in sorted(names - set(defs[record]["properties"]))
        ]
    return faults


def _draw(fig=None, *, q: int = 1):
    """A toy panel's figure that the draw function rejects at q = 2 (a frame with an error, not a picture)."""
    if q == 2:
        raise ValueError("q = 2 is rejected, as the live panel would say")
    fig, ax = new_figure(height=2, width=3, fig=fig)
    ax.plot(range(3), [q * i for i in range(3)])
    return fig


@pytest.fixture(scope="module")
def payloads() -> dict:
    """Real payloads: a chapter's panel (chapter 2's bound explorer, small, over two seeds), its figure's picture
    data in the book's four layouts, a toy panel with a rejected setting, and the page payloads of both panels."""
    chapter = bound_explorer(T=4, d=2, q=2, width=4)
    chapter.static = {k: [1, 0] if k == "seed" else [chapter.values[k]] for k in chapter.controls}
    toy = FigurePanel(_draw, {"q": Ints(1, 2, 1)}, alt="A toy line whose slope is q, over three points.")
    panels = {"chapter": static_data(chapter, alt=chapter.alt), "toy": static_data(toy, alt=toy.alt)}
    return {
        "figure": picture_data(chapter.figure, BOOK_LAYOUTS),
        **{f"{name} panel": p.data for name, p in panels.items()},
        **{f"{name} page": parse(page(p)) for name, p in panels.items()},
    }


def test_the_schema_is_draft_2020_12_and_holds_every_record():
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == payload.DIALECT == "https://json-schema.org/draft/2020-12/schema"
    assert list(schema["$defs"]) == [r.__name__ for r in payload.RECORDS]
    assert schema["oneOf"] == [{"$ref": f"#/$defs/{r.__name__}"} for r in payload.PAYLOADS]
    for record in payload.RECORDS:  # each record's fields are its annotations, required unless it leaves them out
        fields = schema["$defs"][record.__name__]
        assert list(fields["properties"]) == list(record.__annotations__), record
        assert set(fields["required"]) == record.__required_keys__ and fields["additionalProperties"] is False
    assert schema["$defs"]["ScriptPicture"]["required"] == ["src", "text_px", "width", "height"]
    with pytest.raises(ValueError, match="record must be one of"):
        json_schema(dict)


def test_real_payloads_are_of_the_schema(payloads):
    records = {"figure": PictureData, "panel": PanelData, "page": ScriptPanel}
    for name, document in payloads.items():
        assert errors(records[name.split()[-1]], document) == [], name
        assert errors(None, document) == [], name  # and one of the payloads, no other (the root's oneOf)
    chapter, toy = payloads["chapter panel"], payloads["toy panel"]
    assert (
        len(chapter["frames"]) == 2 and [list(f["renderings"]) for f in chapter["frames"]] == [list(FRAME_LAYOUTS)] * 2
    )
    assert ["error" in f for f in toy["frames"]] == [False, True]  # the rejected setting is a frame of its own kind
    assert set(payloads["figure"]["renderings"]) == set(BOOK_LAYOUTS)
    picture = payloads["chapter page"]["frames"][0]["pictures"]["phone"]
    assert set(picture) == {"src", "text_px", "width", "height"} and picture["src"].startswith("data:image/png")
    assert payload.first_frame(payloads["chapter page"])["caption"] == payload.first_frame(chapter)["caption"]


def test_planted_payloads_fail(payloads):
    """Each fault is planted in a copy of a real payload, which is otherwise of the schema."""

    def planted(name, change):
        document = copy.deepcopy(payloads[name])
        change(document)
        return document

    def frame(d, i=0):
        return d["frames"][i]

    def picture(d):
        return frame(d)["pictures"]["desktop"]

    page_faults = {
        "a picture without its height": lambda d: picture(d).pop("height"),
        "a picture as a positional list (version 1)": lambda d: frame(d)["pictures"].update(
            desktop=[picture(d)["src"], picture(d)["text_px"], picture(d)["width"], picture(d)["height"]]
        ),
        "a picture with an unknown field": lambda d: picture(d).update(url="x.png"),
        "a picture in an unknown layout": lambda d: frame(d)["pictures"].update(tablet=picture(d)),
        "a frame with both pictures and an error": lambda d: frame(d).update(error="no"),
        "a frame with neither": lambda d: frame(d).pop("pictures"),
        "a frame without alt text": lambda d: frame(d).pop("alt"),
        "a control without its labels": lambda d: d["controls"][0].pop("labels"),
        "a lookup key that is not a position": lambda d: d["lookup"].update({"a,b": 0}),
        "the version before": lambda d: d.update(version=1),
        "no frames": lambda d: d.update(frames=[]),
    }
    panel_faults = {
        "a frame without alt text": lambda d: frame(d).pop("alt"),
        "a rendering that is not a PNG": lambda d: frame(d)["renderings"]["desktop"].update(png="AAEC"),
        "a rendering without its text size": lambda d: frame(d)["renderings"]["desktop"].pop("text_px"),
        "an envelope without its label": lambda d: d.pop("label"),
        "a mode the script does not know": lambda d: d.update(mode="some"),
        "a field no record has": lambda d: d.update(id="sts-panel-1"),
    }
    figure_faults = {
        "no renderings": lambda d: d.pop("renderings"),
        "a negative text size": lambda d: d["renderings"]["phone"].update(text_px=-1.0),
    }
    for name, record, faults in (
        ("chapter page", ScriptPanel, page_faults),
        ("chapter panel", PanelData, panel_faults),
        ("figure", PictureData, figure_faults),
    ):
        assert errors(record, payloads[name]) == [], name
        passed = [fault for fault, change in faults.items() if not errors(record, planted(name, change))]
        assert passed == [], f"{name}: the schema let these through"


def test_the_page_script_reads_every_field_by_a_name_the_schema_holds():
    source = SCRIPT.read_text(encoding="utf-8")
    assert not re.search(r"picture\[\d\]", source)
    assert script_faults(source) == []
    reads = script_reads(source)
    assert all(reads.values()), reads  # each record is read where this test looks for it
    assert reads["ScriptPicture"] == {"src", "text_px", "width", "height"}  # a picture's every field, by name
    assert reads["ScriptFrame"] >= {"pictures", "error", "alt", "caption", "shown"}


def test_the_script_check_fails_on_planted_reads():
    planted = (
        "// a comment may say picture[0] or frame.url\n"
        "el.setAttribute('src', picture[0]);\n"
        "const w = frame.pictures.desktop[2], t = picture.url;\n"
        "const s = data.controls[j].step, m = data.mode;\n"
    )
    assert script_faults(planted) == [
        "reads by position: picture[0]",
        "reads by position: frame.pictures.desktop[2]",
        "reads ScriptControl.step, which the schema does not hold",
        "reads ScriptPicture.url, which the schema does not hold",
    ]


def test_a_lookup_key_is_the_scripts_join_of_a_position():
    assert payload.position_key((0, 12, 3)) == "0,12,3" == ",".join(["0", "12", "3"])
    key = re.compile(
        json_schema(ScriptPanel)["$defs"]["ScriptPanel"]["properties"]["lookup"]["propertyNames"]["pattern"]
    )
    assert key.match(payload.position_key([4])) and not key.match("4,")
