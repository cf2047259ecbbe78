"""Fast exact sampling of the stochastic one-hot PE slots: a uniform random injection of T positions into N slots.

:class:`~sts_lib.positional.StochasticOneHotPE` and
:class:`~sts_lib.positional.StochasticCodebookPE` draw, for every sequence, ``T`` distinct
slots out of a pool of ``N``. ``torch.randperm`` per row or ``topk`` of uniforms are the
obvious ways; both cost more than the rest of a training step at ``T = 200``. The sampler
below sorts integer keys instead, exactly uniform on the CPU and uniform up to a 1e-11 tie
rule off it (tests/unit/test_fast.py checks both laws with a chi-square test, also when the CPU's
tie redraw runs on almost every row). It imports nothing from the rest of ``sts_lib``.
"""

from __future__ import annotations

import numpy as np
import torch


def key_width(T: int, N: int, bits: int) -> tuple[torch.dtype, int]:
    """Integer type and width (sign bit excluded) of the CPU sort keys of :func:`random_injection`.

    P(tie among the first T + 1 keys) is about (T + 1) N / 2^(random bits + 1): 32-bit keys
    while that stays below 5%, else 64-bit ones.

    >>> key_width(200, 400, 9), key_width(4000, 8000, 13)
    ((torch.int32, 31), (torch.int64, 63))
    """
    return (torch.int32, 31) if (T + 1) * N < 0.1 * 2 ** (31 - bits) else (torch.int64, 63)


ALGORITHMS = ("redraw", "sort63")


def random_injection(
    batch: int, T: int, N: int, generator, device, *, random_bits: int | None = None, algorithm: str | None = None
) -> torch.Tensor:
    """Per row, ``T`` distinct slots out of ``N``, a uniform random injection: (batch, T) long.

    Each slot n gets a random integer key with n in its low bits, so the keys of a row are
    distinct and sorting them (values only, no index tracking) orders the slots by their
    random high bits: a uniformly random permutation unless two high parts tie. Two ways to
    deal with ties, chosen by ``algorithm`` (None: ``'redraw'`` on the CPU, ``'sort63'`` off it):

    * ``'redraw'`` (CPU only): a row whose first T + 1 keys contain a tie is drawn again,
      which keeps the law exactly uniform (the no-tie event is symmetric in the slots); that
      allows 32-bit keys when ties are rare (< 5% of rows), which NumPy sorts about 20 times
      faster than ``torch.topk`` sorts floats. ``random_bits`` overrides the number of random
      high bits of a key chosen by :func:`key_width`; tests set it small to make the redraw
      run on almost every row.
    * ``'sort63'`` (any device): 63-bit keys sorted by torch on ``device``, and a tie
      (probability below 1e-11 per row) is broken by slot index, since checking for one would
      cost a host sync on a GPU. Selectable on the CPU so that its law can be tested there.

    The two give different slots for the same generator state.

    >>> s = random_injection(3, 4, 10, torch.Generator().manual_seed(0), torch.device("cpu"))
    >>> s.shape, all(len(set(r)) == 4 for r in s.tolist())
    (torch.Size([3, 4]), True)
    >>> s = random_injection(3, 4, 10, torch.Generator().manual_seed(0), torch.device("cpu"), algorithm="sort63")
    >>> s.shape, all(len(set(r)) == 4 for r in s.tolist())
    (torch.Size([3, 4]), True)
    """
    device = torch.device(device)
    if algorithm is None:
        algorithm = "redraw" if device.type == "cpu" else "sort63"
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be None or one of {ALGORITHMS}, got {algorithm!r}")
    if algorithm == "redraw" and device.type != "cpu":
        raise ValueError(
            f"algorithm='redraw' runs on the CPU only (its tie check reads the keys on the host); "
            f"got device {device}: use 'sort63' or None"
        )
    if algorithm == "sort63" and random_bits is not None:
        raise ValueError("random_bits applies to algorithm='redraw' only ('sort63' keys always have 63 bits)")
    bits = max(1, (N - 1).bit_length())
    if algorithm == "sort63":
        keys = torch.randint(0, 2 ** (63 - bits), (batch, N), generator=generator, device=device)
        keys = keys.bitwise_left_shift_(bits).bitwise_or_(torch.arange(N, device=device))
        return keys.sort(dim=1).values[:, :T].bitwise_and(2**bits - 1)
    if random_bits is None:
        dtype, width = key_width(T, N, bits)
    else:
        width = bits + random_bits
        dtype = torch.int32 if width <= 31 else torch.int64
    index = torch.arange(N, dtype=dtype)
    out = np.empty((batch, min(T + 1, N)), dtype=np.int32 if dtype == torch.int32 else np.int64)
    todo = np.arange(batch)
    while todo.size:
        keys = torch.randint(0, 2 ** (width - bits), (todo.size, N), generator=generator, dtype=dtype)
        keys = keys.bitwise_left_shift_(bits).bitwise_or_(index).numpy()
        keys.sort(axis=1)
        first = keys[:, : T + 1]
        high = first >> bits
        tie = (high[:, 1:] == high[:, :-1]).any(axis=1)
        out[todo[~tie]] = first[~tie]
        todo = todo[tie]
    return torch.from_numpy(out[:, :T] & (2**bits - 1)).long()


__all__ = ["ALGORITHMS", "key_width", "random_injection"]
