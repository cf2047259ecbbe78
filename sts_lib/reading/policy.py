"""The reading policy: one rule, declared before the data that test it, for how every statement of the paper is read.

The paper's words leave some choices open: how long a run a caption speaks of, which fixed encoding a comparison
is against, which q_test values count, whether two encodings share one learning rate or an equal effective rate,
which optimiser a figure used, what a word like "slightly" measures. Each choice is an :class:`Axis` with its
values; each statement says which values its words admit on each axis (:class:`Open`, with the reason from the
words), and every combination of admitted values is an *admissible reading* that the statement is decided at.
The combination rule (:func:`combine`) is the same for every statement: **reproduced** when at least one
admissible reading decides it and none refutes it, **not reproduced** when one refutes it and none supports it,
**depends on the reading** when admissible readings disagree; otherwise not decided, holds by construction or not
testable, in that order. A reading the words exclude is shown beside the statement as *inadmissible*, with the
reason, and never counted. The magnitude words the paper uses are measured by the thresholds here
(:data:`SLIGHTLY`, :data:`DOMINATES`), and a convergence or a floor by :func:`sts_lib.checks.fitted_floor` at
:data:`LEVEL`. Chapter 8 prints this module's records; :mod:`sts_lib.reading.statements` applies them.
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
#: "Dominates for early stopping": the stochastic PE's loss at most the rival's at this fraction of the logged steps
#: at least (wherever training stops, it is the better choice, but for a few logged steps).
DOMINATES = 0.9


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
            "words that name a time ('after 10k steps') admit that time only; words that name the long run ('in the "
            "long run') admit the longest run only; words about a limit or an order without a time ('end up', "
            "'does not go below', 'gets worse') admit both",
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
            "'converges quicker' admits both: reaching a level sooner, and being lower where the insets zoom in",
        ),
        Axis(
            "opt",
            "optimiser",
            (
                Value("gd", "gradient descent", "plain gradient steps, Theorem 1's optimiser"),
                Value("adam", "Adam", "Adam with a 1/t decay of its rate"),
            ),
            "a caption that does not name its optimiser admits both",
        ),
    )
}
#: The key of the one reading of a statement that leaves nothing open.
AS_STATED = "paper"


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
_FALLBACK = ("not decided", "holds by construction", "not testable here", "no result")


def combine(verdicts: list) -> str:
    """The statement's verdict from its admissible readings' verdicts: the policy's one rule.

    >>> combine(["reproduced", "not decided"]), combine(["not reproduced", "not decided"])
    ('reproduced', 'not reproduced')
    >>> combine(["reproduced", "not reproduced"]), combine(["not decided", "holds by construction"])
    ('depends on the reading', 'not decided')
    """
    if not verdicts:
        return "no result"
    support, refute = _SUPPORT in verdicts, _REFUTE in verdicts
    if support and refute:
        return _DEPENDS
    if support or refute:
        return _SUPPORT if support else _REFUTE
    return next(v for v in _FALLBACK if v in verdicts) if any(v in _FALLBACK for v in verdicts) else verdicts[0]


__all__ = ["AS_STATED", "AXES", "DOMINATES", "LEVEL", "SLIGHTLY", "Axis", "Open", "Value", "admissible", "combine",
           "reading_key", "reading_label"]  # fmt: skip
