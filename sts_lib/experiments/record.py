"""The one record of an experiment: everything the runner, the book, ``make reproduce`` and the README need.

An :class:`Experiment` is declared once, in the module that runs it (``convergence.FIG1``,
``width_law.WIDTH_LAW`` ...), and carries its own name, description, configuration and run, the
function that draws its figure, its seeds, the lane of ``make reproduce`` it runs in, the section of
chapter 8 that discusses it and what the paper says. Nothing else keeps a table keyed by experiment
names: :mod:`sts_lib.experiments` collects the records from its modules, the result document copies
what the book reads (:meth:`Experiment.document_fields`: title, section, figure, the paper's words),
and chapter 8, the figures and the README read those fields from the document. Adding an experiment
touches its own module, its line in ``MODULES`` and its section of the book.

>>> from sts_lib.presentation import figures
>>> e = Experiment("demo", "a demo", config=lambda s, seeds: {}, run=lambda c, ctx: {"claims": {}},
...                figure=figures.length, lane="A", section="")
>>> e.seeds_at("paper"), e.document_fields()["figure"]
([0, 1, 2], 'sts_lib.presentation.figures.length')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..presentation.figures import FIGURE_MODULES
from ..reading.statements import Decides, statement

#: The lanes of ``make reproduce`` (two, one core each). An experiment that shares training runs with
#: another (Figures 1/3, Figures 2/4) runs in the same lane, so the shared run is trained once; the
#: lanes are balanced on the compute each result document records (results/README.md).
LANES = ("A", "B")
#: The seeds of an experiment unless its record says otherwise: 3 at paper scale, 2 at quick scale
#: (so that even quick runs show a spread and every claim is evaluated over seeds).
DEFAULT_SEEDS = {"quick": [0, 1], "paper": [0, 1, 2]}


@dataclass(frozen=True)
class Experiment:
    """One experiment: how to configure it, run it and draw it, where it runs and where the book discusses it."""

    name: str  # the CLI name, e.g. 'fig2-length-generalization'
    description: str  # one line for `list`
    config: Callable[[str, list], dict]  # (scale, seeds) -> JSON-able config
    run: Callable[[dict, object], dict]  # (config, Context) -> {'runs', 'final', 'data', 'claims'}
    figure: Callable[[dict], object]  # result document -> matplotlib Figure (sts_lib.presentation.figures or
    # evidence_figures)
    lane: str  # the lane of `make reproduce` (LANES)
    section: str  # the label of its section in chapter 8 ('' = "further experiments")
    title: str = ""  # how the book names it ("Figure 2", "The width law")
    paper_says: str = ""  # what the paper (or, marked [S], a secondary source) says
    setting: str = ""  # its setting in words, for a reader (default: the config's scale_note)
    seeds: dict = field(default_factory=lambda: dict(DEFAULT_SEEDS))  # scale -> seeds
    decides: Callable[[dict], tuple] = lambda cfg: ()  # config -> Decides entries: the statements its claims decide

    def __post_init__(self):
        if self.lane not in LANES:
            raise ValueError(f"experiment {self.name!r}: lane must be one of {LANES}, got {self.lane!r}")
        if self.section and not self.section.startswith("ch8-"):
            raise ValueError(
                f"experiment {self.name!r}: section must be a chapter-8 label 'ch8-...' or '', got {self.section!r}"
            )
        if self.figure.__module__ not in FIGURE_MODULES:
            raise ValueError(
                f"experiment {self.name!r}: its figure must be a function of {sorted(FIGURE_MODULES)}, "
                f"got {self.figure.__module__}.{self.figure.__name__}"
            )
        if set(self.seeds) != set(DEFAULT_SEEDS) or not all(self.seeds.values()):
            raise ValueError(
                f"experiment {self.name!r}: seeds must give a non-empty list for each scale "
                f"{sorted(DEFAULT_SEEDS)}, got {self.seeds!r}"
            )

    def seeds_at(self, scale: str) -> list[int]:
        """The default seeds at ``scale``."""
        return list(self.seeds[scale])

    def declared(self, config: dict) -> list[dict]:
        """The :class:`~sts_lib.reading.statements.Decides` entries for ``config``, checked and as JSON."""
        out = []
        for d in self.decides(config):
            if not isinstance(d, Decides):
                raise TypeError(
                    f"experiment {self.name!r}: decides must give sts_lib.reading.statements.Decides, got {d!r}"
                )
            try:  # an admissible reading, or one the words exclude by the policy's rules (shown, never counted)
                statement(d.statement).reading(d.reading)
            except ValueError as e:
                raise ValueError(f"experiment {self.name!r}: {e}") from None
            out.append({"statement": d.statement, "reading": d.reading, "claims": list(d.claims)})
        return out

    def document_fields(self, config: dict | None = None) -> dict:
        """What the result document copies from the record (none of it is hashed: editing it re-runs nothing);
        with ``config``, also which statements its claims decide (``decides``)."""
        return {
            "description": self.description,
            "title": self.title,
            "paper_says": self.paper_says,
            "setting": self.setting,
            "section": self.section,
            "figure": f"{self.figure.__module__}.{self.figure.__name__}",
        } | ({"decides": self.declared(config)} if config is not None else {})


__all__ = ["DEFAULT_SEEDS", "Experiment", "LANES"]
