"""What `make install` leaves behind (the Makefile's ``.stamp-torch`` and ``.stamp-install``), beyond importing.

Every installed module has its bytecode. torch and the packages it pulls in are installed with ``--no-compile`` and
compiled by ``compileall`` on every core; where ``PYTHONDONTWRITEBYTECODE`` is set (it is on the machines that run
this suite) a module left without bytecode is compiled again by every process that imports it. That happened to
sympy, which torch.optim's first optimiser imports (through torch._dynamo): 2.2 s rather than 0.9 s in each
training kernel, and the suite starts dozens.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _without_bytecode(packages: Path) -> list[Path]:
    """The ``.py`` files under ``packages`` that have no bytecode for this Python and that it can compile (a file
    in another version's syntax, which pip also leaves uncompiled, is not counted)."""
    out = []
    for folder, _, files in os.walk(packages):
        for name in files:
            path = Path(folder, name)
            if name.endswith(".py") and not os.path.exists(importlib.util.cache_from_source(str(path))):
                try:
                    compile(path.read_bytes(), str(path), "exec")
                except (SyntaxError, ValueError):
                    continue
                out.append(path)
    return out


def test_every_installed_module_has_its_bytecode():
    if Path(sys.prefix).resolve() != (ROOT / ".venv").resolve():
        pytest.skip("runs in the environment `make install` makes (.venv)")
    packages = Path(sysconfig.get_paths()["purelib"])
    missing = _without_bytecode(packages)
    assert not missing, (
        f"{len(missing)} installed modules have no bytecode (each process that imports one compiles it again), "
        f"e.g. {[str(p.relative_to(packages)) for p in missing[:5]]}: the Makefile's compileall missed them"
    )


def test_a_module_without_bytecode_is_found(tmp_path):
    """The check above can fail: a module with no bytecode is reported, one with bytecode or in a syntax this
    Python cannot compile is not."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "plain.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "compiled.py").write_text("y = 2\n")
    (tmp_path / "pkg" / "future.py").write_text("def f[T](x: T) -> T:\n    return x\n" if sys.version_info < (3, 12)
                                                else "print 'python 2'\n")  # fmt: skip
    import py_compile

    py_compile.compile(str(tmp_path / "pkg" / "compiled.py"))
    assert [p.name for p in _without_bytecode(tmp_path)] == ["plain.py"]
