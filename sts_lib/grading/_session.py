"""One submitted notebook in its own (sandboxed) kernel: run it under time limits, then call its functions.

:class:`KernelSession` runs one student's notebook in a fresh kernel (a :class:`~._process.KernelProcess`: the
private copy of the files, the sandbox, the sockets). It executes the notebook's code cells one by one (an error
does not stop the run; a cell that exceeds ``cell_timeout`` is interrupted; the whole run stops at ``timeout``),
and survives kernels that hang or die: it restarts the kernel and re-executes the notebook without the offending
cell, up to ``max_restarts`` times. :class:`RemoteFunction` is the callable handed to a checker in place of the
learner's function: each call ships pickled inputs to the kernel and gets back a value through the safe wire
format of :mod:`._wire`.
"""

from __future__ import annotations

import ast
import base64
import pickle
import secrets
import time

from ..exercises import Missing, Opaque, StudentError
from . import sandbox as sb
from ._process import KernelProcess
from ._wire import MAX_BYTES, WireError, loads, safe_decode


class KernelSession:
    """A kernel running one submitted notebook (use as a context manager).

    ``cells`` are the notebook's code cells (already read by the grader), ``files`` the
    student's files (name -> bytes) for the kernel's private working copy, ``sandbox`` the
    path of ``bwrap`` (None: no sandbox). When the grader runs as root, each sandboxed kernel
    (restarts included) drops to a fresh unprivileged user of its own (:func:`.sandbox.new_uid`).
    """

    def __init__(
        self,
        cells: list[str],
        files: dict[str, bytes],
        *,
        timeout: float = 600.0,
        cell_timeout: float = 60.0,
        max_restarts: int = 2,
        sandbox: str | None = None,
        limits: sb.Limits | None = None,
    ):
        self.cells = list(cells)
        self.timeout, self.cell_timeout = float(timeout), float(cell_timeout)
        self.max_restarts = int(max_restarts)
        self.log: list[str] = []  # what happened, for the instructor's report
        self.skip: set[int] = set()  # cells that hung or killed the kernel
        self.restarts = 0
        self._agent = f"_sts_grader_{secrets.token_hex(6)}"
        self.kernel = KernelProcess(files, sandbox=sandbox, limits=limits)

    # -- lifecycle ------------------------------------------------------------------------------
    def __enter__(self) -> KernelSession:
        try:
            self._start()
            self.run_notebook()
        except BaseException:
            self.close()  # no kernel, socket or folder outlives a failed start
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _start(self) -> None:
        try:
            why = self.kernel.start()
        except RuntimeError as e:
            if "died while starting" not in str(e):
                raise
            # Without the sandbox the kernel talks over TCP, on ports jupyter_client found free and let go for the
            # kernel to bind: a kernel another grading job starts at the same moment can take one first. Once more,
            # so that the race costs no student a grade (a second death is the submission's: the caller says so).
            self.log.append("the kernel stopped while starting; starting it once more")
            self.kernel.stop()
            why = self.kernel.start()
        if why:
            self.log.append(f"preparing the kernel failed ({why})")

    def close(self) -> None:
        self.kernel.close()

    def _restart(self, why: str) -> bool:
        """Restart the kernel and re-run the notebook (without skipped cells); False when out of restarts."""
        if self.restarts >= self.max_restarts:
            self.log.append(f"{why}; no restarts left")
            return False
        self.restarts += 1
        self.log.append(f"{why}; restarting the kernel ({self.restarts}/{self.max_restarts})")
        self.kernel.stop()
        try:
            self._start()
        except Exception as e:  # noqa: BLE001 - the session is then dead: every later call says so
            self.log.append(f"the kernel could not be restarted ({type(e).__name__}: {str(e)[:120]})")
            self.kernel.stop()
            return False
        self.run_notebook()
        return True

    # -- execution ------------------------------------------------------------------------------
    def run_notebook(self) -> None:
        """Execute every code cell (except skipped ones) within the time limits."""
        start = time.monotonic()
        for k, source in enumerate(self.cells):
            if k in self.skip or not source.strip():
                continue
            left = self.timeout - (time.monotonic() - start)
            if left <= 0:
                self.log.append(
                    f"notebook time limit ({self.timeout:g} s) reached before cell {k + 1}; "
                    "the remaining cells were not run"
                )
                return
            status, content = self.kernel.execute(source, min(self.cell_timeout, left))
            if status == "error":
                self.log.append(
                    f"cell {k + 1} raised {str(content.get('ename'))[:60]}: "
                    f"{' '.join(str(content.get('evalue')).split())[:120]}"
                )
            elif status == "timeout":
                self.skip.add(k)
                if self.kernel.interrupt():
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
        status, content = self.kernel.execute(
            setup + code, timeout, store_history=False, user_expressions={"r": f"{self._agent}.LAST"}
        )
        if status == "timeout":
            if not self.kernel.interrupt():
                self._restart("a function did not stop when interrupted")
            raise TimeoutError(f"did not finish within {timeout:g} s")
        if status == "dead":
            self._restart("the kernel died while running a function")
            raise StudentError(
                "KernelDied",
                "the kernel died while running your function (os._exit? out of memory? too many processes?)",
            )
        if status == "error":
            if content.get("ename") == "KeyboardInterrupt":
                raise TimeoutError(f"did not finish within {timeout:g} s")
            raise StudentError(str(content.get("ename"))[:60], str(content.get("evalue"))[:300])
        expr = content.get("user_expressions", {})
        expr = expr.get("r", {}) if isinstance(expr, dict) else {}
        text = expr.get("data", {}).get("text/plain", "") if isinstance(expr, dict) else ""
        if not isinstance(text, str) or len(text) > MAX_BYTES * 4 // 3 + 16:
            return {"status": "unreadable", "why": "the reply was too large or not text"}
        try:
            return loads(ast.literal_eval(text))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError, WireError) as e:
            return {"status": "unreadable", "why": f"{type(e).__name__}"}

    def defined(self, names: list[str]) -> set[str]:
        """Which of ``names`` are callables in the notebook's namespace."""
        if not self.kernel.running:
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
            return Opaque("value the grader could not read back (malformed reply)")
        status = out.get("status")
        if status == "ok":
            try:
                return safe_decode(out.get("value"))
            except WireError as e:
                return Opaque(f"value the grader could not read back ({e})")
        if status == "toolarge":
            size = out.get("bytes") if isinstance(out.get("bytes"), int) else 0
            return Opaque(f"value of {size / 2**20:.0f} MB, more than the grader reads ({MAX_BYTES >> 20} MB)")
        if status == "unreadable":
            return Opaque(f"value the grader could not read back ({str(out.get('why'))[:80]})")
        if status == "notimpl":
            raise NotImplementedError(str(out.get("evalue", ""))[:300])
        if status == "missing":
            raise Missing(f"function {name} not defined")
        line = out.get("line")
        raise StudentError(
            str(out.get("ename", "Error"))[:60],
            str(out.get("evalue", ""))[:500],
            line if isinstance(line, int) else None,
        )


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
