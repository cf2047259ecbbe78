"""The tests' lists that are read from the course rather than written by hand, checked on planted sources: which
chapters show a panel (tests/helpers/chapter_panels.py, read by the book tier's panel checks), the PE kinds the dense
oracles run over (the library's registry), and the names the quick documents run at several seeds
(tests/helpers/quick_documents.py, a hand list: see its comment)."""

import importlib
import types

import pytest
from chapter_panels import code_cells, panel_builders, shown, shown_panels

import sts_lib as sts

SETUP = """```{code-cell} ipython3
:tags: [remove-input]
import importlib.util
if importlib.util.find_spec("sts_lib") is None:
    %pip install -q sts_lib
```
"""


def _chapter(*cells: str) -> str:
    return SETUP + "".join(f"\nSome prose.\n\n```{{code-cell}} ipython3\n{cell}\n```\n" for cell in cells)


def test_the_chapters_that_show_a_panel_are_read_from_their_sources(tmp_path):
    """A ``.show()`` on a builder's panel counts, called on the builder's value or on a name bound to it in an
    earlier cell; a figure's ``.show()``, a name rebound to something else, a page that is not a chapter (``NN_``)
    and a chapter without a panel do not. So a chapter that gains a panel changes the derived list, and the book
    tier's equality (built pages against this list) fails until the page carries it."""
    (tmp_path / "01_one.md").write_text(
        _chapter(
            "panel = ch1.instance_explorer(T=8, q=2)",
            "---\ntags: [hide-output]\n---\npanel.show()",
            "fig, ax = plt.subplots()\nfig.show()",
        )
    )
    (tmp_path / "02_two.md").write_text(
        _chapter("ch3w.dynamics_widget().show()  # a comment", "scan_snap_widget(s).show()")
    )
    (tmp_path / "03_rebound.md").write_text(
        _chapter("panel = ch2w.bound_explorer()\npanel = make_figure()", "panel.show()")
    )
    (tmp_path / "04_none.md").write_text(_chapter("print(1)"))
    (tmp_path / "notes.md").write_text(_chapter("ch3w.dynamics_widget().show()"))
    assert shown_panels(tmp_path) == {"01_one": 1, "02_two": 2}
    assert shown((tmp_path / "01_one.md").read_text()) == [(2, "instance_explorer")]  # cell 0 is the set-up
    assert "get_ipython()" in code_cells(SETUP)[0]  # IPython's syntax read as Python
    # Only the builders named count: the same page with no builder known shows nothing.
    assert shown((tmp_path / "02_two.md").read_text(), builders=set()) == []


def test_every_panel_builder_is_shown_by_a_chapter():
    """The book's chapters show every panel the chapters' modules build (``panel_builders``), each once, so the
    derived list misses no panel that a builder makes."""
    from chapter_panels import SOURCES

    used = [b for md in sorted(SOURCES.glob("[0-9][0-9]_*.md")) for _, b in shown(md.read_text(encoding="utf-8"))]
    assert sorted(used) == sorted(key.rsplit(".", 1)[1] for key in panel_builders())
    assert sum(shown_panels().values()) == len(used)


def test_the_documents_run_at_several_seeds_are_experiments_with_several_quick_seeds(tmp_path):
    """SEVERAL_SEEDS stays a hand list (no record says which documents a test reads seed by seed), so a renamed
    experiment would silently run at seed 0 only: each name is an experiment whose quick scale has several seeds."""
    from quick_documents import SEVERAL_SEEDS, args

    from sts_lib.experiments import EXPERIMENTS, experiment_config

    assert set(SEVERAL_SEEDS) <= set(EXPERIMENTS)
    assert all(len(experiment_config(name, "quick")["seeds"]) >= 2 for name in SEVERAL_SEEDS)
    other = next(name for name in EXPERIMENTS if name not in SEVERAL_SEEDS)
    assert "--seed" not in args(SEVERAL_SEEDS[0], tmp_path) and args(other, tmp_path)[-2:] == ["--seed", "0"]


#: The dense oracles, by test module: each runs over every registered PE kind (its ``kind`` parameter).
PE_ORACLES = {
    "test_models": ["test_forward_matches_dense_formula"],
    "test_sampling": ["test_stochastic_pes_differ_per_sequence_fixed_do_not", "test_pebatch_sparse_ops_match_dense"],
}


def _kinds_skipped(module: types.ModuleType, oracles: list[str]) -> list[str]:
    """Each of ``oracles`` (test functions of ``module``) that is not parametrized over ``kind``, or whose ``kind``
    values miss a kind of the library's registry (``sts.PE_KINDS``), with the kinds it misses."""
    faults = []
    for name in oracles:
        marks = [m for m in getattr(getattr(module, name), "pytestmark", []) if m.name == "parametrize"]
        kinds = next((set(m.args[1]) for m in marks if m.args[0] == "kind"), None)
        if kinds is None:
            faults.append(f"{module.__name__}.{name} is not parametrized over kind")
        elif missing := sorted(set(sts.PE_KINDS) - kinds):
            faults.append(f"{module.__name__}.{name} skips {missing}")
    return faults


def test_every_registered_pe_kind_meets_the_dense_oracles():
    """A new PE kind registered in ``sts_lib.positional`` runs through the forward-vs-dense and sparse-vs-dense
    oracles by itself: each oracle is parametrized over the registry, never a hand list that could leave it out."""
    faults = [f for mod, names in PE_ORACLES.items() for f in _kinds_skipped(importlib.import_module(mod), names)]
    assert not faults, faults

    @pytest.mark.parametrize("kind", ["onehot", "near_orthogonal"])
    def by_hand(kind): ...

    planted = types.ModuleType("planted")
    planted.by_hand, planted.unmarked = by_hand, lambda kind: None
    assert _kinds_skipped(planted, ["by_hand", "unmarked"]) == [
        f"planted.by_hand skips {sorted(set(sts.PE_KINDS) - {'onehot', 'near_orthogonal'})}",
        "planted.unmarked is not parametrized over kind",
    ]
