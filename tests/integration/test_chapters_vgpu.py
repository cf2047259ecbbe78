"""Every chapter notebook runs on the virtual accelerator, as it would on a Colab GPU.

Each ``book/*.ipynb`` is executed with one cell put in front of it that installs
``sts_lib.testing.virtual_accelerator`` and makes its device the process-wide default
(``sts.set_default_device``), exactly what a learner's ``sts.set_default_device("cuda")``
does on a GPU runtime. The device refuses to mix with CPU tensors and refuses ``.numpy()``
like CUDA, so a chapter that would crash on a GPU crashes here. Nothing is written back to
the notebooks. Every training run is cut to a few steps (:func:`~sts_lib.testing.quick.shorten_training`):
a placement slip shows in the first step, and the full-length execution is the book build's.

The chapters share one kernel (the fixture ``kernel``), one after another, each from an empty namespace
(``%reset -f`` in its first cell), so a chapter cannot lean on another's names; after a chapter fails, the next
one gets a fresh kernel (:class:`SharedKernel`). Started once rather than nine times, the module saves a kernel's
start and its imports per chapter (torch, matplotlib, the accelerator's dispatch): 71 s against 43 s for the nine
chapters on a quiet machine here. Each chapter in a fresh process of its own is what the book build runs (on the
CPU, at full length).
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


def _kernel_env() -> dict:
    return dict(
        os.environ,
        MPLBACKEND="Agg",
        PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
    )


def run_on_virtual_accelerator(path: Path, km, timeout: int = 600):
    """Execute the notebook at ``path`` on the virtual accelerator, in the kernel of ``km`` (started by the first
    notebook that runs in it; its namespace emptied first); return the notebook (outputs filled)."""
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell("%reset -f\n" + PRELUDE + SHORTEN))
    client = nbclient.NotebookClient(
        nb, km=km, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    try:
        client.execute(env=_kernel_env())
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
    finally:
        if client.kc is not None:
            client.kc.stop_channels()  # the kernel stays; this chapter's connection to it goes
    return nb


class SharedKernel:
    """One kernel for the chapters of this module, started by the first chapter that runs in it; after a chapter
    fails (its state, or a dead kernel, is not carried on) the next one starts a fresh kernel."""

    def __init__(self):
        self.km, self.failed = None, False

    def run(self, path: Path):
        from jupyter_client.manager import AsyncKernelManager  # nbclient's own kind: it notices a kernel's death

        if self.failed:
            self.close()
        if self.km is None:
            self.km = AsyncKernelManager(kernel_name="python3")
        self.failed = True
        nb = run_on_virtual_accelerator(path, self.km)
        self.failed = False
        return nb

    def close(self) -> None:
        from jupyter_core.utils import run_sync

        if self.km is not None and self.km.has_kernel:
            run_sync(self.km.shutdown_kernel)(now=True)
        self.km = None  # a manager shut down cannot start another kernel


@pytest.fixture(scope="module")
def kernel():
    shared = SharedKernel()
    yield shared
    shared.close()


def test_every_chapter_is_found():
    assert len(CHAPTERS) >= 9, CHAPTERS


@pytest.mark.slow
@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_chapter_runs_on_the_virtual_accelerator(path, kernel):
    t0 = time.perf_counter()
    nb = kernel.run(path)
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


def test_a_chapter_in_the_shared_kernel_cannot_use_the_last_ones_names(kernel, tmp_path):
    """The shared kernel starts each chapter from an empty namespace: a notebook that uses a name only an earlier
    one defined fails, as it would in a kernel of its own; and after a kernel dies, the next chapter gets a new one."""
    cells = ["left_behind = torch.zeros(2)", "print(left_behind)", "import os\nos._exit(1)", "print('fresh')"]
    for i, code in enumerate(cells):
        nb = nbformat.v4.new_notebook(
            cells=[nbformat.v4.new_code_cell("import torch"), nbformat.v4.new_code_cell(code)]
        )
        nbformat.write(nb, tmp_path / f"{i}.ipynb")
    kernel.run(tmp_path / "0.ipynb")
    with pytest.raises(pytest.fail.Exception, match="NameError: name 'left_behind' is not defined"):
        kernel.run(tmp_path / "1.ipynb")
    with pytest.raises(nbclient.exceptions.DeadKernelError):
        kernel.run(tmp_path / "2.ipynb")
    assert "fresh" in kernel.run(tmp_path / "3.ipynb").cells[2].outputs[0]["text"]
