"""Positional encodings (PEs): one-hot, near-orthogonal, and their stochastic versions.

A PE object draws a :class:`~sts_lib.pebatch.PEBatch` for ``batch`` sequences of length ``T``.
Fixed PEs give every sequence the same vectors; stochastic PEs draw fresh ones
per sequence (in training and at test time), which is what lets the paper's
transformer generalise to longer inputs. One-hot families are never stored as
dense ``(batch, T, m)`` tensors: a :class:`~sts_lib.pebatch.PEBatch` keeps integer *slots* into a
table (the identity for one-hot), so the model's inner products become gathers.
That is what makes ``T = 200`` with ``m = 512`` cheap on a CPU.
"""

from __future__ import annotations

import math

import torch

from ._validate import check_choice, check_generator, check_int
from .fast.sampling import random_injection
from .pebatch import PEBatch

_KINDS = ("gaussian", "rademacher", "sphere")


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
    """Base class: ``m`` is the PE dimension, ``max_len`` the longest ``T`` supported.

    Each kind is one subclass carrying its own identity: ``name`` (the kind in specs and configs),
    ``label`` (how figures and tables name it), ``color`` (its colour in every figure) and
    :meth:`for_task`, the one rule sizing it for sequences of length ``T``. :data:`PE_KINDS`,
    :data:`PE_LABELS` and :data:`PE_COLORS` are read from the classes; nothing else keeps a table of kinds.
    """

    m: int
    max_len: int | None
    name = "base"
    label = "base"  # how figures, tables and controls name the kind
    color = "C7"  # its colour in every figure of the library and the book
    marker = "x"  # its marker, so that no two kinds differ by hue alone (colour-blind readers)
    one_hot = False  # True when every batch it samples is PEBatch.one_hot
    stochastic = False  # True when each sequence draws its positions' vectors afresh
    seeded_table = False  # True when it draws a random table from its `seed` (so each run seed draws its own)
    rotation_invariant = False  # True when the law of its vectors is invariant under rotations of R^m: then
    # population GD from zero stays in the family W_EE = alpha I (theory.families)

    @classmethod
    def for_task(cls, T: int, *, m: int | None = None, pool: int | None = None, seed: int = 0):
        """This kind sized for sequences of length ``T``: ``m`` its width where the kind has a free one
        (one-hot kinds ignore it: their width is the pool), ``pool`` the number of positions it can tell
        apart (its longest length; default per kind), ``seed`` the table of a fixed random kind."""
        raise NotImplementedError  # pragma: no cover - every kind defines its rule

    @staticmethod
    def _width(m, kind: str) -> int:
        if m is None:
            raise ValueError(f"m must be given for a {kind} PE (its width is free), got m=None")
        return check_int("m", m, low=1)

    @staticmethod
    def _pool(T, pool, default: int | None = None) -> int:
        """``pool`` (``default``, or T, when None), at least the length T it must cover."""
        T = check_int("T", T, low=1)
        return (default or T) if pool is None else check_int("pool", pool, low=T)

    def sample(
        self, batch: int, T: int, *, generator: torch.Generator | None = None, device: str | torch.device = "cpu"
    ) -> PEBatch:
        """Draw the PEs of ``batch`` sequences of length ``T``."""
        batch = check_int("batch", batch, low=1)
        T = check_int("T", T, low=1)
        if self.max_len is not None and T > self.max_len:
            raise ValueError(
                f"T={T} exceeds this {self.name} PE's pool: T must be <= max_len={self.max_len}; "
                "build the PE with a larger max_len"
            )
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
    label = "fixed one-hot"
    color = "C3"
    marker = "s"
    one_hot = True

    def __init__(self, max_len: int):
        self.max_len = check_int("max_len", max_len, low=1)
        self.m = self.max_len

    @classmethod
    def for_task(cls, T, *, m=None, pool=None, seed=0):
        """m = the pool (default T): one vector per position.

        >>> OneHotPE.for_task(8).m, OneHotPE.for_task(8, pool=12).m
        (8, 12)
        """
        return cls(max_len=cls._pool(T, pool))

    def _sample(self, batch, T, generator, device):
        slots = torch.arange(T, device=device).expand(batch, T)
        return PEBatch(m=self.m, slots=slots)


class NearOrthogonalPE(PositionalEncoding):
    """Fixed near-orthogonal PE: ``max_len`` random vectors in R^m drawn once (Definition 3).

    ``kind`` is ``'gaussian'`` (N(0, I/m)), ``'rademacher'`` (entries +-1/sqrt(m)) or
    ``'sphere'`` (uniform unit vectors). Sequences of length T use the first T vectors.
    """

    name = "near_orthogonal"
    label = "fixed near-orthogonal"
    color = "C1"
    marker = "^"
    seeded_table = True

    @classmethod
    def for_task(cls, T, *, m=None, pool=None, seed=0):
        """``m`` given; the table has ``pool`` rows (default T), drawn from ``seed``."""
        return cls(cls._width(m, cls.label), cls._pool(T, pool), seed=check_int("seed", seed, low=0))

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
    label = "stochastic one-hot"
    color = "C0"
    marker = "o"
    one_hot = True
    stochastic = True

    def __init__(self, max_len: int):
        self.max_len = check_int("max_len", max_len, low=1)
        self.m = self.max_len

    @classmethod
    def for_task(cls, T, *, m=None, pool=None, seed=0):
        """A pool of N = ``pool`` slots (default 2T), at least T; m = N.

        >>> StochasticOneHotPE.for_task(10).m
        20
        """
        return cls(max_len=cls._pool(T, pool, default=2 * check_int("T", T, low=1)))

    def _sample(self, batch, T, generator, device):
        return PEBatch(m=self.m, slots=random_injection(batch, T, self.max_len, generator, device))


class StochasticRandomPE(PositionalEncoding):
    """Stochastic near-orthogonal PE: fresh random vectors in R^m for every sequence.

    Any length works (``max_len=None``); the cost is cross-talk of size about
    sqrt(q/m) between positions, so m must grow like q log T.
    """

    name = "stochastic_random"
    label = "stochastic random vectors"
    color = "C2"
    marker = "D"
    stochastic = True
    rotation_invariant = True

    @classmethod
    def for_task(cls, T, *, m=None, pool=None, seed=0):
        """``m`` given (fresh uniform unit vectors for any length: there is no pool, ``pool`` is ignored)."""
        check_int("T", T, low=1)
        return cls(cls._width(m, cls.label), kind="sphere")

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
    label = "stochastic codebook"
    color = "C4"
    marker = "v"
    stochastic = True

    @classmethod
    def for_task(cls, T, *, m=None, pool=None, seed=0):
        """``m`` given; ``pool`` unit vectors (default 2 max(m, T)), at least T, drawn from ``seed``.

        >>> StochasticCodebookPE.for_task(20, m=32).max_len
        64
        """
        m = cls._width(m, cls.label)
        return cls(
            m,
            cls._pool(T, pool, default=2 * max(m, check_int("T", T, low=1))),
            kind="sphere",
            seed=check_int("seed", seed, low=0),
        )

    def _sample(self, batch, T, generator, device):
        slots = random_injection(batch, T, self.max_len, generator, device)
        return PEBatch(m=self.m, slots=slots, table=self.table_on(device))


_REGISTRY = {
    cls.name: cls for cls in (OneHotPE, NearOrthogonalPE, StochasticOneHotPE, StochasticRandomPE, StochasticCodebookPE)
}

#: The one vocabulary of PE kinds (each class's ``name``, what :func:`make_pe` and specs use), and views
#: of each class's ``label`` and ``color`` by kind (read from the classes, never written twice).
PE_KINDS = tuple(_REGISTRY)
PE_LABELS = {k: cls.label for k, cls in _REGISTRY.items()}
PE_COLORS = {k: cls.color for k, cls in _REGISTRY.items()}


def pe_class(kind: str) -> type[PositionalEncoding]:
    """The class of PE kind ``kind`` (one of :data:`PE_KINDS`): its ``label``, ``color`` and ``for_task``."""
    return _REGISTRY[check_choice("kind", kind, _REGISTRY)]


def pe_for_task(kind: str, T: int, *, m: int | None = None, pool: int | None = None, seed: int = 0):
    """A PE of kind ``kind`` sized for length ``T`` by its class's one rule (:meth:`PositionalEncoding.for_task`).

    >>> pe_for_task("stochastic_onehot", 10).m, pe_for_task("near_orthogonal", 10, m=16).m
    (20, 16)
    >>> pe_for_task("stochastic_random", 10)
    Traceback (most recent call last):
    ValueError: m must be given for a stochastic random vectors PE (its width is free), got m=None
    """
    return pe_class(kind).for_task(T, m=m, pool=pool, seed=seed)


def make_pe(name: str, **kwargs) -> PositionalEncoding:
    """Build a PE by name: ``onehot``, ``near_orthogonal``, ``stochastic_onehot``,
    ``stochastic_random`` or ``stochastic_codebook``.

    >>> make_pe("stochastic_onehot", max_len=400).m
    400
    """
    check_choice("name", name, _REGISTRY)
    return _REGISTRY[name](**kwargs)
