"""Chapter 4 figures and panel: stochastic positional encodings and the selection margin.

:func:`score_histogram` samples sequences from one of the three candidate samplers
and draws the scores s_i = <p_i, sum_{j in y} p_j> of the selected and the unselected
positions (the attention logits of the ground-truth direction). It is the static
figure the book shows and the draw function of :func:`positional_widget`, whose controls
redraw that figure in place when m, T, q or the sampler change. The other helpers draw the
chapter's fixed figures from data computed by :mod:`sts_lib.chapters.ch4_positional` (each
returns a bare Figure, never pyplot's). The committed ``width-law`` experiment's tables and words are
:mod:`sts_lib.chapters.ch4_width_law`'s.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from .._validate import check_choice, check_int, check_T_q
from ..device import make_generator
from ..history import HeldOut
from ..positional import pe_class
from ..presentation.layout import colorbar, drawing, legend, new_figure, palette, stacked, wrap
from ..probes import score_margin
from ..theory import coherence_reference, loss_on_ray, max_unselected_score
from .ch4_positional import SAMPLERS, fit_through_origin, query_scores
from .panel import Choice, FigurePanel, Ints

DEFAULTS = {"m": 64, "T": 64, "q": 3, "sampler": "stochastic_random"}


@drawing
def score_histogram(
    fig: Figure | None = None,
    *,
    m: int = 64,
    T: int = 64,
    q: int = 3,
    sampler: str = "stochastic_random",
    n: int | None = None,
    seed: int = 0,
) -> Figure:
    """Histogram of the selected and unselected scores <p_i, sum_y p_j> over ``n`` sequences, drawn
    into ``fig`` (cleared) or a new Figure: the draw function of :func:`positional_widget`.

    ``n`` defaults to about 20 000 scores in all. The title reports the fraction of
    sequences whose margin (min selected minus max unselected) is positive.
    """
    T, q = check_T_q(T, q)
    if q >= T:
        raise ValueError(f"q must be < T, got q={q}, T={T}")
    n = max(20, 20000 // T) if n is None else check_int("n", n, low=1)
    kind = pe_class(check_choice("sampler", sampler, SAMPLERS))
    if kind.one_hot and m < T:  # the slider's m is a one-hot pool's size N
        raise ValueError(f"the one-hot pool needs N = m >= T, got m={m}, T={T}")
    pe = kind.for_task(T, m=m, pool=m if kind.one_hot else None)
    s, mask = query_scores(pe, T, q, n=n, generator=make_generator(seed))
    sel, unsel = s[mask == 1], s[mask == 0]
    margin = score_margin(s, mask)
    fig, ax = new_figure(height=4.2, fig=fig)  # drawn for the book's column (and a panel frame)
    lo, hi = float(s.min()) - 0.05, float(s.max()) + 0.05
    bins = np.linspace(lo, hi, 60)
    ax.hist(unsel.numpy(), bins=bins, density=True, alpha=0.6, label=f"unselected ({T - q} per sequence)")
    ax.hist(sel.numpy(), bins=bins, density=True, alpha=0.6, hatch="//", label=f"selected ({q} per sequence)")
    if not kind.one_hot:
        ax.axvline(
            max_unselected_score(T, q, m),
            c="C0",
            ls=":",
            lw=1,
            label=r"typical largest unselected: $\sqrt{q/m}\,\sqrt{2\log(T-q)}$",
        )
    ax.set(
        xlabel=r"score $\langle p_i,\sum_{j\in y}p_j\rangle$",
        ylabel="density",
        title=f"{kind.label}: m={pe.m}, T={T}, q={q}\n"
        f"margin > 0 in {float((margin > 0).double().mean()):.1%} of {n} sequences",
    )
    # The legend goes below the axes: inside, it covered the peak of the unselected scores.
    legend(ax, place="beside", loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2, frameon=False)
    return fig


def positional_widget(**params) -> FigurePanel:
    """Controls for m, T, q and the sampler over :func:`score_histogram`, which redraws its figure in place.

    ``params`` set the controls' starting values (default :data:`DEFAULTS`); a setting a sampler
    rejects (a one-hot pool smaller than T) is reported under the controls.
    """
    init = {**DEFAULTS, **params}
    controls = {
        "m": Choice((8, 16, 32, 64, 128, 256, 512), init["m"], slider=True),
        "T": Choice((16, 32, 64, 128, 256), init["T"], slider=True),
        "q": Ints(1, 8, init["q"]),
        "sampler": Choice(tuple((pe_class(k).label, k) for k in SAMPLERS), init["sampler"]),
    }
    return FigurePanel(
        score_histogram,
        controls,
        note="Change a control: fresh sequences are drawn and the histogram is redrawn here.",
        alt="Histograms of the attention scores of selected and of unselected positions under the "
        "chosen positional-encoding sampler, with the gap between the two groups marked.",
    )


# -- the chapter's fixed figures ---------------------------------------------------------
@drawing
def plot_pe_samples(samplers: dict, T: int, *, seed: int = 0) -> Figure:
    """For each sampler (title -> PE): the PEs of two sequences (rows = positions) and the Gram matrix <p_i, p_j> of
    the first. Fresh draws per sequence are visible as different rows. In the book's column and in print the samplers
    stand side by side, one a column (rows: sequence 1, sequence 2, Gram), so they can be compared; where heat maps
    are stacked (a phone) each sampler's three panels come together, one sampler after another."""
    T = check_int("T", T, low=2)
    g = make_generator(seed)
    n = len(samplers)
    alone = stacked(n, maps=True)
    if alone:  # one sampler a row, stacked in reading order: each sampler's panels together
        fig, axes = new_figure(n, 3, height=2.4 * n + 0.6, squeeze=False, maps=True)
    else:  # one sampler a column
        fig, grid = new_figure(3, n, height=2.3 * 3 + 0.6, squeeze=False, maps=True)
        axes = grid.T
    for j, (name, pe) in enumerate(samplers.items()):
        P = pe.sample(2, T, generator=g).to_dense()
        lim = float(P.abs().max())
        head = f"{name}:\n" if alone else f"{wrap(name, 2)}\n\n"
        for i in range(2):
            axes[j][i].imshow(
                P[i].numpy(), cmap=palette().diverging, vmin=-lim, vmax=lim, aspect="auto", interpolation="nearest"
            )
            axes[j][i].set(
                title=(head if i == 0 else "") + f"sequence {i + 1}",
                ylabel="position i" if j == 0 or alone else "",
                xlabel="coordinate",
            )
        for ax in axes[j]:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=4))
            ax.yaxis.set_major_locator(MaxNLocator(integer=True, nbins=4))
        G = (P[0] @ P[0].T).numpy()
        im = axes[j][2].imshow(G, cmap=palette().diverging, vmin=-1, vmax=1, interpolation="nearest")
        axes[j][2].set(title=r"Gram $\langle p_i,p_j\rangle$, seq. 1", xlabel="j", ylabel="i")
    colorbar(fig, im, ax=axes[-1][2] if alone else list(axes[:, 2]), shrink=0.8)
    return fig


@drawing
def plot_coherence(ms, measured: dict) -> Figure:
    """Measured max |<p_i, p_j>| against m (one curve per T) with sqrt(2 log T / m) and
    sqrt(2 log(T(T-1)) / m)."""
    ms = np.asarray(ms, dtype=float)
    fig, ax = new_figure(height=3.6, width=5.8)
    for k, (T, vals) in enumerate(measured.items()):
        ref = coherence_reference(T, ms)
        ax.loglog(ms, vals, "o-", c=f"C{k}", label=f"T={T} measured")
        ax.loglog(ms, ref["paper_scale"], c=f"C{k}", ls=":", lw=1)
        ax.loglog(ms, ref["union_bound"], c=f"C{k}", ls="--", lw=1)
    ax.plot([], [], ":", c=palette().ink, lw=1, label=r"$\sqrt{2\log T/m}$")
    ax.plot([], [], "--", c=palette().ink, lw=1, label=r"$\sqrt{2\log(T(T-1))/m}$")
    ax.set(
        xlabel="PE dimension m",
        ylabel=r"max$_{i\neq j}|\langle p_i,p_j\rangle|$",
        title="coherence of fresh random unit vectors",
    )
    legend(ax, place="beside", ncols=2)  # under the figure on a phone, off the points
    return fig


@drawing
def plot_margin_sweep(ms, curves: dict, rows: list[dict], *, prob: float = 0.95) -> Figure:
    """Top: P(margin > 0) against m for each (T, q). Bottom: the smallest m reaching ``prob`` against q log T
    (filled), the line through the origin fitted to it, and the heuristic's prediction scaled by its own fit
    (hollow, when ``rows`` carry ``heuristic``). One code in both panels: the colour is q, the marker is T."""
    qs = sorted({q for _, q in curves} | {r["q"] for r in rows})
    Ts = sorted({T for T, _ in curves} | {r["T"] for r in rows})
    color = {q: f"C{k}" for k, q in enumerate(qs)}
    marker = dict(zip(Ts, "osD^v<>"))
    fig, (a1, a2) = new_figure(2, 1, height=6.4)
    for (T, q), rates in curves.items():
        a1.semilogx(
            ms, rates, marker=marker[T], ms=4, c=color[q], ls="-" if T == Ts[0] else "--", label=f"T={T}, q={q}"
        )
    a1.axhline(prob, c=palette().guide, ls=":", lw=1)
    a1.set(xlabel="PE dimension m", ylabel="P(margin > 0)", title="selection succeeds once m is large enough")
    legend(a1, ncols=2, loc="lower right")
    x = np.array([r["q_log_T"] for r in rows])
    y = np.array([r["m_star"] for r in rows])
    fit = fit_through_origin(x, y)
    for r in rows:
        a2.scatter(r["q_log_T"], r["m_star"], c=color[r["q"]], marker=marker[r["T"]], zorder=3)
    grid = np.linspace(0, x.max() * 1.05, 50)
    a2.plot(
        grid,
        fit["slope"] * grid,
        "--",
        c=palette().ink,
        lw=1,
        label=f"{fit['slope']:.2f} q log T ($R^2$ {fit['r2']:.2f})",
    )
    if all("heuristic" in r for r in rows):
        h = np.array([r["heuristic"] for r in rows])
        hfit = fit_through_origin(h, y)
        a2.scatter(
            x,
            hfit["slope"] * h,
            facecolors="none",
            edgecolors=palette().ink,
            s=45,
            zorder=2,
            label=f"{hfit['slope']:.2f} x heuristic ($R^2$ {hfit['r2']:.2f})",
        )
    handles = [Line2D([], [], c=color[q], lw=0, marker="o", label=f"q={q}") for q in qs]
    handles += [Line2D([], [], c=palette().ink, lw=0, marker=marker[T], label=f"T={T}") for T in Ts]
    # beside: inside at the upper left in the book's column; under the figure on a phone, where it covered 8 of the 9
    # points
    legend(a2, handles=a2.get_legend_handles_labels()[0] + handles, place="beside", ncols=2, loc="upper left")
    a2.set(
        xlabel=r"$q\log T$",
        ylabel=f"smallest m with\nP(margin > 0) >= {prob:g}",
        title="the width needed grows with q log T, but not in proportion",
    )
    return fig


@drawing
def plot_ray_floors(cs, curves: dict, *, d: int, T: int, q: int) -> Figure:
    """Loss along W = c W* for random PEs of several widths (label -> losses over ``cs``),
    against the exact one-hot curve, which has no floor."""
    cs = np.asarray(cs, dtype=float)
    fig, ax = new_figure(height=4.1, width=5.8)
    ax.semilogy(cs, loss_on_ray(cs, d, T, q), "-", c=palette().ink, label="one-hot (fixed or pool): closed form")
    for k, (label, losses) in enumerate(curves.items()):
        losses = np.asarray(losses)
        ax.semilogy(cs, losses, c=f"C{k}", label=label)
        i = int(losses.argmin())
        ax.scatter([cs[i]], [losses[i]], c=f"C{k}", zorder=5)
    ax.set(
        xlabel=r"scale $c$ of $W=cW^\star$",
        ylabel="loss (measured)",
        ylim=(1e-4, 3),
        title=f"random PEs have a loss floor at finite c\n(d={d}, T={T}, q={q})",
    )
    # Below the axes: inside them the legend covered the curves' floors (and, on a phone, stuck out of the axes).
    legend(ax, place="beside", loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2, frameon=False)
    return fig


@drawing
def plot_sampler_runs(hists: dict, *, T_test: int) -> Figure:
    """Held-out loss, 1/loss and the loss at length ``T_test`` for each trained sampler (name -> History), drawn
    for the book's column: two panels a row, the legend in the fourth cell."""
    fig, ((a1, a2), (a3, a4)) = new_figure(2, 2, height=5.6, panels=3 if stacked(2) else 4)
    for k, (name, h) in enumerate(hists.items()):
        style = {"c": f"C{k}", "ls": ("-", "--", "-.", ":")[k % 4], "label": name}
        a1.semilogy(h["step"], h["loss"], **style)
        a2.plot(h["step"], h["inv_loss"], **style)
        a3.semilogy(h["step"], h[HeldOut.length(T_test).key], **style)
    a1.set(xlabel="step", ylabel="loss", title="training length (held-out)")
    a2.set(xlabel="step", title="1 / loss")
    a3.set(xlabel="step", ylabel="loss", title=f"length generalisation: T = {T_test}")
    if a4 is None:  # stacked: the legend goes under the three panels
        legend(fig, *a1.get_legend_handles_labels(), place="below", title="sampler")
    else:
        a4.axis("off")
        a4.legend(*a1.get_legend_handles_labels(), loc="center", title="sampler")
    return fig
