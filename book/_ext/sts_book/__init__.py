"""The book's build: every Sphinx extension, transform and script that makes the course's book from its sources, in
one package beside the library. It uses :mod:`sts_lib`'s public API only, and the library imports nothing of it nor of
the build stack (docutils, Sphinx, MyST, myst-nb, Jupyter Book): ``tests/unit/test_boundary.py`` fails on a crossing
in either direction.

``_config.yml`` names one extension, this package; :func:`setup` sets up its parts, in this order:

- :mod:`.fixes`: what the book adds to its Jupyter Book stack and the upstream bugs it works around, each with its
  issue and when it can go (helped by :mod:`.css`, the style sheets cut to what the site can match, and
  :mod:`.icons`, the icon font cut to the icons it shows);
- :mod:`.panels`: myst-nb's renderer for the course's figures and panels (the entry point in ``pyproject.toml``);
- :mod:`.latex`: the PDF edition (with :mod:`.print_boxes`, what print leaves out of the boxes or moves);
- :mod:`.references`: no empty "References" heading;
- :mod:`.published`: the PDFs published beside the book and linked from it;
- :mod:`.statement`: the ``{sts-statement}`` role, a statement of the paper with its verdict;
- :mod:`.notebooks`: the learner's notebooks behind the launch buttons (with :mod:`.book_index`, the sources' labels,
  numbers and references);
- :mod:`.mathjax`: the mathematics typeset at build time (with :mod:`.mathjax_fonts`, MathJax's fonts cut to the
  characters shown, and ``mathjax.js``, MathJax in Node.js);
- :mod:`.self_check`: each chapter's self-checks answered on the page (from the records of :mod:`.self_checks`).

What ``make`` runs: ``python -m sts_book.execute`` (the chapters into the execution cache, one per core),
``python -m sts_book.latex [--student]`` (a PDF), ``python -m sts_book.student_book`` (the student edition) and
``python -m sts_book.notebooks`` (the learner's notebooks). The assets the parts read lie beside the package, in
``book/_ext``: ``static/`` (style sheets and scripts), ``templates/`` and ``mathjax_node/``.
"""

PARTS = ("fixes", "panels", "latex", "references", "published", "statement", "notebooks", "mathjax", "self_check")


def setup(app):
    """Set up every part of :data:`PARTS` as a Sphinx extension of its own, in that order."""
    for part in PARTS:
        app.setup_extension(f"{__name__}.{part}")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
