"""Positional encodings (PEs): one-hot, near-orthogonal, and their stochastic versions.

A PE object draws a :class:`PEBatch` for ``batch`` sequences of length ``T``.
Fixed PEs give every sequence the same vectors; stochastic PEs draw fresh ones
per sequence (in training and at test time), which is what lets the paper's
transformer generalise to longer inputs. One-hot families are never stored as
dense ``(batch, T, m)`` tensors: a :class:`PEBatch` keeps integer *slots* into a
table (the identity for one-hot), so the model's inner products become gathers.
That is what makes ``T = 200`` with ``m = 512`` cheap on a CPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ._validate import check_choice, check_generator, check_int
from .fast.sampling import random_injection

_KINDS = ("gaussian", "rademacher", "sphere")


@dataclass
class PEBatch:
    """The PEs of one batch, stored sparsely when possible.

    Exactly one of two layouts is used:

    * ``slots`` ``(batch, T)`` long indices into ``table`` ``(N, m)``; ``table=None``
      means the identity, i.e. one-hot vectors with ``m = N``;
    * ``dense`` ``(batch, T, m)`` explicit vectors.
    """

    m: int                              # PE dimension
    slots: torch.Tensor | None = None   # (batch, T) long, index of each position's vector
    table: torch.Tensor | None = None   # (N, m) codebook; None = one-hot identity
    dense: torch.Tensor | None = None   # (batch, T, m) explicit vectors

    @property
    def one_hot(self) -> bool:
        """True when every vector is a one-hot e_slot (``slots`` with no table): the layout the
        fast path of :mod:`sts_lib.fast` needs. The one definition of "one-hot" in the library."""
        return self.slots is not None and self.table is None and self.dense is None

    def scores(self, v: torch.Tensor) -> torch.Tensor:
        """Inner products ``<p_i, v_b>``: v ``(batch, m)`` -> ``(batch, T)``."""
        if self.dense is not None:
            return torch.bmm(self.dense, v.unsqueeze(-1)).squeeze(-1)
        full = v if self.table is None else v @ self.table.T      # (batch, N)
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
        return self.pool(torch.zeros(self.slots.shape, dtype=self._dtype, device=idx.device)
                         .scatter_(1, idx, ones))

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


def _random_vectors(n: int, m: int, kind: str, generator, device, batch=None) -> torch.Tensor:
    """``n`` (or ``batch x n``) random vectors in R^m with squared norm about 1."""
    shape = (n, m) if batch is None else (batch, n, m)
    if kind == "rademacher":
        bits = torch.randint(0, 2, shape, generator=generator, device=device)
        return (2.0 * bits - 1.0) / math.sqrt(m)
    g = torch.randn(shape, generator=generator, device=device)
    if kind == "sphere":
        return g / g.norm(dim=-1, keepdim=True)
    return g / math.sqrt(m)


class PositionalEncoding:
    """Base class: ``m`` is the PE dimension, ``max_len`` the longest ``T`` supported."""

    name = "base"
    one_hot = False         # True when every batch it samples is PEBatch.one_hot
    stochastic = False
    m: int
    max_len: int | None

    def sample(self, batch: int, T: int, *, generator: torch.Generator | None = None,
               device: str | torch.device = "cpu") -> PEBatch:
        """Draw the PEs of ``batch`` sequences of length ``T``."""
        batch = check_int("batch", batch, low=1)
        T = check_int("T", T, low=1)
        if self.max_len is not None and T > self.max_len:
            raise ValueError(f"T={T} exceeds this {self.name} PE's pool: T must be <= max_len={self.max_len}; "
                             "build the PE with a larger max_len")
        device = torch.device(device)
        check_generator(generator, device)
        return self._sample(batch, T, generator, device)

    def _sample(self, batch, T, generator, device) -> PEBatch:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        extra = ", ".join(f"{k}={v!r}" for k, v in self._spec().items())
        return f"{type(self).__name__}({extra})"

    def _spec(self) -> dict:
        return {"max_len": self.max_len}

    def spec(self) -> dict:
        """A JSON-able description (used to record experiment configs)."""
        return {"name": self.name, **self._spec()}


class OneHotPE(PositionalEncoding):
    """Fixed one-hot PE: position i gets e_i in R^max_len (Definition 2; m = max_len).

    >>> pe = OneHotPE(max_len=6).sample(2, 4)
    >>> pe.to_dense()[0].argmax(-1).tolist()
    [0, 1, 2, 3]
    """

    name = "onehot"
    one_hot = True

    def __init__(self, max_len: int):
        self.max_len = check_int("max_len", max_len, low=1)
        self.m = self.max_len

    def _sample(self, batch, T, generator, device):
        slots = torch.arange(T, device=device).expand(batch, T)
        return PEBatch(m=self.m, slots=slots)


class NearOrthogonalPE(PositionalEncoding):
    """Fixed near-orthogonal PE: ``max_len`` random vectors in R^m drawn once (Definition 3).

    ``kind`` is ``'gaussian'`` (N(0, I/m)), ``'rademacher'`` (entries +-1/sqrt(m)) or
    ``'sphere'`` (uniform unit vectors). Sequences of length T use the first T vectors.
    """

    name = "near_orthogonal"

    def __init__(self, m: int, max_len: int, *, kind: str = "rademacher", seed: int = 0):
        self.m = check_int("m", m, low=1)
        self.max_len = check_int("max_len", max_len, low=1)
        self.kind = check_choice("kind", kind, _KINDS)
        self.seed = check_int("seed", seed, low=0)
        g = torch.Generator().manual_seed(self.seed)
        self.table = _random_vectors(self.max_len, self.m, self.kind, g, "cpu")
        self._copies: dict[torch.device, tuple] = {}

    def table_on(self, device: str | torch.device) -> torch.Tensor:
        """``self.table`` ``(max_len, m)`` on ``device``, copied there once per device and then reused.

        Every :meth:`sample` needs the table on the batch's device; copying it each time would
        be a blocking host-to-device copy per training step on a GPU. The copy is redone only if
        ``self.table`` was replaced or edited in place since.

        >>> pe = NearOrthogonalPE(m=4, max_len=6)
        >>> pe.table_on("cpu") is pe.table
        True
        """
        device = torch.device(device)
        if device.type == "cpu":
            return self.table.to(device)
        src = self.table
        hit = self._copies.get(device)
        if hit is None or hit[0] is not src or hit[1] != src._version:
            hit = self._copies[device] = (src, src._version, src.to(device))
        return hit[2]

    def __getstate__(self):
        # Device copies are a cache: a pickled or copied PE starts without them.
        return {**self.__dict__, "_copies": {}}

    def __setstate__(self, state):
        self.__dict__.update({"_copies": {}, **state})

    def _spec(self):
        return {"m": self.m, "max_len": self.max_len, "kind": self.kind, "seed": self.seed}

    def _sample(self, batch, T, generator, device):
        slots = torch.arange(T, device=device).expand(batch, T)
        return PEBatch(m=self.m, slots=slots, table=self.table_on(device))


class StochasticOneHotPE(PositionalEncoding):
    """Stochastic one-hot PE: each sequence uses T random distinct slots of a pool of size N.

    This is the randomised-PE idea (Ruoss et al. 2023) with one-hot vectors; N must
    be at least the longest test length. m = N.

    >>> pe = StochasticOneHotPE(max_len=50)
    >>> b = pe.sample(2, 5, generator=torch.Generator().manual_seed(0))
    >>> b.slots.shape, bool((b.slots[0] != b.slots[1]).any())
    (torch.Size([2, 5]), True)
    """

    name = "stochastic_onehot"
    one_hot = True
    stochastic = True

    def __init__(self, max_len: int):
        self.max_len = check_int("max_len", max_len, low=1)
        self.m = self.max_len

    def _sample(self, batch, T, generator, device):
        return PEBatch(m=self.m, slots=random_injection(batch, T, self.max_len, generator, device))


class StochasticRandomPE(PositionalEncoding):
    """Stochastic near-orthogonal PE: fresh random vectors in R^m for every sequence.

    Any length works (``max_len=None``); the cost is cross-talk of size about
    sqrt(q/m) between positions, so m must grow like q log T.
    """

    name = "stochastic_random"
    stochastic = True

    def __init__(self, m: int, *, kind: str = "sphere"):
        self.m = check_int("m", m, low=1)
        self.kind = check_choice("kind", kind, _KINDS)
        self.max_len = None

    def _spec(self):
        return {"m": self.m, "kind": self.kind}

    def _sample(self, batch, T, generator, device):
        return PEBatch(m=self.m, dense=_random_vectors(T, self.m, self.kind, generator, device, batch=batch))


class StochasticCodebookPE(NearOrthogonalPE):
    """Stochastic PE from a fixed codebook: each sequence uses T random distinct rows of
    a fixed ``(max_len, m)`` near-orthogonal table (between the two variants above)."""

    name = "stochastic_codebook"
    stochastic = True

    def _sample(self, batch, T, generator, device):
        slots = random_injection(batch, T, self.max_len, generator, device)
        return PEBatch(m=self.m, slots=slots, table=self.table_on(device))


_REGISTRY = {cls.name: cls for cls in (OneHotPE, NearOrthogonalPE, StochasticOneHotPE,
                                       StochasticRandomPE, StochasticCodebookPE)}

#: The one vocabulary of PE kinds (each class's ``name``, what :func:`make_pe` and specs use) ...
PE_KINDS = tuple(_REGISTRY)
#: ... and how figures and tables label them.
PE_LABELS = {"onehot": "fixed one-hot", "near_orthogonal": "fixed near-orthogonal",
             "stochastic_onehot": "stochastic one-hot", "stochastic_random": "stochastic random vectors",
             "stochastic_codebook": "stochastic codebook"}
#: ... and the one colour of each kind in every figure of the library and the book.
PE_COLORS = {"onehot": "C3", "near_orthogonal": "C1", "stochastic_onehot": "C0", "stochastic_random": "C2",
             "stochastic_codebook": "C4"}


def make_pe(name: str, **kwargs) -> PositionalEncoding:
    """Build a PE by name: ``onehot``, ``near_orthogonal``, ``stochastic_onehot``,
    ``stochastic_random`` or ``stochastic_codebook``.

    >>> make_pe("stochastic_onehot", max_len=400).m
    400
    """
    check_choice("name", name, _REGISTRY)
    return _REGISTRY[name](**kwargs)
