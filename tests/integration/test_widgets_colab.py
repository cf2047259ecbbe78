"""Colab as it is: the install cells keep Colab's packages and the widgets run on ipywidgets 7.7 and 8.

Colab has long shipped ipywidgets 7.7.1; upgrading it to 8 breaks Colab's own widgets. So the
``widgets`` extra accepts 7.7 and 8, and the widget code may use no ipywidgets-8-only API:

* ``test_requirements_accept_colabs_versions``: pyproject's requirements (core + ``widgets``) are met by the
  versions Colab ships, so ``pip install "sts-lib[widgets] @ ..."`` upgrades nothing;
* ``test_install_cells_only_add_sts_lib``: every chapter's and exercise's install cell installs sts-lib only,
  without ``-U``/``--upgrade``/``--force-reinstall`` or pins of other packages;
* ``test_widget_modules_use_no_ipywidgets8_only_names``: a static scan for names that exist only in 8;
* ``test_every_panel_builds_on_installed_ipywidgets``: every chapter's panel (each function of
  ``sts_lib.chapters`` that returns a ``FigurePanel``, read from the source) is built and moved, with
  unrecognised widget arguments (what 7.7 does with an 8-only keyword, ``style`` key or ``Layout``
  property) turned into errors and no 8-only trait set as a plain attribute;
* ``test_every_panel_builds_on_ipywidgets_7_7``: the same, in a subprocess under ipywidgets 7.7.1, from the copy
  that ``make test`` installs beside the venv (``.venv/iw7``, the Makefile's ``$(IW7)`` target; another
  folder through ``$STS_IPYWIDGETS7``). Without that copy the test fails and says how to make it.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from chapter_panels import panel_builders

ROOT = Path(__file__).resolve().parents[2]
IW7 = Path(os.environ.get("STS_IPYWIDGETS7", ROOT / ".venv" / "iw7"))

# Names in ipywidgets 8.1 that ipywidgets 7.7.1 lacks (computed by diffing every widget class's trait
# names and the package's exports between the two versions).
IPYWIDGETS8_ONLY = {
    # widget classes
    "ColorsInput",
    "DatetimePicker",
    "FloatsInput",
    "IntsInput",
    "NaiveDatetimePicker",
    "Stack",
    "TagsInput",
    "TimePicker",
    "TypedTuple",
    # traits no 7.7 widget has (keywords, Layout properties, style keys)
    "behavior",
    "border_bottom",
    "border_left",
    "border_right",
    "border_top",
    "description_allow_html",
    "font_family",
    "font_size",
    "font_style",
    "font_variant",
    "playing",
    "repeat",
    "tabbable",
    "text_color",
    "text_decoration",
    "titles",
    # in 7.7 only Button and ToggleButton have `tooltip`; the others have `description_tooltip`
    "tooltip",
}
# Too common elsewhere to scan for (``tensor.repeat``): the built panels are checked for them instead.
NOT_SCANNED = {"repeat"}

# Versions Colab ships (its runtime of 2025: ipywidgets 7.7.1), and ipywidgets 8 for a runtime that moves on.
COLAB = {
    "torch": "2.6.0",
    "numpy": "2.0.2",
    "matplotlib": "3.10.0",
    "seaborn": "0.13.2",
    "tqdm": "4.67.1",
    "ipywidgets": "7.7.1",
}


def _widget_modules() -> list[Path]:
    return sorted(p for p in (ROOT / "sts_lib").rglob("*.py") if "ipywidgets" in p.read_text())


def test_requirements_accept_colabs_versions():
    tomllib = pytest.importorskip("tomllib")
    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["widgets"]]
    for r in reqs:
        assert r.name in COLAB, f"{r.name} is not preinstalled on Colab: the install cell would add it"
        assert r.specifier.contains(COLAB[r.name]), f"{r} would replace Colab's {r.name} {COLAB[r.name]}"
    widgets = next(r for r in reqs if r.name == "ipywidgets")
    for v in ("7.7.1", "8.0.0", "8.1.9"):
        assert widgets.specifier.contains(v), f"{widgets} rejects ipywidgets {v}"


def _install_lines() -> list[tuple[str, str]]:
    """(file, line) for each line that installs something with pip: the ``%pip install ...`` of each install cell
    (and any other pip or ``!pip`` call, which the test then refuses)."""
    wanted = re.compile(r"^\s*[%!]pip\b|\bpip\b.*\binstall\b")
    lines = []
    for md in sorted((ROOT / "book" / "src").glob("*.md")):
        lines += [(md.name, ln) for ln in md.read_text().splitlines() if wanted.search(ln)]
    for nb in sorted((ROOT / "exercises" / "source").glob("*.ipynb")):
        for cell in json.loads(nb.read_text())["cells"]:
            if cell["cell_type"] == "code":
                src = "".join(cell["source"])
                lines += [(nb.name, ln) for ln in src.splitlines() if wanted.search(ln)]
    return lines


def test_install_cells_only_add_sts_lib():
    lines = _install_lines()
    sources = len(list((ROOT / "book" / "src").glob("[0-9][0-9]_*.md"))) + len(
        list((ROOT / "exercises" / "source").glob("*.ipynb"))
    )
    assert len(lines) == sources, f"expected one %pip install in each of {sources} install cells: {lines}"
    for where, line in lines:
        assert not re.search(r"(^|[\s\"])(-U|--upgrade|--force-reinstall|--upgrade-strategy)\b", line), (where, line)
        # `%pip install`, options only, then the one requirement (quoted: the shell reads it as one word)
        command, _, rest = line.strip().partition(" install ")
        targets = re.findall(r'"([^"]+)"', rest)
        options = re.sub(r'"[^"]*"', "", rest).split()
        assert command == "%pip" and len(targets) == 1 and all(t.startswith("-") for t in options), (
            f"{where} installs more than sts-lib: {line.strip()}"
        )
        assert re.fullmatch(r"sts-lib(\[widgets\])? @ git\+https://\S+", targets[0]), (where, line)


def test_widget_modules_use_no_ipywidgets8_only_names():
    modules = _widget_modules()
    assert ROOT / "sts_lib" / "chapters" / "panel.py" in modules, modules  # the one module that builds widgets
    found = []
    for path in modules:
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Attribute):
                names = [node.attr]
            elif isinstance(node, ast.keyword) and node.arg:
                names = [node.arg]
            elif isinstance(node, ast.Dict):  # style={"...": ...} and layout dicts
                names = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            elif isinstance(node, (ast.ImportFrom, ast.Import)):
                names = [a.name for a in node.names]
            found += [
                f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n in IPYWIDGETS8_ONLY - NOT_SCANNED
            ]
    assert not found, f"ipywidgets-8-only names (Colab ships 7.7.1): {found}"


# -- building every panel ---------------------------------------------------------------------
def build_every_panel() -> dict:
    """Every chapter's panel (a FigurePanel), built small, with one control moved as a user would move it:
    ``module.builder`` -> panel. Each move must redraw the panel's one figure."""
    from sts_lib.chapters import ch3_dynamics_widgets as wdyn
    from sts_lib.chapters import ch4_positional_widgets as wpos
    from sts_lib.chapters import ch5_length as wlen
    from sts_lib.chapters import ch5_length_widgets as wlenw
    from sts_lib.chapters import ch6_related_widgets as wrel
    from sts_lib.chapters import ch6_scan_snap as ss
    from sts_lib.chapters.ch1_task import instance_explorer
    from sts_lib.chapters.ch2_fcn_widgets import bound_explorer

    runs = wlen.train_length_runs(
        wlen.LengthConfig(steps=10, batch_size=32, log_every=10, eval_batch=32, eval_lengths=(30,), eval_qs=(5,))
    )
    panels = {
        "ch1_task.instance_explorer": (instance_explorer(T=8, q=2, d=3), "T", 10),
        "ch2_fcn_widgets.bound_explorer": (bound_explorer(T=8, d=3, q=2, width=10), "width", 12),
        "ch3_dynamics_widgets.dynamics_widget": (wdyn.dynamics_widget(T=8, q=2, steps=100, lr_W=0.3, lr_V=1.0), "q", 3),
        "ch4_positional_widgets.positional_widget": (
            wpos.positional_widget(m=16, T=16, q=2, sampler="stochastic_onehot"),
            "q",
            3,
        ),
        "ch5_length_widgets.length_widget": (
            wlenw.length_widget(runs, wlenw.LengthExplorer(runs, lengths=[20, 40])),
            "T_test",
            30,
        ),
        "ch6_related_widgets.scan_snap_widget": (
            wrel.scan_snap_widget(ss.lr_ratio_sweep((1.0, 10.0), ss.ScanSnapConfig(steps=10, n_records=4))),
            "ratio",
            10.0,
        ),  # it opens on the smallest ratio
    }
    out = {}
    for name, (panel, control, value) in panels.items():
        fig, png = panel.figure, panel.image.value
        panel.inputs[control].value = value
        assert panel.error is None, f"{name}: {panel.error}"
        assert panel.figure is fig and panel.image.value != png, f"{name}: moving {control} did not redraw"
        out[name] = panel
    return out


def _tree(widget):
    yield widget
    for name in ("layout", "style"):
        sub = getattr(widget, name, None)
        if sub is not None and hasattr(sub, "keys"):
            yield sub
    for child in getattr(widget, "children", ()):
        yield from _tree(child)


def check_every_panel() -> dict:
    """Build every panel with unrecognised widget arguments as errors; report per panel what was checked."""
    import ipywidgets

    from sts_lib.chapters.panel import figure_png

    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="Passing unrecognized arguments", category=DeprecationWarning)
        panels = build_every_panel()
    report = {"ipywidgets": ipywidgets.__version__, "panels": {}}
    for name, panel in panels.items():
        widgets = list(_tree(panel.widget))
        stray = [f"{type(w).__name__}.{k}" for w in widgets for k in vars(w) if k in IPYWIDGETS8_ONLY]
        assert not stray, f"{name}: ipywidgets-8-only traits set as plain attributes: {stray}"
        state = [w.get_state() for w in widgets]  # what the front end receives: every trait serialises
        assert state and all(isinstance(s, dict) for s in state)
        images = [w for w in widgets if type(w).__name__ == "Image"]
        assert all(len(im.value) > 1000 for im in images), f"{name}: an empty picture"
        # The idiom: the picture is exactly what the draw function alone gives for the controls' values.
        assert panel.image.value == figure_png(panel.draw(None, **panel.values)), f"{name}: draw is not pure"
        report["panels"][name] = len(widgets)
    return report


def test_every_panel_builds_on_installed_ipywidgets():
    pytest.importorskip("ipywidgets")
    report = check_every_panel()
    assert set(report["panels"]) == set(panel_builders()), report  # every builder of the library, and nothing else
    assert len(report["panels"]) >= 6


def test_every_panel_builds_on_ipywidgets_7_7():
    if not (IW7 / "ipywidgets" / "__init__.py").is_file():
        pytest.fail(
            f"no ipywidgets 7.7 copy in {IW7}: "
            f"`make {IW7.relative_to(ROOT) if IW7.is_relative_to(ROOT) else IW7}/.stamp` "
            "(or `make test`) installs it there"
        )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(IW7), str(ROOT), str(ROOT / "tests" / "integration"), str(ROOT / "tests" / "helpers")]
        ),
        "MPLBACKEND": "Agg",
        "OMP_NUM_THREADS": "1",
    }
    code = (
        "import json, torch; torch.set_num_threads(1); import test_widgets_colab as t; "
        "print('REPORT', json.dumps(t.check_every_panel()))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(proc.stdout.split("REPORT ", 1)[1])
    assert report["ipywidgets"].startswith("7.7"), report  # 7.7 really shadowed the installed 8
    assert set(report["panels"]) == set(panel_builders()), report
