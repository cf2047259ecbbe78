"""Every payload the book renders, in one versioned contract: a figure's renderings (:class:`PictureData`, the notebook
output :data:`MIME_PICTURE`, written by :func:`sts_lib.presentation.render.picture_data`), a static panel's envelope
(:class:`PanelData`, the notebook output :data:`MIME_PANEL`, written by
:func:`sts_lib.chapters.static_panel.static_data`) and what the page's script reads of a panel (:class:`ScriptPanel`,
written into the page by the book's extension, ``book/_ext/sts_book/panels.py``, and read by
``book/_ext/static/sts-static-panels.js``), each a ``TypedDict`` of named fields whose pictures are records
(:class:`Rendering`, :class:`ScriptPicture`), never positional lists. One :data:`SCHEMA_VERSION` covers them all: the
extension refuses a notebook output of another version rather than guess at its shape, and a change of any record's
shape bumps it. :func:`json_schema` writes the same records as a JSON Schema (draft 2020-12), derived from their
annotations (a field's ``Annotated`` constraints included), so the schema the tests hold the payloads and the page
script to cannot drift from the types the code is written against.
"""

from __future__ import annotations

import copy
import re
from typing import Annotated, Literal, TypedDict, get_args, get_origin, get_type_hints, is_typeddict

from .theme import LAYOUTS

#: The notebook output type of a figure in the static book: its renderings as data (:class:`PictureData`), which
#: the book's extension (``book/_ext/sts_book/panels.py``) alone writes as markup.
MIME_PICTURE = "application/vnd.sts.picture+json"
#: The notebook output type of a static panel (:class:`sts_lib.chapters.static_panel.StaticPanel`): its envelope
#: (:class:`PanelData`), which the book's extension alone renders.
MIME_PANEL = "application/vnd.sts.panel+json"
#: The version of every record here. 2: the page script's pictures are records with named fields
#: (:class:`ScriptPicture`; version 1 wrote ``[url, text px, width, height]``) and its payload carries the version.
SCHEMA_VERSION = 2
#: The JSON Schema dialect :func:`json_schema` writes.
DIALECT = "https://json-schema.org/draft/2020-12/schema"

# A field's constraints beyond its type, which json_schema copies into the field's schema.
_PNG = Annotated[str, {"contentEncoding": "base64", "contentMediaType": "image/png", "pattern": "^iVBORw0KGgo"}]
_Px = Annotated[float, {"minimum": 0}]
_Size = Annotated[int, {"minimum": 1}]
_Index = Annotated[int, {"minimum": 0}]
_Words = Annotated[str, {"minLength": 1}]
_Layout = Annotated[str, {"enum": sorted(LAYOUTS)}]  # a layout's name (sts_lib.presentation.theme.LAYOUTS)
_Position = Annotated[str, {"pattern": r"^[0-9]+(,[0-9]+)*$"}]  # a position key (position_key)
_Labels = Annotated[list[str], {"minItems": 1}]


class Rendering(TypedDict):
    """One picture of a figure: ``png``, the PNG in base64 (in 256 colours for a screen; as ``savefig`` writes it for
    print), and ``text_px``, its smallest text in the image's pixels."""

    png: _PNG
    text_px: _Px


class PictureData(TypedDict):
    """A figure as the static book receives it (:data:`MIME_PICTURE`): ``renderings`` by layout name (a figure no
    drawing made has no dark pair) and ``alt``, what it shows in words (the cell's own alt text wins in the book)."""

    version: Literal[SCHEMA_VERSION]
    alt: str
    renderings: dict[_Layout, Rendering]


class PanelControl(TypedDict):
    """A control of a static panel: its ``name`` (the draw function's argument), ``label`` and ``tex`` (its symbol),
    the ``labels`` of the values it offers, the ``default`` position among them and whether it is a ``menu``."""

    name: _Words
    label: _Words
    tex: _Words
    labels: _Labels
    default: _Index
    menu: bool


class _FrameText(TypedDict):
    caption: _Words
    alt: _Words
    shown: list[str]


class PanelFrame(_FrameText, total=False):
    """One setting of a static panel: its ``caption`` (the setting in words), ``alt`` text, what each control reads
    (``shown``: a clamped value), and either its ``renderings`` by layout name or the ``error`` the draw function
    raised (what the live panel shows under its controls)."""

    renderings: dict[_Layout, Rendering]
    error: _Words


class PanelData(TypedDict):
    """A static panel as the book receives it (:data:`MIME_PANEL`): its accessible name (``label``), the ``note`` of
    what was precomputed, how the grid moves (``mode``: ``"all"`` combinations, or ``"one"`` control at a time), its
    ``controls``, its ``frames`` and, for each control position (:func:`position_key`), the index of its frame."""

    version: Literal[SCHEMA_VERSION]
    label: _Words
    note: str
    mode: Literal["all", "one"]
    controls: list[PanelControl]
    frames: Annotated[list[PanelFrame], {"minItems": 1}]
    lookup: dict[_Position, _Index]


class ScriptPicture(TypedDict):
    """A picture as the page's script shows it: ``src``, its address from the page; ``text_px``, its smallest text
    in image pixels; ``width`` and ``height``, its size in pixels (the PNG's header)."""

    src: _Words
    text_px: _Px
    width: _Size
    height: _Size


class ScriptControl(TypedDict):
    """A :class:`PanelControl` as its page carries it: its ``name`` and ``tex`` (which tie it to the prose's
    settings), and the ``labels`` and ``default`` position the page's script reads."""

    name: _Words
    tex: _Words
    labels: _Labels
    default: _Index


class ScriptFrame(_FrameText, total=False):
    """A :class:`PanelFrame` as the page's script reads it: its ``pictures`` by layout name, or its ``error``."""

    pictures: dict[_Layout, ScriptPicture]
    error: _Words


class ScriptPanel(TypedDict):
    """A static panel's payload in its page (a ``<script type="application/json">`` of the panel's markup): the
    :class:`PanelData` the page's script needs to move between frames, each frame's pictures as files."""

    version: Literal[SCHEMA_VERSION]
    mode: Literal["all", "one"]
    controls: list[ScriptControl]
    frames: Annotated[list[ScriptFrame], {"minItems": 1}]
    lookup: dict[_Position, _Index]


#: Every record of the contract, in the order :func:`json_schema` lists them.
RECORDS = (Rendering, PictureData, PanelControl, PanelFrame, PanelData, ScriptPicture, ScriptControl, ScriptFrame,
           ScriptPanel)  # fmt: skip
#: The payloads themselves (the others are their parts): what a document of the contract is one of.
PAYLOADS = (PictureData, PanelData, ScriptPanel)
#: A frame holds exactly one of these fields: its pictures, or why there are none.
_ONE_OF = {PanelFrame: ("renderings", "error"), ScriptFrame: ("pictures", "error")}


def position_key(position) -> str:
    """The key of a panel's ``lookup`` for a control position (one index per control), as the page's script
    writes it (``position.join(",")``).

    >>> position_key((2, 0, 1))
    '2,0,1'
    """
    return ",".join(str(int(i)) for i in position)


def first_frame(data: PanelData | ScriptPanel) -> PanelFrame | ScriptFrame:
    """The frame a panel's data shows first: that of every control's default position."""
    return data["frames"][data["lookup"][position_key(c["default"] for c in data["controls"])]]


_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _schema_of(hint, defs: dict) -> dict:
    """The JSON Schema of a type hint; a record is written once into ``defs`` and referred to."""
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        out = _schema_of(args[0], defs)
        for extra in hint.__metadata__:
            out.update(copy.deepcopy(extra))
        return out
    if any(hint is t for t in _TYPES):  # (an Annotated hint inside is not hashable)
        return {"type": _TYPES[hint]}
    if origin is Literal:
        return {"const": args[0]} if len(args) == 1 else {"enum": list(args)}
    if origin is list:
        return {"type": "array", "items": _schema_of(args[0], defs)}
    if origin is dict:
        keys = {k: v for k, v in _schema_of(args[0], defs).items() if k != "type"}
        return {"type": "object", "propertyNames": keys, "additionalProperties": _schema_of(args[1], defs)}
    if is_typeddict(hint):
        name = hint.__name__
        if name not in defs:
            fields = get_type_hints(hint, include_extras=True)
            defs[name] = {
                "type": "object",
                "description": re.sub(r"\s+", " ", hint.__doc__ or "").strip(),
                "properties": {k: _schema_of(v, defs) for k, v in fields.items()},
                "required": [k for k in fields if k in hint.__required_keys__],
                "additionalProperties": False,
            }
            if hint in _ONE_OF:
                defs[name]["oneOf"] = [{"required": [k]} for k in _ONE_OF[hint]]
        return {"$ref": f"#/$defs/{name}"}
    raise TypeError(f"no JSON Schema for {hint!r}")


def json_schema(record: type | None = None) -> dict:
    """The contract as a JSON Schema (draft 2020-12): every record of :data:`RECORDS` under ``$defs``, and at its root
    ``record`` (one of them), or else any of the :data:`PAYLOADS`. Each record's fields are its annotations: required
    unless the record leaves them out (a frame's pictures or error, exactly one of which it holds), and no other.

    >>> schema = json_schema(ScriptPanel)
    >>> schema["$ref"], sorted(schema["$defs"]["ScriptPicture"]["properties"])
    ('#/$defs/ScriptPanel', ['height', 'src', 'text_px', 'width'])
    >>> schema["$defs"]["ScriptPanel"]["properties"]["version"]
    {'const': 2}
    """
    if record is not None and record not in RECORDS:
        raise ValueError(f"record must be one of {[r.__name__ for r in RECORDS]}, got {record!r}")
    defs: dict = {}
    refs = {r: _schema_of(r, defs) for r in RECORDS}
    root = refs[record] if record is not None else {"oneOf": [refs[r] for r in PAYLOADS]}
    title = record.__name__ if record is not None else "The course's payloads"
    return {"$schema": DIALECT, "title": f"{title}, version {SCHEMA_VERSION}", **root, "$defs": defs}


__all__ = ["DIALECT", "MIME_PANEL", "MIME_PICTURE", "PAYLOADS", "PanelControl", "PanelData", "PanelFrame",
           "PictureData", "RECORDS", "Rendering", "SCHEMA_VERSION", "ScriptControl", "ScriptFrame", "ScriptPanel",
           "ScriptPicture", "first_frame", "json_schema", "position_key"]  # fmt: skip
