"""The speed path: everything that makes training fast without changing a number.

* :mod:`~sts_lib.fast.kernel`: the closed-form one-hot attention kernel (forward and
  hand-derived backward, batched over K models);
* :mod:`~sts_lib.fast.sampling`: the exact fast sampler of stochastic one-hot PE slots;
* :mod:`~sts_lib.fast.prefetch`: drawing the next batch in a background thread;
* :mod:`~sts_lib.fast.stack` and :mod:`~sts_lib.fast.ensemble`: K models stacked on a
  leading axis and trained together by the library's one loop (``train_ensemble``);
  :mod:`~sts_lib.fast.dense` steps transformers with dense PEs there (the readable formula
  over the model axis, with autograd);
* :mod:`~sts_lib.fast.bench`: ``make bench``.

The first three are leaves: they import nothing from ``sts_lib`` and are the only part of a
subpackage the core may import (the one fast branch of ``OneLayerTransformer.forward``, the
sampler of ``StochasticOneHotPE``, and ``train``'s ``prefetch``). The others sit above
the core. This ``__init__`` imports none of them, so importing a leaf never pulls in the
rest (``from sts_lib.fast.ensemble import train_ensemble``; it is also ``sts_lib.train_ensemble``).
"""
