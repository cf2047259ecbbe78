"""How the course shows what the core computes: figures, panels' pictures, tables and words.

A figure is a pure draw function over a :class:`~sts_lib.presentation.layout.Layout` (the book's column, a phone's,
print, and their dark pairs; :mod:`~sts_lib.presentation.theme` holds the palettes), decorated with
:func:`~sts_lib.presentation.layout.drawing`; :mod:`~sts_lib.presentation.render` turns a drawn figure into its
renderings as data the book's extension alone turns into markup, in the records of :mod:`~sts_lib.presentation.payload`
(every payload the book renders, its version and JSON Schema). :mod:`~sts_lib.presentation.plots` holds the shared
plotters, :mod:`~sts_lib.presentation.figures` and :mod:`~sts_lib.presentation.evidence_figures` the experiments'
figures (with :mod:`~sts_lib.presentation.run_labels`), :mod:`~sts_lib.presentation.report` the claims in tables and
words, :mod:`~sts_lib.presentation.verdict_table` the verdicts (chapter 8's statements table and
each figure's summary), :mod:`~sts_lib.presentation.readable`
the display hook and :mod:`~sts_lib.presentation.session` the chapters' set-up call. It imports the core and
:mod:`sts_lib.reading` (which never imports it back); nothing in the core imports it.
"""
