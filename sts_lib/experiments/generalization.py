"""Figures 2, 4 and 5: length and q generalisation, stochastic versus fixed PE.

One set of training runs serves Figures 2 and 4 (they log the held-out loss at every
test length *and* every test q); Figure 5 is the same set trained with Adam. The model
is the theory transformer in the position-only parametrisation (paper_spec §3.2 (b):
only W_EE and V_X are trained, from zero), which is exactly what population GD does
from zero initialisation (§3.1); with minibatches the other blocks only collect noise.
The query is ``[0; sum of the selected PEs]`` (Theorem 1). Three PEs, each run over the
config's seeds:

* ``stochastic``: T random slots of a one-hot pool of N = 400 per sequence;
* ``fixed``: the one-hot PE of the same dimension 400, positions 1..T in training and
  1..T_test at test time;
* ``fixed_nearorth``: a fixed *near-orthogonal* PE (the paper's Definition 3; that it stands for the
  figures' fixed PE is our choice): N = 400 random +-1/sqrt(m) vectors in R^m, m = 400 (the
  stochastic pool's width), drawn once per seed, positions 1..T in training.

The runs, their configs and which claims decide which statement (``decides``) are here; the claims
themselves are measured by :mod:`~sts_lib.experiments.generalization_claims`.
"""

from __future__ import annotations

from ..checks import FLAT_SLOPE, SLOPE_TOL
from ..presentation import figures
from ..reading.policy import DOMINATES, LEVEL, SLIGHTLY, reading_key
from ..reading.statements import Decides
from ..theory import equal_rate_lr
from ._runs import PLAIN_GD, Context, SeedResult, for_each_seed, run_spec, seed_runs
from .comparisons import END_FRAC
from .generalization_claims import ARMS, EQRATE, Q_TESTS, Arm, above_q, length_claims, q_claims
from .record import Experiment


def _arms(optimizer: str) -> list[Arm]:
    return [a for a in ARMS if optimizer == PLAIN_GD or not a.gd_only]


def _label(arm: Arm, optimizer: str) -> str:
    return f"{arm.key}-{optimizer}"


def _scale_params(scale: str) -> dict:
    if scale == "paper":
        return {
            "T": 200,
            "N": 400,
            "T_tests": [250, 300, 350, 400],
            "q_tests": Q_TESTS,
            "adam_q_tests": [2, 4, 6, 8],
            "steps": 10000,
            "log_every": 100,
            "eval_batch": 1024,
            "lr_W": 30.0,
            "adam_lr": 3e-3,
        }
    return {
        "T": 20,
        "N": 40,
        "T_tests": [25, 30, 35, 40],
        "q_tests": Q_TESTS,
        "adam_q_tests": [2, 4, 6, 8],
        "steps": 1500,
        "log_every": 25,
        "eval_batch": 1024,
        "lr_W": 10.0,
        "adam_lr": 1e-2,
    }


def _specs(scale: str, optimizer: str) -> list[dict]:
    p = _scale_params(scale)
    q_tests = p["q_tests"] if optimizer == PLAIN_GD else p["adam_q_tests"]
    out = []
    for arm in _arms(optimizer):
        if optimizer == PLAIN_GD:
            lr_W = equal_rate_lr(p["lr_W"], p["T"], p["N"]) if arm.key == EQRATE else p["lr_W"]
            opt = {"optimizer": PLAIN_GD, "lr": 1.0, "lr_W": lr_W, "lr_V": 1.0}
        else:
            opt = {"optimizer": "adam", "lr": p["adam_lr"]}
        out.append(
            run_spec(
                _label(arm, optimizer),
                task={"d": 5, "T": p["T"], "q": 3, "pe": arm.spec(p["N"]), "x_query": "zero", "query_pe": "sum"},
                model={"class": "theory", "position_only": True, "init": "zero"},
                train_cfg={
                    "steps": p["steps"],
                    "batch_size": 256,
                    "log_every": p["log_every"],
                    "eval_batch": p["eval_batch"],
                    "eval_lengths": p["T_tests"],
                    "eval_qs": q_tests,
                    "seed": 0,
                }
                | opt,
                checkpoint_every=max(p["steps"] // 10, 1),
            )
        )
    return out


def _note(scale: str) -> str:
    if scale == "paper":
        return (
            "paper's T=200, q=3, T_test 250..400, 10k steps; theory model in the position-only "
            "parametrisation (W_EE, V_X), d=5; q_test values and the two fixed PEs (one-hot, dim 400; "
            "near-orthogonal Rademacher, m=400) are our choices"
        )
    return "quick scale: T=20, T_test in 25..40, pool N=40"


#: The rules that read the runs (hashed with the config: changing one analyses the runs again).
RULES = {
    "level": LEVEL,
    "slope_tol": SLOPE_TOL,
    "flat_slope": FLAT_SLOPE,
    "end_frac": END_FRAC,
    "floor_test": "fitted_floor",
    "slightly": SLIGHTLY,
    "dominates": DOMINATES,
}


def config_length(scale: str, seeds: list) -> dict:
    p = _scale_params(scale)
    return {
        "scale": scale,
        "seeds": list(seeds),
        "T_tests": p["T_tests"],
        "runs": _specs(scale, PLAIN_GD),
        "scale_note": _note(scale),
        "rules": RULES,
    }


def config_q(scale: str, seeds: list) -> dict:
    return config_length(scale, seeds) | {"q_tests": _scale_params(scale)["q_tests"]}


def config_adam(scale: str, seeds: list) -> dict:
    p = _scale_params(scale)
    return {
        "scale": scale,
        "seeds": list(seeds),
        "T_tests": p["T_tests"],
        "q_tests": p["adam_q_tests"],
        "runs": _specs(scale, "adam"),
        "scale_note": _note(scale),
        "rules": RULES,
    }


def _run(cfg: dict, ctx: Context, analyse) -> dict:
    """Train every PE's run at every seed, then analyse each seed's set of runs together."""

    def seed(s: int) -> SeedResult:
        ran = seed_runs(cfg, s, ctx)
        optimizer = ran[0][0]["train"]["optimizer"]
        by_label = {spec["label"]: hist for spec, hist in ran}
        hists = {arm.key: by_label[_label(arm, optimizer)] for arm in _arms(optimizer)}
        final, claims = analyse(hists)
        return SeedResult(
            runs={spec["label"]: hist for spec, hist in ran},
            final={"loss": {k: h.last("loss") for k, h in hists.items()}, **final},
            claims=claims,
        )

    return for_each_seed(cfg, ctx, seed)


def _dTNq(cfg: dict) -> tuple[int, int, int, int]:
    t = cfg["runs"][0]["task"]
    return t["d"], t["T"], t["pe"]["max_len"], t["q"]


def run_length(cfg: dict, ctx: Context) -> dict:
    d, T, _, q = _dTNq(cfg)
    return _run(cfg, ctx, lambda h: length_claims(h, cfg["T_tests"], d, T, q))


def run_q(cfg: dict, ctx: Context) -> dict:
    _, T, N, q = _dTNq(cfg)
    return _run(cfg, ctx, lambda h: q_claims(h, cfg["q_tests"], T, N, q))


def run_adam(cfg: dict, ctx: Context) -> dict:
    d, T, N, q = _dTNq(cfg)

    def analyse(h):
        f_len, c_len = length_claims(h, cfg["T_tests"], d, T, q, prefix="length.")
        f_q, c_q = q_claims(h, cfg["q_tests"], T, N, q, prefix="q.", adam=True)
        return f_len | f_q, c_len | c_q

    return _run(cfg, ctx, analyse)


def _decides_length(cfg: dict) -> tuple:
    onehot = tuple(f"fixed.T{T}.min_last_half" for T in cfg["T_tests"])
    fig, long_ = reading_key({"horizon": "figure"}), reading_key({"horizon": "long"})
    return (
        Decides("fig2.stochastic", tuple(f"stochastic.T{T}.converges" for T in cfg["T_tests"]), fig),
        Decides("fig2.fixed-constant", onehot + tuple(f"fixed_nearorth.T{T}.floor" for T in cfg["T_tests"]), fig),
        Decides("fig2.fixed-constant", onehot, long_),  # the near-orthogonal PE's long run: nearorth-baseline
        Decides("fig4.fixed-015", onehot, fig),
        Decides("fig4.fixed-015", onehot, long_),
    )


def _decides_q(cfg: dict) -> tuple:
    qs, q = cfg["q_tests"], cfg["runs"][0]["task"]["q"]
    ranges = {"above": above_q(qs, q), "all": qs}
    out = []
    for r, xs in ranges.items():
        out.append(
            Decides(
                "fig4.converge-onehot",
                tuple(f"{k}.q{x}.converges" for k in ("stochastic", "fixed") for x in xs),
                reading_key({"horizon": "long", "q": r}),
            )
        )
        for vs in ("nearorth", "onehot"):
            for rate in ("one", "equal"):
                for measure in ("steps", "end"):
                    key = reading_key({"vs": vs, "q": r, "rate": rate, "measure": measure})
                    ids = (
                        ("eqrate_onehot_identical",)
                        if vs == "onehot" and rate == "equal"
                        else tuple(f"q{x}.quicker.{measure}.{rate}.{vs}" for x in xs)
                    )
                    out.append(Decides("fig4.quicker", ids, key))
        tag = "" if r == "above" else "_all_q"
        out.append(Decides("fig4.worse-onehot", (f"fixed.worse_as_q_grows{tag}",), reading_key({"q": r})))
        out.append(
            Decides(
                "fig4.worse-nearorth",
                (f"fixed_nearorth.worse_as_q_grows{tag}",),
                reading_key({"horizon": "figure", "q": r}),
            )
        )
    # Excluded by the words ('in the long run'), shown beside the statement: the near-orthogonal PE at 10,000 steps.
    out.append(
        Decides(
            "fig4.converge-nearorth",
            tuple(f"fixed_nearorth.q{x}.converges" for x in qs),
            reading_key({"horizon": "figure", "q": "all"}),
        )
    )
    return tuple(out)


def _decides_adam(cfg: dict) -> tuple:
    qs, q = cfg["q_tests"], cfg["runs"][0]["task"]["q"]
    ranges = {"above": above_q(qs, q), "all": qs}
    stochastic = tuple(f"length.stochastic.T{T}.converges" for T in cfg["T_tests"])
    rival = {"nearorth": "fixed_nearorth.T{}.floor", "onehot": "fixed.T{}.min_last_half"}
    return (
        # "The length generalization advantage": the stochastic PE converges where each fixed PE does not.
        *(
            Decides(
                "fig5.length",
                stochastic + tuple(f"length.{c.format(T)}" for T in cfg["T_tests"]),
                reading_key({"vs": vs}),
            )
            for vs, c in rival.items()
        ),
        *(
            Decides("fig5.dominates", tuple(f"q.q{x}.dominates.{vs}" for x in xs), reading_key({"vs": vs, "q": r}))
            for vs in ("nearorth", "onehot")
            for r, xs in ranges.items()
        ),
    )


#: The record of the experiment ``fig2-length-generalization`` (:class:`~sts_lib.experiments.record.Experiment`).
#:
#: :meta hide-value:
FIG2 = Experiment(
    "fig2-length-generalization",
    "train at T=200, q=3; OOD loss at T_test=250..400, stochastic vs fixed PE",
    config_length,
    run_length,
    figures.length,
    lane="A",
    section="ch8-fig2",
    title="Figure 2",
    paper_says="the stochastic PE generalises to longer sequences, "
    "while every fixed PE stays at a loss of at least 0.15",
    decides=_decides_length,
)
#: The record of the experiment ``fig4-q-generalization`` (:class:`~sts_lib.experiments.record.Experiment`).
#:
#: :meta hide-value:
FIG4 = Experiment(
    "fig4-q-generalization",
    "train at q=3; loss at unseen q_test (and T_test), stochastic vs fixed PE (one-hot and near-orthogonal)",
    config_q,
    run_q,
    figures.q_generalization,
    lane="A",
    section="ch8-fig4",
    title="Figure 4",
    paper_says="both PEs converge at unseen $q$, the stochastic one slightly quicker; the fixed PE gets worse as "
    "$q_{\\text{test}}$ grows",
    decides=_decides_q,
)
#: The record of the experiment ``fig5-adam`` (:class:`~sts_lib.experiments.record.Experiment`).
#:
#: :meta hide-value:
FIG5 = Experiment(
    "fig5-adam",
    "Figures 2 and 4 trained with Adam",
    config_adam,
    run_adam,
    figures.adam,
    lane="A",
    section="ch8-fig5",
    title="Figure 5",
    paper_says="with Adam too, the stochastic PE dominates out of distribution for early stopping",
    decides=_decides_adam,
)
