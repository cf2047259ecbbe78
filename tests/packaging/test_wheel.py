"""The wheel (the packaging tier): ``pip wheel .`` ships the committed results as ``sts_lib/data/results/``, and a
wheel installed outside a clone finds them (what Colab's ``pip install git+...`` gets)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sts_lib import results as R

REPO = Path(__file__).resolve().parents[2]


def _copy_source(dst: Path) -> None:
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md"):
        shutil.copy(REPO / name, dst / name)
    shutil.copytree(REPO / "sts_lib", dst / "sts_lib", ignore=shutil.ignore_patterns("__pycache__", "data"))
    shutil.copytree(REPO / "results", dst / "results", ignore=shutil.ignore_patterns(".runs", ".ckpt"))


@pytest.mark.slow
def test_wheel_ships_the_committed_results(tmp_path):
    """`pip install .` (and Colab's pip install git+...) ships results/ as sts_lib/data/results/."""
    src, whl, site = tmp_path / "src", tmp_path / "whl", tmp_path / "site"
    src.mkdir()
    _copy_source(src)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "-q", "-w", str(whl)],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    (wheel,) = whl.glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        shipped = {n.split("/")[-1]: z.read(n) for n in z.namelist() if n.startswith("sts_lib/data/results/")}
        z.extractall(site)
    committed = {
        p.name: p.read_bytes()
        for p in (REPO / "results").iterdir()
        if p.suffix in (".json", ".png") or p.name == "README.md"
    }
    for summary in (  # the confirmation's summary and the floor test's validation, each in its folder
        REPO / "results" / "confirmation" / "confirmation.json",
        REPO / "results" / "validation" / "floor-test.json",
    ):
        committed[summary.name] = summary.read_bytes()
    assert shipped == committed
    # the installed copy is what load_result finds outside a clone
    away = tmp_path / "elsewhere"
    away.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "STS_RESULTS"} | {"PYTHONPATH": str(site)}
    code = (
        "import sts_lib.results as R; p = R.result_path('fig1-convergence'); print(p); "
        "print(R.history(R.load_result('fig1-convergence'), 'T20-sgd').last('cos_W'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=away, env=env
    ).stdout.split()
    assert Path(out[0]) == site / "sts_lib" / "data" / "results" / "fig1-convergence.json"
    assert float(out[1]) == R.history(R.load_result("fig1-convergence", root=REPO / "results"), "T20-sgd").last("cos_W")
