"""Every chapter notebook runs on the virtual accelerator, as it would on a Colab GPU.

Each ``book/*.ipynb`` is executed with one cell put in front of it that installs
``sts_lib.testing.virtual_accelerator`` and makes its device the process-wide default
(``sts.set_default_device``), exactly what a learner's ``sts.set_default_device("cuda")``
does on a GPU runtime. The device refuses to mix with CPU tensors and refuses ``.numpy()``
like CUDA, so a chapter that would crash on a GPU crashes here. Nothing is written back to
the notebooks. Every training run is cut to a few steps (:func:`~sts_lib.testing.quick.shorten_training`):
a placement slip shows in the first step, and the full-length execution is the book build's.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
#: Training runs are cut to at most QUICK_STEPS steps (the TransformerLens IN_GITHUB idea): this run checks where
#: tensors live, not what training reaches; the book's build executes every chapter at full length.
QUICK_STEPS = 40
PRELUDE = (
    "from sts_lib.testing import virtual_accelerator as _va\n"
    "import sts_lib as _sts\n"
    "_sts.set_default_device(_va.install())\n"
)
SHORTEN = f"from sts_lib.testing.quick import shorten_training as _short\n_short({QUICK_STEPS})"


def run_on_virtual_accelerator(path: Path, timeout: int = 600):
    """Execute the notebook at ``path`` on the virtual accelerator; return it (outputs filled)."""
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(PRELUDE + SHORTEN))
    env = dict(
        os.environ,
        MPLBACKEND="Agg",
        PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
    )
    client = nbclient.NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.km = client.kernel_manager_class(kernel_name="python3", config=client.config)
    try:
        client.execute(env=env)
    except nbclient.exceptions.CellExecutionError:
        # Name the chapter's own cell (the prelude is cell 0) and show its traceback without terminal colours.
        cell = next(
            c
            for c in nb.cells
            if c.cell_type == "code" and any(o.get("output_type") == "error" for o in c.get("outputs", []))
        )
        err = next(o for o in cell.outputs if o.get("output_type") == "error")
        trace = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(err.get("traceback", [])))
        first = cell.source.splitlines()[0] if cell.source else ""
        pytest.fail(
            f"{path.name}: the code cell starting {first!r} failed on the virtual accelerator: "
            f"{err.get('ename')}: {err.get('evalue')}\n{trace[-3000:]}",
            pytrace=False,
        )
    return nb


def test_every_chapter_is_found():
    assert len(CHAPTERS) >= 9, CHAPTERS


@pytest.mark.slow
@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_chapter_runs_on_the_virtual_accelerator(path):
    t0 = time.perf_counter()
    nb = run_on_virtual_accelerator(path)
    device_lines = [
        o.get("text", "")
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "stream"
    ]
    # The set-up cell names the device: the run really happened on the virtual accelerator.
    assert any("vgpu" in line for line in device_lines), "no output names the vgpu device"
    print(f"{path.name}: {time.perf_counter() - t0:.1f} s on vgpu")
