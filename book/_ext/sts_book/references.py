"""No empty "References" heading, in HTML and in print (a Sphinx extension; ``_config.yml``'s ``local_extensions``).

Every chapter ends with a section "References" holding ``{bibliography}`` with ``:filter: docname in docnames``:
the works the chapter cites. sphinxcontrib-bibtex writes such a list as its citations, or as a bare target when
the chapter cites nothing, which left a heading over nothing. In the PDF every chapter's heading stood over
nothing: Sphinx's LaTeX writer moves every citation to one bibliography at the end of the book (where each chapter's
entries were printed again, beside the References appendix's whole list).

:class:`ChapterReferences` removes a section that holds nothing but a bibliography (with its title and targets)
where that bibliography lists no entry, and in every LaTeX build; in the PDF :class:`RetargetCitations` then points
each chapter's citations at the same work's entry in the bibliography that stays (the References appendix's
``:all:`` list, whose section says more than its list). ``tests/unit/test_references.py`` builds a small book
with a chapter that cites nothing; ``tests/book/test_pdf.py`` reads the course PDF.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform


class ChapterReferences(SphinxPostTransform):
    """A "References" section whose bibliography lists no entry is removed (module docstring).

    Runs before sphinxcontrib-bibtex writes the entries (its ``BibliographyTransform``, priority 5), while the
    ``bibliography`` node and its key are still there: a section that holds nothing but one (with its title and
    targets) goes when the domain has no citation for that key, and in any LaTeX build, where the entries would
    have moved to the back; :class:`RetargetCitations` then points the chapter's citations at the same work's
    entry in a bibliography that stays (the References appendix's ``:all:`` list)."""

    default_priority = 4

    def run(self, **kwargs) -> None:
        from sphinxcontrib.bibtex.directives import BibliographyKey
        from sphinxcontrib.bibtex.nodes import bibliography as bibliography_node

        domain = self.env.get_domain("cite")
        latex = self.app.builder.format == "latex"
        removed = self.document.setdefault("sts_removed_bibliographies", [])
        for bib in list(self.document.findall(bibliography_node)):
            section = bib.parent
            if not isinstance(section, nodes.section) or section.parent is None:
                continue
            if any(c is not bib and not isinstance(c, (nodes.title, nodes.target)) for c in section.children):
                continue  # the section says more than its list (the References appendix): keep it
            key = BibliographyKey(docname=bib["docname"], id_=bib["ids"][0])
            if not latex and any(c.bibliography_key == key for c in domain.citations):
                continue
            removed.append(key)
            section.parent.remove(section)
            _drop_from_page_toc(self.env, bib["docname"], section)


class RetargetCitations(SphinxPostTransform):
    """In a LaTeX build, a citation whose bibliography :class:`ChapterReferences` removed links the same work's
    entry in a bibliography that stays (found by its key less the removed list's ``keyprefix``). Runs after
    Sphinx's ``ReferencesResolver`` (priority 10), which writes each citation as
    ``\\hyperlink{cite.<doc>:<id>}`` (a ``raw_latex`` node)."""

    default_priority = 20
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        removed = set(self.document.get("sts_removed_bibliographies", ()))
        if not removed:
            return
        domain = self.env.get_domain("cite")
        kept = {c.key: c for c in domain.citations if c.bibliography_key not in removed}
        links = {}
        for c in domain.citations:
            if c.bibliography_key in removed:
                prefix = domain.bibliographies[c.bibliography_key].keyprefix or ""
                to = kept.get(c.key[len(prefix) :] if c.key.startswith(prefix) else c.key)
                if to is not None:
                    links[f"cite.{c.bibliography_key.docname}:{c.citation_id}"] = (
                        f"cite.{to.bibliography_key.docname}:{to.citation_id}"
                    )
        from sphinxcontrib.bibtex.nodes import raw_latex

        for raw in list(self.document.findall(raw_latex)):
            text = raw.rawsource  # what the LaTeX writer prints
            match = re.fullmatch(r"\\hyperlink\{(cite\.[^}]*)\}\{", text)
            if match and match.group(1) in links:
                raw.replace_self(raw_latex(text.replace(match.group(1), links[match.group(1)])))


def _drop_from_page_toc(env, docname: str, section: nodes.section) -> None:
    """The removed section's entry in the page's own contents (HTML's "On this page" reads ``env.tocs``)."""
    toc = env.tocs.get(docname)
    anchors = {"#" + i for i in section["ids"]}
    if toc is None or not anchors:
        return
    for ref in list(toc.findall(nodes.reference)):
        if ref.get("anchorname") in anchors:
            item = ref.parent
            while item is not None and not isinstance(item, nodes.list_item):
                item = item.parent
            if item is not None and item.parent is not None:
                bullets = item.parent
                bullets.remove(item)
                if not bullets.children and bullets.parent is not None:
                    bullets.parent.remove(bullets)


def setup(app):
    app.add_post_transform(ChapterReferences)
    app.add_post_transform(RetargetCitations)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
