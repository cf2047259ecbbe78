"""The reading policy: one rule for how every statement of the paper is read, applied by code.

The paper's words leave some choices open: how long a run, against which fixed encoding, which q_test values, one
learning rate or an equal effective rate, what "quicker" measures. Each choice is an :class:`Axis`. A statement
declares its :class:`Wording` (what its words say about time, "the fixed PE", q_test, "quicker"; which figure), and
:func:`opens_of` derives the values its words admit on each axis (:class:`Open`); every combination is an
*admissible reading*. The optimiser is settled once, by the paper specification (:func:`optimiser_of`); a reading a
document decides that the words do not admit is shown with the rule's reason (:func:`why_excluded`), never counted.
Words about a limit ("in the long run") are decided by a closed form or not at all. :func:`combine` is the same for
every statement: **reproduced** when a reading that can fail supports it and none refutes it, **not reproduced**
when one refutes it and none supports it, **depends on the reading** when they disagree; outcomes fixed by
construction count alike wherever they occur. Magnitude words are measured by the thresholds here (with their bands in
:mod:`sts_lib.reading.thresholds`), a convergence or a floor by :func:`sts_lib.checks.fitted_floor` at :data:`LEVEL`.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

#: A convergence or a floor is read against this fraction of the initial loss (:func:`sts_lib.checks.fitted_floor`):
#: "converges to 0" when the fitted floor's 95% interval lies below it, "does not go below some constant" when the
#: interval lies above it.
LEVEL = 0.02
#: "Slightly quicker": the stochastic PE ahead by a factor of at most this (the rival's steps to a level, or its loss
#: near the end, over the stochastic PE's); ahead by more is quicker, but not slightly.
SLIGHTLY = 2.0
#: "Dominates for early stopping": the stochastic PE's loss at most the rival's over at least this share of training
#: on a logarithmic step scale (wherever training stops, it is the better choice, but for a short span).
DOMINATES = 0.9
#: "Gets worse as q_test grows": the rank correlation of the final loss with q_test at least this.
RANK = 0.8
#: The exceptions to the floor test, declared: Figures 1 and 3 are read off runs whose analysis needs weight snapshots
#: that the result documents do not keep, so they cannot be analysed again without training (an hour per seed here).
#: "Converges to the global minimum of 0" (Figure 1): the final loss below this fraction of the uniform plateau.
PLATEAU = 0.01
#: "Converge to 1" / "to the identity direction" (Figures 1 and 3): a cosine at the end of the run at least this.
CLOSE = 0.95
#: "All other entries converge to 0" (a block's size, kept at two snapshots only): final ÷ initial size below this.
DECAY = 0.5


@dataclass(frozen=True)
class Value:
    """One value of an axis: its key, how a table names it, and what it means."""

    key: str
    label: str
    meaning: str


@dataclass(frozen=True)
class Axis:
    """One choice the paper's words can leave open, its values, and the rule that says which the words admit."""

    key: str
    label: str
    values: tuple  # of Value
    rule: str  # how the words select the admissible values, in one or two sentences

    def value(self, key: str) -> Value:
        for v in self.values:
            if v.key == key:
                return v
        raise ValueError(f"axis {self.key!r} has no value {key!r}; it has {[v.key for v in self.values]}")


#: The axes, in the order a reading's key lists them.
#:
#: :meta hide-value:
AXES = {
    a.key: a
    for a in (
        Axis(
            "horizon",
            "horizon",
            (
                Value("figure", "the figure's own steps", "the runs of the figure itself (10,000 steps)"),
                Value(
                    "long",
                    "the longest run",
                    "the longest run we have of that encoding (50,000 steps for the near-orthogonal PE; the figure's "
                    "own for the others)",
                ),
            ),
            "words that describe the figure's curves or name a time ('after 10k steps') admit the figure's run only; "
            "words that name the long run ('in the long run') speak of a limit, which a finite run cannot decide: "
            "the longest run gives its finding 'within N steps', shown beside the verdict 'not decided'; words about "
            "an order or a floor without a time ('end up', 'does not go below', 'gets worse') admit both runs",
        ),
        Axis(
            "vs",
            "comparator",
            (
                Value("nearorth", "against the fixed near-orthogonal PE", "Definition 3's fixed PE, m = 400"),
                Value("onehot", "against the fixed one-hot PE", "positions 1..T, the one-hot PE of the same size"),
            ),
            "'the fixed PE' covers every fixed PE we train: a comparison is made against each",
        ),
        Axis(
            "q",
            "q_test range",
            (
                Value("above", "q_test above the training q", "q_test = 4, 5, 6, 8, 10 (Adam: 4, 6, 8)"),
                Value("all", "every q_test", "q_test = 2 below the training q = 3 included"),
            ),
            "words about 'q_test' or 'OOD performance' without a range admit both: the unseen q below the training "
            "q and those above it",
        ),
        Axis(
            "rate",
            "rate",
            (
                Value("one", "one rate for both", "the same learning rate for every encoding"),
                Value(
                    "equal",
                    "equal effective rate",
                    "the pool of N slots at lr_W (N - 1)/(T - 1), which moves the score gap as fast as T fixed slots",
                ),
            ),
            "a comparison under gradient descent admits both, because the two differ there; under Adam only one "
            "rate exists (no equal effective rate is defined)",
        ),
        Axis(
            "measure",
            "measure",
            (
                Value("steps", "steps to 5% of the initial loss", "how soon each curve reaches a level"),
                Value(
                    "end",
                    "loss near the end of training",
                    "the mean loss over the last 10% of the steps, where the caption's zoomed insets are",
                ),
            ),
            "'converges quicker' admits both: reaching a level sooner, and being lower where the insets zoom in; "
            "words that say where to look ('as seen by the zoomed in versions of the plots near the end of training') "
            "admit the loss near the end only",
        ),
        Axis(
            "opt",
            "optimiser",
            (
                Value("gd", "gradient descent", "plain gradient steps, Theorem 1's optimiser"),
                Value("adam", "Adam", "Adam with a 1/t decay of its rate"),
            ),
            "settled by the paper specification, not by each caption: Figure 5's caption names Adam ('the training "
            "trajectory of Adam'), which implies that Figures 1-4 are gradient descent [R]; a figure's statements are "
            "read with its optimiser only, and runs with the other are shown beside them, never counted",
        ),
    )
}
#: The key of the one reading of a statement that leaves nothing open.
AS_STATED = "paper"
#: What a statement's words say about time, each kind with the horizons it admits (:data:`AXES` ``horizon``).
TIMES = {
    "figure": ((), "the words describe the figure's own curves"),
    "named": (("figure",), "the words name a time: the figure's run"),
    "long run": (("long",), "the words name the long run: a limit"),
    "untimed": (("figure", "long"), "an order or a floor without a time: the figure's run and the longest run"),
}
#: How a statement compares the stochastic PE with a rival, each kind with the measures it admits.
QUICKER = {"": (), "quicker": ("steps", "end"), "quicker, at the insets": ("end",)}


@dataclass(frozen=True)
class Wording:
    """A statement's words in the policy's terms; its readings are derived from these alone (:func:`opens_of`).

    ``time``: a key of :data:`TIMES`. ``fixed_pe``: the words speak of "the fixed PE" in a comparison with the
    stochastic PE (each fixed PE we train is a rival). ``q_test``: the words speak of q_test without a range.
    ``quicker``: a key of :data:`QUICKER`. ``figure``: the figure the words are from (0: none, a theorem or a
    secondary source), which settles the optimiser (:func:`optimiser_of`)."""

    figure: int = 0
    time: str = "figure"
    fixed_pe: bool = False
    q_test: bool = False
    quicker: str = ""

    def __post_init__(self):
        for name, value, allowed in (("time", self.time, list(TIMES)), ("quicker", self.quicker, list(QUICKER)),
                                     ("figure", self.figure, list(range(6)))):  # fmt: skip
            if value not in allowed:
                raise ValueError(f"Wording: {name} must be one of {allowed} (figure 0: none), got {value!r}")

    @property
    def limit(self) -> bool:
        """Do the words speak of a limit ("in the long run"), which a finite run cannot decide?"""
        return self.time == "long run"


def optimiser_of(figure: int) -> str:
    """The optimiser of a figure, as the paper specification settles it: Adam for Figure 5, gradient descent for
    Figures 1-4 (Figure 5's caption names Adam for its runs), "" for no figure.

    >>> optimiser_of(2), optimiser_of(5), optimiser_of(0)
    ('gd', 'adam', '')
    """
    return "" if not figure else "adam" if figure == 5 else "gd"


def opens_of(w: Wording) -> tuple:
    """The axes a statement's words open and the values they admit, each with the rule's reason: the policy's rules
    applied to :class:`Wording`, never set by hand. The settled optimiser is not an open axis.

    >>> [(o.axis, o.values) for o in opens_of(Wording(figure=4, time="long run", q_test=True))]
    [('horizon', ('long',)), ('q', ('above', 'all'))]
    >>> [(o.axis, o.values) for o in opens_of(Wording(figure=5, fixed_pe=True))]
    [('vs', ('nearorth', 'onehot'))]
    """
    out = []
    horizons, why = TIMES[w.time]
    if horizons:
        out.append(Open("horizon", horizons, why))
    if w.fixed_pe:
        out.append(Open("vs", ("nearorth", "onehot"), "'the fixed PE' covers every fixed PE we train"))
    if w.q_test:
        out.append(Open("q", ("above", "all"), "the words speak of q_test without a range"))
    if w.fixed_pe and optimiser_of(w.figure) == "gd":
        out.append(Open("rate", ("one", "equal"), "a comparison under gradient descent: the two rates differ"))
    if QUICKER[w.quicker]:
        why = (
            "a level reached sooner, or lower near the end"
            if len(QUICKER[w.quicker]) > 1
            else ("the words say where to look: the zoomed insets near the end of training")
        )
        out.append(Open("measure", QUICKER[w.quicker], why))
    return tuple(out)


def why_excluded(w: Wording, coords: dict) -> str:
    """Why the words exclude the reading at ``coords`` (a reading a document decides that :func:`opens_of` does not
    admit), from the axis's rule; "" when they admit it.

    >>> why_excluded(Wording(figure=1), {"opt": "adam"})[:40]
    'Figure 1 is gradient descent (the paper '
    """
    admitted = {o.axis: o.values for o in opens_of(w)}
    for a, v in coords.items():
        AXES[a].value(v)
        if a == "opt":
            if v != optimiser_of(w.figure):
                label = AXES["opt"].value(optimiser_of(w.figure) or "gd").label
                return (
                    f"Figure {w.figure} is {label} (the paper specification: Figure 5's caption names Adam); "
                    "this run is shown, never counted"
                )
        elif v not in admitted.get(a, ()):
            what = {"horizon": TIMES[w.time][1], "measure": "the words say where to look: near the end of training"}
            return what.get(a, f"the words do not open the {AXES[a].label}")
    return ""


def parse_key(key: str) -> dict:
    """The coordinates of a reading's key (:func:`reading_key`'s inverse).

    >>> parse_key("horizon=figure,vs=onehot"), parse_key(AS_STATED)
    ({'horizon': 'figure', 'vs': 'onehot'}, {})
    """
    if key == AS_STATED:
        return {}
    coords = dict(part.split("=", 1) for part in key.split(","))
    reading_key(coords)  # raises on an unknown axis or value
    return coords


@dataclass(frozen=True)
class Open:
    """The values of one axis that a statement's words admit, and why (from the words)."""

    axis: str  # a key of AXES
    values: tuple  # value keys the words admit
    why: str  # from the words

    def __post_init__(self):
        for v in self.values:
            AXES[self.axis].value(v)  # raises on an unknown axis or value


def reading_key(coords: dict) -> str:
    """The key of the reading at ``coords`` (``{axis: value}``), axes in :data:`AXES` order; :data:`AS_STATED` if none.

    >>> reading_key({"vs": "onehot", "horizon": "figure"}), reading_key({})
    ('horizon=figure,vs=onehot', 'paper')
    """
    for a, v in coords.items():
        if a not in AXES:
            raise ValueError(f"unknown axis {a!r}; the axes are {list(AXES)}")
        AXES[a].value(v)
    return ",".join(f"{a}={coords[a]}" for a in AXES if a in coords) or AS_STATED


def reading_label(coords: dict) -> str:
    """How a table names the reading at ``coords``: the values' labels, in :data:`AXES` order.

    >>> reading_label({"q": "all", "vs": "onehot"})
    'against the fixed one-hot PE, every q_test'
    """
    return ", ".join(AXES[a].value(coords[a]).label for a in AXES if a in coords) or "as stated"


def admissible(opens: tuple) -> list[dict]:
    """Every admissible reading of a statement whose words admit ``opens``: the product of the admitted values.

    >>> admissible((Open("vs", ("nearorth", "onehot"), "w"), Open("q", ("all",), "w")))
    [{'vs': 'nearorth', 'q': 'all'}, {'vs': 'onehot', 'q': 'all'}]
    """
    axes = [o.axis for o in opens]
    if len(set(axes)) != len(axes):
        raise ValueError(f"each axis may be opened once, got {axes}")
    return [dict(zip(axes, combo)) for combo in product(*(o.values for o in opens))]


#: The verdict keys :func:`combine` reads and gives (those of :data:`sts_lib.reading.verdicts.VERDICTS`).
_SUPPORT, _REFUTE, _DEPENDS = "reproduced", "not reproduced", "depends on the reading"
_HOLDS, _FAILS, _EITHER = "holds by construction", "fails by construction", "by construction, either way"
_FALLBACK = ("not decided", "not testable here", "no result")


def combine(verdicts: list) -> str:
    """The statement's verdict from its admissible readings' verdicts: the policy's one rule.

    A reading that can fail decides; readings whose outcome is fixed by construction count the same way wherever
    they occur: never as reproduced or not, and never as a dependence on the reading.

    >>> combine(["reproduced", "not decided"]), combine(["not reproduced", "fails by construction"])
    ('reproduced', 'not reproduced')
    >>> combine(["reproduced", "not reproduced"]), combine(["not decided", "holds by construction"])
    ('depends on the reading', 'not decided')
    >>> combine(["holds by construction", "fails by construction"]), combine(["fails by construction"])
    ('by construction, either way', 'fails by construction')
    """
    if not verdicts:
        return "no result"
    support, refute = _SUPPORT in verdicts, _REFUTE in verdicts
    if support and refute:
        return _DEPENDS
    if support or refute:
        return _SUPPORT if support else _REFUTE
    if "not decided" in verdicts:
        return "not decided"
    holds, fails = _HOLDS in verdicts or _EITHER in verdicts, _FAILS in verdicts or _EITHER in verdicts
    if holds or fails:
        return _EITHER if holds and fails else _HOLDS if holds else _FAILS
    return next((v for v in _FALLBACK if v in verdicts), verdicts[0])


__all__ = ["AS_STATED", "AXES", "CLOSE", "DECAY", "DOMINATES", "LEVEL", "PLATEAU", "QUICKER", "RANK", "SLIGHTLY",
           "TIMES", "Axis", "Open", "Value", "Wording", "admissible", "combine", "optimiser_of",
           "opens_of", "parse_key", "reading_key", "reading_label", "why_excluded"]  # fmt: skip
