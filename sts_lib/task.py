"""The q-sparse token selection task STS_q: sampling batches and the loss.

An instance is T Gaussian tokens x_i ~ N(0, I_d) and a uniformly random q-subset
y of [T]; the target is the mean of the selected tokens. The subset reaches the
transformer through the query token z_query = [x_query; sum_{j in y} p_j] and the
fully-connected net through the indicator 1_y. ``T`` and ``q`` can be overridden
at sampling time, which is how length and q generalisation are evaluated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ._validate import check_choice, check_generator, check_int, check_T_q
from .positional import OneHotPE, PEBatch, PositionalEncoding


def sample_subsets(
    batch: int, T: int, q: int, *, generator: torch.Generator | None = None, device: str | torch.device = "cpu"
) -> torch.Tensor:
    """Uniform q-subsets of {0..T-1}: ``(batch, q)`` long, sorted within each row.

    >>> y = sample_subsets(4, 10, 3, generator=torch.Generator().manual_seed(0))
    >>> y.shape, bool((y[:, 1:] > y[:, :-1]).all())
    (torch.Size([4, 3]), True)
    """
    batch = check_int("batch", batch, low=1)
    T, q = check_T_q(T, q)
    device = torch.device(device)
    check_generator(generator, device)
    # The top-q of T iid uniforms is a uniform q-subset (exchangeability).
    keys = torch.rand(batch, T, generator=generator, device=device)
    return keys.topk(q, dim=1).indices.sort(dim=1).values


@dataclass(frozen=True)
class OneHotQuery:
    """How a batch's query PE was built from one-hot vectors: ``pe_query = scale * sum_j e_{slots[:, j]}``.

    :meth:`STSTask.sample` records it for one-hot PEs so that attention can add q columns
    of W instead of multiplying by the dense z_query (the fast path of
    :meth:`~sts_lib.models.OneLayerTransformer.forward`).
    """

    slots: torch.Tensor  # (B, q) long: the PE slots of the selected positions
    scale: float  # 1 for query_pe='sum', 1/q for 'mean'
    x_is_zero: bool  # x_query == 0 (Theorem 1's setting): W z_q has no token part

    def rows(self, idx) -> OneHotQuery:
        return OneHotQuery(self.slots[idx], self.scale, self.x_is_zero)

    def to(self, device) -> OneHotQuery:
        return OneHotQuery(self.slots.to(device), self.scale, self.x_is_zero)


@dataclass
class Batch:
    """One sampled batch. Shapes use B = batch, T = length, d = token dim, m = PE dim.

    ``onehot_query`` is set by :meth:`STSTask.sample` when the PE is one-hot and describes
    ``pe_query`` and ``x_query`` as they were sampled. It is not an ``__init__`` argument, so
    ``dataclasses.replace(batch, pe_query=...)`` builds a batch without it (the models then
    use the dense formula). The tensors of a sampled batch are read-only by convention: to
    edit ``pe_query`` or ``x_query`` in place, set ``batch.onehot_query = None`` first.
    """

    X: torch.Tensor  # (B, T, d) tokens
    pe: PEBatch  # the positions' encodings (sparse when possible)
    y: torch.Tensor  # (B, q) long, the selected positions (sorted)
    mask: torch.Tensor  # (B, T) float, 1 on the selected positions
    x_query: torch.Tensor  # (B, d) token part of the query
    pe_query: torch.Tensor  # (B, m) PE part of the query: sum (or mean) of the selected PEs
    target: torch.Tensor  # (B, d) mean of the selected tokens
    onehot_query: OneHotQuery | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """``(B, T, d, m)``."""
        B, T, d = self.X.shape
        return B, T, d, self.pe.m

    @property
    def q(self) -> int:
        return self.y.shape[1]

    @property
    def Z(self) -> torch.Tensor:
        """Dense token matrix, one row per position: ``(B, T, d+m)`` (z_i = [x_i; p_i])."""
        return torch.cat([self.X, self.pe.to_dense()], dim=-1)

    @property
    def z_query(self) -> torch.Tensor:
        """Dense query token ``(B, d+m)``."""
        return torch.cat([self.x_query, self.pe_query], dim=-1)

    @property
    def fcn_input(self) -> torch.Tensor:
        """The fully-connected net's input [vec X; 1_y]: ``(B, T*d + T)``."""
        B, T, d = self.X.shape
        return torch.cat([self.X.reshape(B, T * d), self.mask], dim=-1)

    def to(self, device) -> Batch:
        """The batch on ``device``; a batch already there is returned as it is (no new object)."""
        if self.X.device == torch.device(device):
            return self
        pe = PEBatch(
            m=self.pe.m,
            **{
                k: (None if v is None else v.to(device))
                for k, v in (("slots", self.pe.slots), ("table", self.pe.table), ("dense", self.pe.dense))
            },
        )
        out = Batch(
            self.X.to(device),
            pe,
            self.y.to(device),
            self.mask.to(device),
            self.x_query.to(device),
            self.pe_query.to(device),
            self.target.to(device),
        )
        out.onehot_query = None if self.onehot_query is None else self.onehot_query.to(device)
        return out

    def __getitem__(self, idx) -> Batch:
        """Rows ``idx`` of the batch (a slice or index tensor), e.g. a minibatch of a fixed dataset."""

        def rows(t):
            return None if t is None else t[idx]

        pe = PEBatch(m=self.pe.m, slots=rows(self.pe.slots), table=self.pe.table, dense=rows(self.pe.dense))
        out = Batch(
            self.X[idx], pe, self.y[idx], self.mask[idx], self.x_query[idx], self.pe_query[idx], self.target[idx]
        )
        out.onehot_query = None if self.onehot_query is None else self.onehot_query.rows(idx)
        return out


@dataclass
class STSTask:
    """The distribution D_{T,q} with a choice of PE and query encoding.

    >>> task = STSTask(d=4, T=10, q=3, pe=OneHotPE(max_len=10))
    >>> b = task.sample(8, generator=torch.Generator().manual_seed(0))
    >>> b.X.shape, b.target.shape, b.pe_query.sum(-1).tolist()[:2]
    (torch.Size([8, 10, 4]), torch.Size([8, 4]), [3.0, 3.0])
    """

    d: int = 5  # token dimension
    T: int = 20  # training sequence length
    q: int = 3  # subset size
    pe: PositionalEncoding | None = None  # positional encoding; None = one-hot with max_len = T
    x_query: str = "zero"  # 'zero' (Theorem 1's x_query = 0) or 'gaussian'
    query_pe: str = "sum"  # PE part of the query: 'sum' or 'mean' of the selected PEs
    dtype: torch.dtype = field(default=torch.float32, repr=False)  # float dtype of the tensors

    def __post_init__(self):
        self.d = check_int("d", self.d, low=1)
        self.T, self.q = check_T_q(self.T, self.q)
        if self.pe is None:
            self.pe = OneHotPE(max_len=self.T)
        if not isinstance(self.pe, PositionalEncoding):
            raise TypeError(f"pe must be a PositionalEncoding (see sts_lib.make_pe), got {type(self.pe).__name__}")
        if self.pe.max_len is not None and self.T > self.pe.max_len:
            raise ValueError(f"T={self.T} must be <= the PE's max_len={self.pe.max_len}")
        check_choice("x_query", self.x_query, ("zero", "gaussian"))
        check_choice("query_pe", self.query_pe, ("sum", "mean"))

    @property
    def m(self) -> int:
        """PE dimension; the transformer's embedding width is d + m."""
        return self.pe.m

    def sample(
        self,
        batch: int,
        *,
        T: int | None = None,
        q: int | None = None,
        generator: torch.Generator | None = None,
        device: str | torch.device = "cpu",
    ) -> Batch:
        """Draw ``batch`` instances, at length ``T`` and subset size ``q`` (default: the task's)."""
        T, q = check_T_q(self.T if T is None else T, self.q if q is None else q)
        batch = check_int("batch", batch, low=1)
        device = torch.device(device)
        check_generator(generator, device)
        pe = self.pe.sample(batch, T, generator=generator, device=device)
        X = torch.randn(batch, T, self.d, generator=generator, device=device, dtype=self.dtype)
        if device.type == "cpu":
            # Stored coordinate-major (same values, X.transpose(1, 2) contiguous): the models'
            # per-token inner products and pools then run over contiguous rows of length T.
            # Off the CPU those are single fused ops that need no layout: the copy would be waste.
            X = X.transpose(1, 2).contiguous().transpose(1, 2)
        y = sample_subsets(batch, T, q, generator=generator, device=device)
        mask = torch.zeros(batch, T, device=device, dtype=self.dtype).scatter_(1, y, 1.0)
        target = X.gather(1, y.unsqueeze(-1).expand(-1, -1, self.d)).mean(1)
        if pe.one_hot:
            # Slots are distinct within a row, so pool(mask) is 1 at the q selected slots:
            # write those q entries instead of scattering all T.
            q_slots = pe.slots.gather(1, y)
            pe_query = mask.new_zeros(batch, pe.m).scatter_(1, q_slots, 1.0)
        else:
            pe_query = pe.pool(mask)
        if self.query_pe == "mean":
            pe_query = pe_query / q
        if self.x_query == "zero":
            x_query = X.new_zeros(batch, self.d)
        else:
            x_query = torch.randn(batch, self.d, generator=generator, device=device, dtype=self.dtype)
        out = Batch(X, pe, y, mask, x_query, pe_query, target)
        if pe.one_hot:
            out.onehot_query = OneHotQuery(q_slots, 1.0 / q if self.query_pe == "mean" else 1.0, self.x_query == "zero")
        return out

    def spec(self) -> dict:
        """A JSON-able description (recorded with every experiment)."""
        return {
            "d": self.d,
            "T": self.T,
            "q": self.q,
            "pe": self.pe.spec(),
            "x_query": self.x_query,
            "query_pe": self.query_pe,
        }


def sts_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Squared error summed over the d output coordinates, averaged over the batch.

    This is the normalisation of :func:`sts_lib.theory.loss_on_ray` (no factor 1/2);
    the zero predictor scores d/q. pred, target: ``(..., B, d)`` -> scalar or ``(...)``.
    """
    return (pred - target).pow(2).sum(-1).mean(-1)
