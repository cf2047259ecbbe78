"""A chapter's set-up cell on a Colab-like kernel installs sts_lib from the course's home and keeps Colab's torch
and ipywidgets 7.7.1 (issue 24, item 2); when the install fails, the learner reads pip's own error, and the import
after it fails once, naming sts_lib (issue 47: the cell is a guarded ``%pip install``, six lines in all).

The kernel is IPython (``python -m IPython -c``, which reads ``%pip`` as a kernel does) in a fresh venv. As on
Colab, torch, numpy, matplotlib, seaborn, tqdm and ipywidgets 7.7.1 are already there: a ``.pth`` file points at a
folder of symlinks to the project's ``.venv`` packages (less sts_lib and ipywidgets 8) and to ``.venv/iw7``
(ipywidgets 7.7.1, ``make test`` puts it there). Colab's classic ``notebook`` server, which widgetsnbextension 3.6
requires, stands there as metadata only: nothing here runs it. The home is a local git repository of the project's
files (``file://``), written into the cell by the same :func:`~sts_lib.publish.home.rewrite` the sync uses. pip runs
offline (``PIP_NO_INDEX``; the build uses the setuptools already there instead of fetching one), so the test needs
no network and takes a few seconds; anything missing makes pip fail, and the test with it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import jupytext
import pytest

from sts_lib.publish.home import Home, rewrite

ROOT = Path(__file__).resolve().parents[2]
IW7 = ROOT / ".venv" / "iw7"
SITE = Path(sysconfig.get_paths()["purelib"])
NOT_ON_COLAB = ("__editable__", "sts_lib", "ipywidgets", "widgetsnbextension", "jupyterlab_widgets", "__pycache__")
PY = f"python{sys.version_info.major}.{sys.version_info.minor}"


def _link_all(src: Path, dst: Path, skip=()) -> None:
    for entry in src.iterdir():
        if not entry.name.startswith(skip) and not entry.name.endswith(".pth") and entry.name not in ("etc", "share"):
            (dst / entry.name).symlink_to(entry)


@pytest.fixture(scope="module")
def preinstalled(tmp_path_factory):
    """(the folder of what Colab has preinstalled, the local home)."""
    assert (IW7 / "ipywidgets").is_dir(), f"{IW7} is missing ipywidgets 7.7.1: run `make {IW7}/.stamp`"
    tmp = tmp_path_factory.mktemp("colab")
    links = tmp / "preinstalled"
    links.mkdir()
    _link_all(SITE, links, NOT_ON_COLAB)
    _link_all(IW7, links)
    (links / "notebook-6.5.7.dist-info").mkdir()
    (links / "notebook-6.5.7.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: notebook\nVersion: 6.5.7\n"
    )

    repo = tmp / "home"  # the course's home: a git repository of the project's files
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\0")
    for rel in filter(None, files):
        if (ROOT / rel).is_file():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_bytes((ROOT / rel).read_bytes())
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid", "-C", str(repo)]
    for cmd in (["init", "-q", "-b", "spring"], ["add", "-A"], ["commit", "-q", "-m", "course"]):
        subprocess.run(git + cmd, check=True)
    return links, Home(f"file://{repo}", "spring")


@pytest.fixture
def colab(preinstalled, tmp_path):
    """(python of a fresh Colab-like kernel, its environment, the local home, pip's log file)."""
    links, home = preinstalled
    venv = tmp_path / "kernel"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (venv / "lib" / PY / "site-packages" / "preinstalled.pth").write_text(f"{links}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(
        PIP_NO_INDEX="1", PIP_NO_BUILD_ISOLATION="0", PIP_CONFIG_FILE=os.devnull, STS_DEVICE="cpu", MPLBACKEND="Agg"
    )
    return venv / "bin" / "python", env, home, tmp_path / "pip.log"


def _chapter_cells(n: int) -> list[str]:
    return [c.source for c in jupytext.read(ROOT / "book" / "01_task.ipynb").cells if c.cell_type == "code"][:n]


def _run(python: Path, env: dict, code: str, *, ipython: bool = False) -> subprocess.CompletedProcess:
    # Not from the project's folder: `python -c` puts the working directory first on sys.path. IPython, as a
    # notebook's kernel does, reads the cell's `%pip` and exits with 1 when the cell raises.
    shell = ["-m", "IPython", "--quick", "--no-banner", "--colors=NoColor"] if ipython else []
    return subprocess.run(
        [str(python), *shell, "-c", code], env=env, capture_output=True, text=True, timeout=120, cwd=python.parent
    )


PROBE = "import torch, ipywidgets; print(torch.__version__, os.path.realpath(torch.__file__), ipywidgets.__version__)"


def test_the_set_up_cell_installs_from_the_home_and_keeps_torch_and_ipywidgets(colab):
    python, env, home, log = colab
    env = {**env, "PIP_LOG": str(log)}  # pip's full log (it also takes a failed git's output off the screen)
    before = _run(python, env, f"import os; {PROBE}")
    assert before.returncode == 0, before.stderr
    version, torch_file, widgets = before.stdout.split()
    assert widgets == "7.7.1" and torch_file.startswith(str(SITE))
    assert _run(python, env, "import sts_lib").returncode == 1  # a fresh kernel: not installed yet

    setup, following = _chapter_cells(2)
    assert '%pip install -q "sts-lib[widgets] @ ' in setup and len(setup.splitlines()) <= 6
    cell = rewrite(setup, home)  # what `make notebooks` writes for this home
    assert f'%pip install -q "sts-lib[widgets] @ {home.pip_url}"' in cell and cell != setup
    run = _run(python, env, f"{cell}\n{following}\nimport os; {PROBE}", ipython=True)
    assert run.returncode == 0, f"the chapter's cells failed on a Colab-like kernel:\n{run.stderr[-3000:]}"
    assert "STSTask" in run.stdout and "cpu" in run.stdout.lower()  # the device line and the next cell's task
    assert run.stdout.split()[-3:] == [version, torch_file, "7.7.1"], "torch or ipywidgets was replaced"

    pip_log = log.read_text()
    installed = [
        ln.split("Successfully installed ")[1].split() for ln in pip_log.splitlines() if "Successfully installed" in ln
    ]
    assert installed == [["sts-lib-0.1.0"]], f"pip installed more than sts_lib: {installed}"
    for name in ("torch", "ipywidgets"):
        assert f"Requirement already satisfied: {name}" in pip_log, f"pip did not keep the {name} it found"
    site = python.parent.parent / "lib" / PY / "site-packages"
    assert sorted(p.name for p in site.iterdir() if not p.name.endswith(".pth")) == [
        "sts_lib",
        "sts_lib-0.1.0.dist-info",
    ]


def test_a_failed_install_shows_pips_error_then_fails_once(colab):
    python, env, home, _ = colab
    missing = Home(f"{home.url}-missing", home.branch)
    run = _run(python, env, rewrite(_chapter_cells(1)[0], missing), ipython=True)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out[-3000:]
    # pip says what went wrong (git's "fatal:" naming the address, pip's "ERROR:"), in its own words (stderr) ...
    assert "fatal:" in run.stderr and missing.url in run.stderr and "ERROR:" in run.stderr, out[-3000:]
    # ... then the cell stops at the import: one error, naming the package (IPython's traceback, on stdout)
    assert out.count("Traceback") == 1 and "During handling" not in out, out[-3000:]
    assert run.stdout.strip().splitlines()[-1] == "ModuleNotFoundError: No module named 'sts_lib'", out[-3000:]
