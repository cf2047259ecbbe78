"""The chapters' own code: each chapter's analyses (``chN_topic.py``) and its figures and widgets
(``chN_topic_widgets.py``).

Numbered like ``book/src``: ``ch1_task``, ``ch2_fcn``, ``ch3_dynamics``, ``ch4_positional``,
``ch5_length``, ``ch6_scan_snap`` and ``ch6_symmetry`` (chapter 6 discusses two related
papers). What their widget panels share is in :mod:`~sts_lib.chapters.panel`. A chapter module
builds on the core (``sts_lib.task``, ``models``, ``train``, ``theory``, ...) and on earlier
chapters, never the other way round; closed forms belong in :mod:`sts_lib.theory`, not here.
Chapters import what they use explicitly, e.g. ``from sts_lib.chapters import ch3_dynamics as dyn``;
this ``__init__`` imports nothing, so ``import sts_lib`` stays light.
"""
