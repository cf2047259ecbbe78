"""Scan and Snap (Tian et al. 2023) in miniature: Syn-Small-like data and the Y/Z-reparameterised 1-layer transformer.

Tian et al. study a 1-layer transformer through two pairwise token-relation
matrices: Z holds the attention logit of every (query, context token) pair and Y
the decoder logit of every (next token, context token) pair. With no positional
encoding the model sees a sequence only through its *bag of tokens*, so a batch is
stored as token counts ``(B, M)``. This is a simplified re-implementation, not the
paper's code: one query token shared by both classes (so Z is one row ``z``),
orthonormal embeddings (so the attention output is the attention mass per
vocabulary entry), l2 normalisation of that output, cross-entropy on the class,
zero initialisation and plain SGD with separate learning rates eta_Y and eta_Z.
Everything else (sizes, probabilities, rates) is our choice and is recorded in
:class:`ScanSnapConfig`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch import nn

from .._validate import check_float, check_generator, check_int
from ..device import get_device, make_generator, to_numpy
from ..fits import linear_fit
from ..history import capped_steps


def syn_small_probs(
    n_common: int = 10, n_distinct: int = 10, common_mass: float = 0.8, power: float = 1.0
) -> torch.Tensor:
    """Conditional token probabilities P(l | class) of a 2-class Syn-Small-like vocabulary: ``(2, M)``.

    Tokens ``0..n_common-1`` are common (uniform, total mass ``common_mass`` in both
    classes); the next ``n_distinct`` tokens occur only in class 0 and the last
    ``n_distinct`` only in class 1, with probabilities increasing as ``k**power``,
    k = 1..n_distinct. ``M = n_common + 2 n_distinct`` (30 by default).

    >>> P = syn_small_probs()
    >>> P.shape, [round(float(s), 6) for s in P.sum(1)]
    (torch.Size([2, 30]), [1.0, 1.0])
    >>> bool((P[0, 11:20] > P[0, 10:19]).all()), float(P[0, 20:].sum()), float(P[1, 10:20].sum())
    (True, 0.0, 0.0)
    """
    n_common = check_int("n_common", n_common, low=0)
    n_distinct = check_int("n_distinct", n_distinct, low=1)
    common_mass = check_float("common_mass", common_mass, low=0.0, high=1.0)
    if common_mass == 1.0 or (n_common == 0 and common_mass > 0):
        raise ValueError("common_mass must be < 1 (and 0 when n_common = 0): the classes need distinct tokens")
    power = check_float("power", power, low=0.0)
    M = n_common + 2 * n_distinct
    P = torch.zeros(2, M, dtype=torch.float64)
    if n_common:
        P[:, :n_common] = common_mass / n_common
    w = torch.arange(1, n_distinct + 1, dtype=torch.float64) ** power
    w = (1.0 - common_mass) * w / w.sum()
    P[0, n_common : n_common + n_distinct] = w
    P[1, n_common + n_distinct :] = w
    return P


def token_groups(n_common: int = 10, n_distinct: int = 10) -> dict[str, torch.Tensor]:
    """Index tensors of the common tokens and of each class's distinct tokens."""
    return {
        "common": torch.arange(n_common),
        "distinct_0": torch.arange(n_common, n_common + n_distinct),
        "distinct_1": torch.arange(n_common + n_distinct, n_common + 2 * n_distinct),
    }


def sample_syn_small(
    P: torch.Tensor, batch: int, T: int, *, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch`` sequences: a uniform class label ``(batch,)`` and T i.i.d. tokens from P(. | label) ``(batch, T)``.

    >>> tok, lab = sample_syn_small(syn_small_probs(), 4, 16, generator=torch.Generator().manual_seed(0))
    >>> tok.shape, lab.shape
    (torch.Size([4, 16]), torch.Size([4]))
    """
    batch, T = check_int("batch", batch, low=1), check_int("T", T, low=1)
    check_generator(generator, P.device)
    labels = torch.randint(0, P.shape[0], (batch,), generator=generator)
    tokens = torch.multinomial(P[labels].float(), T, replacement=True, generator=generator)
    return tokens, labels


def token_counts(tokens: torch.Tensor, M: int) -> torch.Tensor:
    """Bag of tokens: ``(B, T)`` ids -> ``(B, M)`` counts. A model without PEs sees nothing more.

    >>> token_counts(torch.tensor([[0, 2, 2]]), 4).tolist()
    [[1.0, 0.0, 2.0, 0.0]]
    """
    return torch.zeros(tokens.shape[0], M).scatter_add_(1, tokens, torch.ones(tokens.shape, dtype=torch.float32))


def attention_entropy(p: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Shannon entropy (nats) of non-negative weights along ``dim``, renormalised first; 0 log 0 = 0.

    >>> float(attention_entropy(torch.ones(4))) == float(torch.log(torch.tensor(4.0)))
    True
    >>> [round(abs(h), 4) for h in attention_entropy(torch.tensor([[1.0, 0.0], [0.5, 0.5]])).tolist()]
    [0.0, 0.6931]
    """
    if not isinstance(p, torch.Tensor):
        raise TypeError(f"p must be a torch.Tensor, got {type(p).__name__}")
    if (p < 0).any():
        raise ValueError("p must be non-negative (attention weights)")
    s = p.sum(dim, keepdim=True)
    if (s <= 0).any():
        raise ValueError("each slice of p along dim must have positive total weight")
    q = p / s
    return -torch.where(q > 0, q * torch.log(q), torch.zeros_like(q)).sum(dim)


class YZModel(nn.Module):
    """Y/Z-parameterised 1-layer transformer without PEs; one query token shared by all classes.

    ``z`` ``(M,)`` are the attention logits of the context tokens (a row of Z); ``Y``
    ``(K, M)`` the decoder logits. For counts n ``(B, M)`` the attention mass on
    vocabulary entry l is ``c_l = n_l e^{z_l} / sum_l' n_l' e^{z_l'}``; the output is
    ``Y c / ||c||_2`` ``(B, K)``. Both start at zero (uniform attention, uniform prediction).
    """

    def __init__(self, M: int, K: int = 2):
        super().__init__()
        self.M, self.K = check_int("M", M, low=1), check_int("K", K, low=2)
        self.z = nn.Parameter(torch.zeros(self.M))
        self.Y = nn.Parameter(torch.zeros(self.K, self.M))

    def attention(self, counts: torch.Tensor) -> torch.Tensor:
        """Attention mass per vocabulary entry ``(B, M)`` (rows sum to 1)."""
        if counts.ndim != 2 or counts.shape[1] != self.M:
            raise ValueError(f"counts must have shape (B, M={self.M}), got {tuple(counts.shape)}")
        w = counts * torch.exp(self.z - self.z.max())  # shift: same softmax, no overflow
        return w / w.sum(-1, keepdim=True)

    def forward(self, counts: torch.Tensor) -> torch.Tensor:
        c = self.attention(counts)
        return (c / c.norm(dim=-1, keepdim=True)) @ self.Y.T

    def limit_attention(self, P: torch.Tensor) -> torch.Tensor:
        """Attention of each class in the long-sequence limit T -> infinity: ``(K, M)`` = P e^z, renormalised."""
        with torch.no_grad():
            return self.attention(P.to(self.z.dtype))


@dataclass
class ScanSnapConfig:
    """Our Syn-Small-like setting (a reconstruction; the paper's exact numbers are not all known)."""

    n_common: int = 10  # common tokens 0..9
    n_distinct: int = 10  # distinct tokens per class (10..19 and 20..29)
    common_mass: float = 0.8  # P(common token | class)
    power: float = 2.0  # distinct-token probabilities increase like k**power
    T: int = 64  # context tokens per sequence
    steps: int = 2000  # SGD steps
    batch_size: int = 128  # fresh sequences per step
    lr_Z: float = 0.5  # eta_Z, attention learning rate (small: stay near gradient flow)
    lr_Y: float = 5.0  # eta_Y, decoder learning rate (Tian et al. assume eta_Y >> eta_Z)
    n_records: int = 80  # records of z and the T -> infinity attention, log-spaced in time
    seed: int = 0  # data seed

    def __post_init__(self):
        for name in ("n_distinct", "T", "steps", "batch_size", "n_records"):
            setattr(self, name, check_int(name, getattr(self, name), low=1))
        self.steps = capped_steps(self.steps)  # a process's steps cap (sts_lib.history.set_steps_cap), if one is set
        self.seed = check_int("seed", self.seed, low=0)
        for name in ("lr_Z", "lr_Y"):
            setattr(self, name, check_float(name, getattr(self, name), low=0.0, strict_low=True))

    def probs(self) -> torch.Tensor:
        return syn_small_probs(self.n_common, self.n_distinct, self.common_mass, self.power)


@dataclass
class ScanSnapHistory:
    """Records of one run; ``attention`` is the T -> infinity attention of each class ``(S, K, M)``."""

    steps: np.ndarray = field(default_factory=lambda: np.zeros(0))
    loss: np.ndarray = field(default_factory=lambda: np.zeros(0))  # mean minibatch loss since the last record
    z: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # (S, M) attention logits
    attention: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))
    config: dict = field(default_factory=dict)

    def entropy(self, which: str = "distinct") -> np.ndarray:
        """Attention entropy (nats) per record, averaged over the classes: over each class's
        ``'distinct'`` tokens (renormalised) or over ``'all'`` tokens it can contain."""
        g = token_groups(self.config["n_common"], self.config["n_distinct"])
        A = torch.as_tensor(self.attention)
        out = []
        for k in range(A.shape[1]):
            idx = g[f"distinct_{k}"] if which == "distinct" else torch.cat([g["common"], g[f"distinct_{k}"]])
            out.append(attention_entropy(A[:, k, idx]))
        return torch.stack(out).mean(0).numpy()

    def common_mass(self) -> np.ndarray:
        """Attention mass on the common tokens (T -> infinity), averaged over classes."""
        return self.attention[:, :, : self.config["n_common"]].sum(-1).mean(-1)


def sample_stream(cfg: ScanSnapConfig, *, chunk: int = 100) -> tuple[torch.Tensor, torch.Tensor]:
    """The whole training stream as bags of tokens: counts ``(steps, B, M)`` and labels ``(steps, B)``.

    Drawn ``chunk`` steps at a time (one multinomial call each, far faster than one per
    step) from ``cfg.seed``; runs that share a seed see exactly the same data.
    """
    P, g = cfg.probs(), make_generator(cfg.seed)
    counts, labels = [], []
    for start in range(0, cfg.steps, chunk):
        n = min(chunk, cfg.steps - start) * cfg.batch_size
        tok, lab = sample_syn_small(P, n, cfg.T, generator=g)
        counts.append(token_counts(tok, P.shape[1]).view(-1, cfg.batch_size, P.shape[1]))
        labels.append(lab.view(-1, cfg.batch_size))
    return torch.cat(counts), torch.cat(labels)


def train_scan_snap(cfg: ScanSnapConfig | None = None, stream=None, *, device=None) -> tuple[YZModel, ScanSnapHistory]:
    """SGD on the cross-entropy of the class from zero initialisation; returns the model and its history.

    ``stream`` (from :func:`sample_stream`) reuses pre-drawn data; by default it is drawn here (on the
    CPU, so a seed gives the same data on every device). Training runs on ``device`` (None:
    :func:`sts_lib.get_device`); the history holds NumPy arrays.
    """
    cfg = ScanSnapConfig() if cfg is None else cfg
    P = cfg.probs()
    counts, labels = sample_stream(cfg) if stream is None else stream
    if counts.shape[0] < cfg.steps or counts.shape[2] != P.shape[1]:
        raise ValueError(
            f"stream has {counts.shape[0]} steps of width {counts.shape[2]}; "
            f"need {cfg.steps} steps of width {P.shape[1]}"
        )
    device = get_device(device)
    model = YZModel(P.shape[1], P.shape[0]).to(device)
    counts, labels, P_dev = counts.to(device), labels.to(device), P.to(device)
    opt = torch.optim.SGD([{"params": [model.Y], "lr": cfg.lr_Y}, {"params": [model.z], "lr": cfg.lr_Z}])
    steps, losses, zs, atts = [], [], [], []
    # The running loss stays on the device (float64, as a Python float sum was): one host sync per record.
    running, n = torch.zeros((), dtype=torch.float64, device=device), 0
    # Log-spaced records: the scan phase is over in tens of steps, the snap lasts the rest.
    when = set(np.unique(np.geomspace(1, cfg.steps, cfg.n_records).round().astype(int)).tolist())

    def record(step):
        steps.append(step)
        losses.append(float(running) / n if n else float(np.log(P.shape[0])))
        zs.append(to_numpy(model.z).copy())
        atts.append(to_numpy(model.limit_attention(P_dev)))

    record(0)
    for step in range(1, cfg.steps + 1):
        loss = nn.functional.cross_entropy(model(counts[step - 1]), labels[step - 1])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        running, n = running + loss.detach(), n + 1
        if step in when or step == cfg.steps:
            record(step)
            running, n = torch.zeros((), dtype=torch.float64, device=device), 0
    hist = ScanSnapHistory(np.asarray(steps), np.asarray(losses), np.stack(zs), np.stack(atts), asdict(cfg))
    return model, hist


def logit_growth(hist: ScanSnapHistory, token: int, *, tail: float = 0.5) -> dict[str, float]:
    """Fit z_token = slope * log(step) + intercept over the last ``tail`` of the run (in log-time).

    A good straight line (``r2`` near 1) is the logarithmic growth of the snap phase
    (:func:`sts_lib.fits.linear_fit`; ``r2`` is nan for a logit that does not move).
    """
    token = check_int("token", token, low=0, high=hist.z.shape[1] - 1)
    tail = check_float("tail", tail, low=0.0, high=1.0, strict_low=True)
    t = np.log(np.maximum(hist.steps, 1).astype(float))
    keep = t >= t[-1] * (1.0 - tail)
    if keep.sum() < 3:
        raise ValueError("too few records in the tail for a fit; raise tail or n_records")
    fit = linear_fit(t[keep], hist.z[keep, token])
    return {"slope": fit.slope, "intercept": fit.intercept, "r2": fit.r2}


def lr_ratio_sweep(ratios, cfg: ScanSnapConfig | None = None, *, device=None) -> dict[float, ScanSnapHistory]:
    """One run per eta_Y / eta_Z in ``ratios`` (eta_Z fixed at ``cfg.lr_Z``), all on the same data stream."""
    cfg = ScanSnapConfig() if cfg is None else cfg
    stream = sample_stream(cfg)
    out = {}
    for r in ratios:
        r = check_float("ratio", r, low=0.0, strict_low=True)
        out[r] = train_scan_snap(ScanSnapConfig(**{**asdict(cfg), "lr_Y": r * cfg.lr_Z}), stream, device=device)[1]
    return out
