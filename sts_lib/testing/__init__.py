"""Test tooling that users may run too: a virtual accelerator (``virtual_accelerator``) that places
tensors like CUDA while computing on the CPU, so device slips show on a machine without a GPU.
Nothing else in ``sts_lib`` imports this package (tooling layer, like ``experiments``)."""
