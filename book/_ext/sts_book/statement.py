"""``{sts-statement}`key```: one of the paper's statements named on a page, with its verdict from the records.

Only chapter 8 states a verdict on a statement of the paper: its table and readings dropdowns are printed from the
statements' records (:data:`sts_lib.reading.statements.STATEMENTS`) and the committed result documents. Any other
page that mentions a statement's status writes this role instead of the words, so that a verdict changed by a new
run or a new rule changes on every page at once (``tests/unit/test_prose_verdicts.py`` fails on a sentence that
names a status without it). The role renders

* ``{sts-statement}`fig4.quicker``` as the verdict's word as chapter 8 shows it
  (:func:`sts_lib.reading.confirmation.standing`: a verdict fixed after the runs that fresh seeds did not replicate
  reads *not decided*), e.g. "not reproduced", linked to the statement's readings dropdown in chapter 8
  (:func:`sts_lib.presentation.verdict_table.readings_anchor`, the dropdown's ``:name:``). Not its mark (✗, ◐, ≡):
  a mark is defined in chapter 8, and a page that shows one gives its legend (``tests/unit/test_symbols_defined.py``);
* ``{sts-statement}`slightly quicker <fig4.quicker>``` as "slightly quicker (not reproduced)", linked the same way.

The text and the link are the same in every builder (a ``{ref}`` to the label: an HTML link, a LaTeX
``\\hyperref``). In LaTeX a dropdown's label sits on its title, which Sphinx's LaTeX writer prints without
``\\label`` (a rubric); :class:`DropdownLabels` puts a target before it, so the PDF's link lands there.

The verdicts are computed once per build (:func:`shown`, on the first use: the records import torch), from
:func:`sts_lib.results.load_documents` and
:func:`sts_lib.reading.confirmation.load_confirmation`, as chapter 8 computes them. A page that uses the role
depends on the committed documents and the records' modules (``env.note_dependency``), so an incremental build
reads it again when either changes. An unknown key fails the build, naming the key and the known keys. Only
sts_lib's public API is used, and none of its modules that import Sphinx.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NamedTuple

from docutils import nodes
from sphinx import addnodes
from sphinx.errors import ExtensionError
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.nodes import split_explicit_title

ROLE = "sts-statement"
#: The modules whose records decide a verdict and where it is linked: a change to one re-reads the pages that use
#: the role.
RECORDS = (
    "sts_lib.reading.policy",
    "sts_lib.reading.statements",
    "sts_lib.reading.verdicts",
    "sts_lib.reading.confirmation",
    "sts_lib.presentation.verdict_table",
)


class Shown(NamedTuple):
    """A statement as the role shows it."""

    verdict: str  # its key in sts_lib.reading.verdicts.VERDICTS, as chapter 8 shows it
    text: str  # its word, plain: "not reproduced"
    label: str  # chapter 8's label of its readings dropdown


#: The current build's verdicts (:func:`shown`), emptied when a build starts.
_CACHE: dict = {}


def plain_word(mark: str) -> str:
    """A verdict's word: its mark (chapter 8's table's first column) without the sign and the Markdown emphasis.

    >>> plain_word("✗ **not reproduced**"), plain_word("≡≢ by construction, either way")
    ('not reproduced', 'by construction, either way')
    """
    return mark.replace("**", "").replace("*", "").strip().split(" ", 1)[1]


def shown() -> tuple[dict, tuple]:
    """``({key: Shown}, files)`` over every statement, computed once per build: the verdict of
    :func:`sts_lib.reading.decide.statement_verdict` on the committed documents, as
    :func:`sts_lib.reading.confirmation.standing` shows it; ``files``: what it was read from (the documents, the
    confirmation, the records' modules)."""
    if "shown" not in _CACHE:
        from sts_lib.presentation.verdict_table import readings_anchor
        from sts_lib.reading.confirmation import DOCUMENT, FRESH_DIR, load_confirmation, standing
        from sts_lib.reading.decide import statement_verdict
        from sts_lib.reading.statements import STATEMENTS
        from sts_lib.reading.verdicts import VERDICTS
        from sts_lib.results import load_documents, result_path, search_path

        docs, conf = load_documents(), load_confirmation()
        out = {}
        for st in STATEMENTS:
            v, _, _ = standing(st, statement_verdict(st, docs)[0], conf)
            out[st.key] = Shown(v, plain_word(VERDICTS[v].mark), readings_anchor(st.key))
        files = [result_path(name) for name in docs]
        files += [p for p in (Path(f) / FRESH_DIR / DOCUMENT for f in search_path()) if p.is_file()][:1]
        files += [Path(sys.modules[m].__file__) for m in RECORDS]
        _CACHE["shown"] = (out, tuple(str(f) for f in files))
    return _CACHE["shown"]


def render(text: str) -> tuple[str, str]:
    """``(what the page shows, the statement's key)`` of the role's ``text`` (``key`` or ``title <key>``).

    A ValueError names an unknown key and the known ones."""
    explicit, title, key = split_explicit_title(text.strip())
    found, _ = shown()
    if key not in found:
        raise ValueError(f"{{{ROLE}}} names no statement {key!r}; known: {sorted(found)}")
    return (f"{title} ({found[key].text})" if explicit else found[key].text), key


def statement_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{sts-statement}`key```: the statement's verdict, linked to its readings in chapter 8 (module docstring)."""
    env = inliner.document.settings.env
    found, files = shown()  # the records' own errors are theirs
    try:
        words, key = render(text)
    except ValueError as exc:
        raise ExtensionError(f"{env.doc2path(env.docname)}:{lineno}: {exc}") from None
    for f in files:
        env.note_dependency(f)
    ref = addnodes.pending_xref(
        rawtext,
        nodes.inline(rawtext, words),
        refdomain="std",
        reftype="ref",
        reftarget=found[key].label,
        refexplicit=True,
        refwarn=True,  # a label chapter 8 does not define fails the build (-W)
        refdoc=env.docname,
    )
    return [nodes.inline("", "", ref)], []


class DropdownLabels(SphinxPostTransform):
    """In LaTeX, a dropdown's label (on its title, a rubric, which the LaTeX writer prints without ``\\label``)
    becomes a target just before the title, which it prints as ``\\label``: a ``{ref}`` to it lands there."""

    default_priority = 200
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        for title in list(self.document.findall(nodes.rubric)):
            parent = title.parent
            if not title["ids"] or parent is None or parent.get("design_component") != "dropdown":
                continue
            ids, title["ids"] = title["ids"], []
            parent.insert(parent.index(title), nodes.target("", "", ids=ids))


def _new_build(app) -> None:
    _CACHE.clear()


def setup(app):
    app.add_role(ROLE, statement_role)
    app.add_post_transform(DropdownLabels)
    app.connect("builder-inited", _new_build)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
