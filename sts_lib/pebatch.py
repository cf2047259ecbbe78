"""The PEs of one batch (:class:`PEBatch`), stored as integer slots into a table where possible.

Every positional encoding of :mod:`sts_lib.positional` samples one of these. One-hot families are never
stored as dense ``(batch, T, m)`` tensors: a batch keeps integer *slots* into a table (the identity for
one-hot), so the model's inner products with PEs (:meth:`PEBatch.scores`, :meth:`PEBatch.pool`,
:meth:`PEBatch.select_sum`) become gathers. That is what makes ``T = 200`` with ``m = 512`` cheap on a CPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class PEBatch:
    """The PEs of one batch, stored sparsely when possible.

    Exactly one of two layouts is used:

    * ``slots`` ``(batch, T)`` long indices into ``table`` ``(N, m)``; ``table=None``
      means the identity, i.e. one-hot vectors with ``m = N``;
    * ``dense`` ``(batch, T, m)`` explicit vectors.
    """

    m: int  # PE dimension
    slots: torch.Tensor | None = None  # (batch, T) long, index of each position's vector
    table: torch.Tensor | None = None  # (N, m) codebook; None = one-hot identity
    dense: torch.Tensor | None = None  # (batch, T, m) explicit vectors

    @property
    def one_hot(self) -> bool:
        """True when every vector is a one-hot e_slot (``slots`` with no table): the layout the
        fast path of :mod:`sts_lib.fast` needs. The one definition of "one-hot" in the library."""
        return self.slots is not None and self.table is None and self.dense is None

    def scores(self, v: torch.Tensor) -> torch.Tensor:
        """Inner products ``<p_i, v_b>``: v ``(batch, m)`` -> ``(batch, T)``."""
        if self.dense is not None:
            return torch.bmm(self.dense, v.unsqueeze(-1)).squeeze(-1)
        full = v if self.table is None else v @ self.table.T  # (batch, N)
        return full.gather(1, self.slots)

    def pool(self, a: torch.Tensor) -> torch.Tensor:
        """Weighted sum ``sum_i a_i p_i``: a ``(batch, T)`` -> ``(batch, m)``."""
        if self.dense is not None:
            return torch.bmm(a.unsqueeze(1), self.dense).squeeze(1)
        n = self.m if self.table is None else self.table.shape[0]
        out = a.new_zeros(a.shape[0], n).scatter_add_(1, self.slots, a)
        return out if self.table is None else out @ self.table

    def select_sum(self, idx: torch.Tensor) -> torch.Tensor:
        """Sum of the PEs at positions ``idx`` ``(batch, q)`` -> ``(batch, m)``."""
        if self.dense is not None:
            picked = self.dense.gather(1, idx.unsqueeze(-1).expand(-1, -1, self.m))
            return picked.sum(1)
        ones = torch.ones(idx.shape, dtype=self._dtype, device=idx.device)
        return self.pool(torch.zeros(self.slots.shape, dtype=self._dtype, device=idx.device).scatter_(1, idx, ones))

    def to_dense(self) -> torch.Tensor:
        """The explicit ``(batch, T, m)`` tensor (for plots, tests and the dense baseline)."""
        if self.dense is not None:
            return self.dense
        if self.table is None:
            return torch.nn.functional.one_hot(self.slots, self.m).to(self._dtype)
        return self.table[self.slots]

    @property
    def _dtype(self) -> torch.dtype:
        if self.dense is not None:
            return self.dense.dtype
        return torch.float32 if self.table is None else self.table.dtype


__all__ = ["PEBatch"]
