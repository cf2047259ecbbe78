"""Interactive ipywidgets panels used by the chapters, one module per chapter topic.

ipywidgets is imported lazily inside each builder, so ``import sts_lib`` never
needs it. Every builder also has a static twin (a function returning a Figure)
that the rendered book shows when no kernel is running.
"""
