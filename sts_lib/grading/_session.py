"""One submitted notebook in its own kernel: run it under time limits, then call its functions.

:class:`KernelSession` starts a fresh ``python3`` kernel in an empty working
directory, executes the notebook's code cells one by one (an error does not stop
the run; a cell that exceeds ``cell_timeout`` is interrupted; the whole run stops at
``timeout``), and survives kernels that hang or die: it restarts the kernel and
re-executes the notebook without the offending cell, up to ``max_restarts`` times.
:class:`RemoteFunction` is the callable handed to a checker in place of the
learner's function: each call ships pickled inputs to the kernel and gets back a
value through the safe wire format of :mod:`._wire`.
"""

from __future__ import annotations

import ast
import base64
import os
import pickle
import queue
import secrets
import subprocess
import tempfile
import time
from pathlib import Path

import nbformat

from ..exercises import GRADING_ENV
from ..exercises._core import Missing, StudentError
from ._wire import WireError, decode, loads

_GRACE = 5.0          # seconds a kernel gets to answer an interrupt before it is restarted
_PREAMBLE = "import numpy, torch, matplotlib.pyplot, sts_lib, sts_lib.exercises, sts_lib.grading._kernel"


class KernelSession:
    """A kernel running one submitted notebook (use as a context manager)."""

    def __init__(self, path: str | Path, *, timeout: float = 600.0, cell_timeout: float = 60.0,
                 max_restarts: int = 2, kernel_name: str = "python3"):
        self.path = Path(path)
        self.timeout, self.cell_timeout = float(timeout), float(cell_timeout)
        self.max_restarts, self.kernel_name = int(max_restarts), kernel_name
        self.log: list[str] = []              # what happened, for the instructor's report
        self.skip: set[int] = set()           # cells that hung or killed the kernel
        self.restarts = 0
        self.cells = self._read_cells()
        self._tmp = tempfile.TemporaryDirectory(prefix="sts-grade-")
        self._agent = f"_sts_grader_{secrets.token_hex(6)}"
        self.km = self.kc = None

    # -- lifecycle ------------------------------------------------------------------------------
    def _read_cells(self) -> list[str]:
        self.readable = False
        try:
            nb = nbformat.read(str(self.path), as_version=4)
        except Exception as e:  # noqa: BLE001 - a corrupt file is the submission's problem
            self.log.append(f"could not read the notebook: {type(e).__name__}: {str(e)[:120]}")
            return []
        self.readable = True
        return [c.source for c in nb.cells if c.get("cell_type") == "code"]

    def __enter__(self) -> "KernelSession":
        if self.readable:                     # an unreadable file defines nothing: no kernel needed
            self._start()
            self.run_notebook()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _start(self) -> None:
        from jupyter_client import KernelManager

        env = dict(os.environ, **{GRADING_ENV: "1", "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1",
                                  "MKL_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"})
        self.km = KernelManager(kernel_name=self.kernel_name)
        self.km.start_kernel(cwd=self._tmp.name, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)
        # Import the heavy libraries first, outside the notebook's time limits: a cell that merely
        # imports torch must not be charged for it (nor be interrupted half-way through the import).
        status, _ = self._execute(_PREAMBLE, 300.0, store_history=False)
        if status != "ok":
            self.log.append(f"importing the libraries in the kernel failed ({status})")

    def close(self) -> None:
        if self.kc is not None:
            self.kc.stop_channels()
        if self.km is not None and self.km.has_kernel:
            try:
                self.km.shutdown_kernel(now=True)
            except Exception:  # noqa: BLE001 - best effort at the end
                pass
        self._tmp.cleanup()

    def _restart(self, why: str) -> bool:
        """Restart the kernel and re-run the notebook (without skipped cells); False when out of restarts."""
        if self.restarts >= self.max_restarts:
            self.log.append(f"{why}; no restarts left")
            return False
        self.restarts += 1
        self.log.append(f"{why}; restarting the kernel ({self.restarts}/{self.max_restarts})")
        self.close_channels_only()
        try:
            self.km.shutdown_kernel(now=True)
        except Exception:  # noqa: BLE001
            pass
        self._start()
        self.run_notebook()
        return True

    def close_channels_only(self) -> None:
        if self.kc is not None:
            self.kc.stop_channels()

    # -- execution ------------------------------------------------------------------------------
    def _execute(self, code: str, timeout: float, *, user_expressions=None, store_history=True):
        """Run ``code``; returns ('ok'|'error'|'timeout'|'dead', reply content or None)."""
        msg_id = self.kc.execute(code, store_history=store_history, allow_stdin=False, stop_on_error=False,
                                 user_expressions=user_expressions or {})
        deadline = time.monotonic() + timeout
        while True:
            self._drain_iopub()
            try:
                reply = self.kc.get_shell_msg(timeout=0.2)
            except queue.Empty:
                if not self.km.is_alive():
                    return "dead", None
                if time.monotonic() > deadline:
                    return "timeout", None
                continue
            if reply.get("parent_header", {}).get("msg_id") == msg_id:
                content = reply["content"]
                return ("ok" if content.get("status") == "ok" else "error"), content

    def _drain_iopub(self) -> None:
        # The learner's output is not needed; reading it keeps the queue from growing.
        while True:
            try:
                self.kc.get_iopub_msg(timeout=0)
            except queue.Empty:
                return

    def _interrupt(self) -> bool:
        """Interrupt a running cell; True if the kernel answered within the grace period."""
        self.km.interrupt_kernel()
        deadline = time.monotonic() + _GRACE
        while time.monotonic() < deadline:
            self._drain_iopub()
            try:
                reply = self.kc.get_shell_msg(timeout=0.2)
            except queue.Empty:
                if not self.km.is_alive():
                    return False
                continue
            if reply.get("msg_type") == "execute_reply":
                return True
        return False

    def run_notebook(self) -> None:
        """Execute every code cell (except skipped ones) within the time limits."""
        start = time.monotonic()
        for k, source in enumerate(self.cells):
            if k in self.skip or not source.strip():
                continue
            left = self.timeout - (time.monotonic() - start)
            if left <= 0:
                self.log.append(f"notebook time limit ({self.timeout:g} s) reached before cell {k + 1}; "
                                "the remaining cells were not run")
                return
            status, content = self._execute(source, min(self.cell_timeout, left))
            if status == "error":
                self.log.append(f"cell {k + 1} raised {content.get('ename')}: {str(content.get('evalue'))[:120]}")
            elif status == "timeout":
                self.skip.add(k)
                if self._interrupt():
                    self.log.append(f"cell {k + 1} exceeded {min(self.cell_timeout, left):g} s and was interrupted")
                else:
                    self._restart(f"cell {k + 1} did not stop when interrupted")
                    return
            elif status == "dead":
                self.skip.add(k)
                self._restart(f"the kernel died in cell {k + 1}")
                return

    # -- talking to the agent -------------------------------------------------------------------
    def _agent_call(self, code: str, timeout: float):
        """Run agent code, return the decoded LAST value; raises TimeoutError or StudentError."""
        setup = f"import sts_lib.grading._kernel as {self._agent}\n"
        status, content = self._execute(setup + code, timeout, store_history=False,
                                        user_expressions={"r": f"{self._agent}.LAST"})
        if status == "timeout":
            if not self._interrupt():
                self._restart("a function did not stop when interrupted")
            raise TimeoutError(f"did not finish within {timeout:g} s")
        if status == "dead":
            self._restart("the kernel died while running a function")
            raise StudentError("KernelDied", "the kernel died while running your function (os._exit? out of memory?)")
        if status == "error":
            if content.get("ename") == "KeyboardInterrupt":
                raise TimeoutError(f"did not finish within {timeout:g} s")
            raise StudentError(str(content.get("ename")), str(content.get("evalue"))[:300])
        expr = content.get("user_expressions", {}).get("r", {})
        try:
            text = ast.literal_eval(expr.get("data", {}).get("text/plain", ""))
            return loads(text)
        except (ValueError, SyntaxError, WireError) as e:
            raise StudentError("GraderError", f"could not read the result back ({e})") from None

    def defined(self, names: list[str]) -> set[str]:
        """Which of ``names`` are callables in the notebook's namespace."""
        if self.kc is None:
            return set()
        try:
            found = self._agent_call(f"{self._agent}.defined(globals(), {list(names)!r})", 60.0)
        except (TimeoutError, StudentError) as e:
            self.log.append(f"could not list the notebook's functions: {e}")
            return set()
        return {n for n in found if n in names} if isinstance(found, list) else set()

    def call(self, name: str, args: tuple, kwargs: dict, timeout: float):
        payload = base64.b64encode(pickle.dumps((args, kwargs))).decode()
        out = self._agent_call(f"{self._agent}.call(globals(), {name!r}, {payload!r})", timeout)
        if not isinstance(out, dict):
            raise StudentError("GraderError", "malformed result")
        status = out.get("status")
        if status == "ok":
            try:
                return decode(out.get("value"))
            except WireError as e:
                raise StudentError("GraderError", f"could not read the returned value back ({e})") from None
        if status == "notimpl":
            raise NotImplementedError(str(out.get("evalue", "")))
        if status == "missing":
            raise Missing(f"function {name} not defined")
        line = out.get("line")
        raise StudentError(str(out.get("ename", "Error"))[:60], str(out.get("evalue", ""))[:500],
                           line if isinstance(line, int) else None)


class RemoteFunction:
    """Stands in for the learner's function ``name``; all calls share one time budget."""

    def __init__(self, session: KernelSession, name: str, budget: float):
        self.session, self.name, self.__name__ = session, name, name
        self.deadline = time.monotonic() + budget
        self.budget = budget

    def __call__(self, *args, **kwargs):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"did not finish within {self.budget:g} s")
        try:
            return self.session.call(self.name, args, kwargs, left)
        except TimeoutError:
            raise TimeoutError(f"did not finish within {self.budget:g} s") from None
