"""One submitted notebook in its own (sandboxed) kernel: run it under time limits, then call its functions.

:class:`KernelSession` starts a fresh ``ipykernel`` for one student: inside the bubblewrap
sandbox of :mod:`.sandbox` when one is given (talking over Unix sockets in a folder shared
with the grader, since the kernel has no network), or as a plain child process otherwise.
It executes the notebook's code cells one by one (an error does not stop the run; a cell
that exceeds ``cell_timeout`` is interrupted; the whole run stops at ``timeout``), and
survives kernels that hang or die: it restarts the kernel and re-executes the notebook
without the offending cell, up to ``max_restarts`` times. Only the shell channel is read,
through sockets whose zmq ``MAXMSGSIZE`` bounds every message *while* it is received;
the kernel's printed output (IOPub) is never subscribed to. :class:`RemoteFunction` is the
callable handed to a checker in place of the learner's function: each call ships pickled
inputs to the kernel and gets back a value through the safe wire format of :mod:`._wire`.
"""

from __future__ import annotations

import ast
import base64
import json
import os
import pickle
import queue
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import zmq

import sts_lib

from ..exercises import GRADING_ENV, Missing, Opaque, StudentError
from . import sandbox as sb
from ._wire import MAX_BYTES, WireError, loads, safe_decode

_GRACE = 5.0  # seconds a kernel gets to answer an interrupt before it is restarted
# What every exercise uses; not matplotlib (no exercise plots: a notebook that does pays its import, about 0.3 s,
# in its own cell), which would add that to every kernel of a class.
_IMPORTS = "import numpy, torch, sts_lib, sts_lib.exercises, sts_lib.grading._kernel"
# In the sandbox the student's files are a read-only copy at /submission: copy them to the
# writable working folder, so a notebook that opens its own data files finds them.
_COPY_IN = (
    "def _sts_copy_in(src):\n    import os, shutil\n    for d, _, fs in os.walk(src):\n"
    "        t = os.path.relpath(d, src)\n        os.makedirs(t, exist_ok=True)\n"
    "        for f in fs:\n            shutil.copyfile(os.path.join(d, f), os.path.join(t, f))\n"
    f"_sts_copy_in({sb.SUBMISSION_DIR!r})\ndel _sts_copy_in\n"
)


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
        self.sandbox, self.limits = sandbox, limits or sb.Limits()
        self.uid: int | None = None  # the sandbox user of the running kernel (grader is root)
        self.log: list[str] = []  # what happened, for the instructor's report
        self.skip: set[int] = set()  # cells that hung or killed the kernel
        self.restarts = 0
        self._root = Path(tempfile.mkdtemp(prefix="sts-grade-"))
        self._agent = f"_sts_grader_{secrets.token_hex(6)}"
        self._write_private_copy(files)
        self.km = self.kc = None
        self._ctx = zmq.Context()
        # Bound every message while it is read, and how many wait unread.
        self._ctx.setsockopt(zmq.MAXMSGSIZE, self.limits.message_mb * 2**20)
        self._ctx.setsockopt(zmq.RCVHWM, 64)

    # -- lifecycle ------------------------------------------------------------------------------
    def _write_private_copy(self, files: dict[str, bytes]) -> None:
        sub = self._root / "submission"
        sub.mkdir()
        for name, data in files.items():
            target = (sub / name).resolve()
            if sub.resolve() not in target.parents:  # never write outside the copy
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        for path in [sub, *sub.rglob("*")]:
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
        os.chmod(self._root, 0o755)

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
        from jupyter_client import KernelManager
        from jupyter_client.kernelspec import KernelSpecManager

        self.uid = sb.new_uid() if self.sandbox and os.geteuid() == 0 else None
        spec, transport = sb.kernel_spec(
            sys.executable,
            submission=str(self._root / "submission"),
            comm_dir=str(self._root / "comm"),
            limits=self.limits,
            uid=self.uid,
            bwrap=self.sandbox,
        )
        kernels = self._root / "kernels"
        (kernels / "sts-grade").mkdir(parents=True, exist_ok=True)
        (kernels / "sts-grade" / "kernel.json").write_text(json.dumps(spec))
        comm = self._root / "comm"
        shutil.rmtree(comm, ignore_errors=True)
        comm.mkdir(mode=0o700)
        kw = dict(
            kernel_name="sts-grade",
            kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)]),
            context=self._ctx,
            transport=transport,
            connection_file=str(comm / "connection.json"),
        )
        if transport == "ipc":
            kw["ip"] = str(comm / "k")
        self.km = KernelManager(**kw)
        self.km.write_connection_file()
        if self.uid is not None:
            os.chown(comm, self.uid, self.uid)
            os.chown(comm / "connection.json", self.uid, self.uid)
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            GRADING_ENV: "1",
            "MPLBACKEND": "Agg",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "PYTHONWARNINGS": "ignore",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONNOUSERSITE": "1",
            "USER": "student",
            "LOGNAME": "student",
        }
        # The kernel imports the very sts_lib the grader runs (the sandbox binds only that folder).
        env["PYTHONPATH"] = str(Path(sts_lib.__file__).resolve().parent.parent)
        if self.sandbox:
            env.update(HOME=sb.SANDBOX_HOME, MPLCONFIGDIR=f"{sb.SANDBOX_HOME}/.matplotlib", TMPDIR="/tmp")
            cwd = str(self._root)
        else:
            env.update(HOME=str(self._root / "submission"), PATH=os.environ.get("PATH", env["PATH"]))
            cwd = str(self._root / "submission")
            os.chmod(cwd, 0o700)
        self.km.start_kernel(cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.kc = self.km.client(context=self._ctx)
        self.kc.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=False)
        self._wait_ready(120.0)
        if self.uid is not None:
            # The sockets exist now: take the shared folder back, so the kernel cannot fill it.
            os.chown(comm, 0, 0)
            os.chmod(comm, 0o755)
        # Import the heavy libraries first, outside the notebook's time limits: a cell that merely
        # imports torch must not be charged for it (nor be interrupted half-way through the import).
        status, content = self._execute((_COPY_IN if self.sandbox else "") + _IMPORTS, 300.0, store_history=False)
        if status != "ok":
            why = f"{content.get('ename')}: {str(content.get('evalue'))[:120]}" if content else status
            self.log.append(f"preparing the kernel failed ({why})")

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg_id = self.kc.kernel_info()
            t_next = time.monotonic() + 1.0
            while time.monotonic() < t_next:
                try:
                    reply = self.kc.get_shell_msg(timeout=0.2)
                except queue.Empty:
                    continue
                if reply.get("parent_header", {}).get("msg_id") == msg_id:
                    return
            if not self.km.is_alive():
                raise RuntimeError("the kernel died while starting")
        raise RuntimeError(f"the kernel did not start within {timeout:g} s")

    def _stop_kernel(self) -> None:
        if self.kc is not None:
            self.kc.stop_channels()
            self.kc = None
        if self.km is not None:
            try:
                if self.km.has_kernel:
                    self.km.shutdown_kernel(now=True)
            except Exception:  # noqa: BLE001 - best effort; the reaper below makes sure
                pass
            try:
                self.km.cleanup_resources()
            except Exception:  # noqa: BLE001
                pass
        if self.uid is not None:
            sb.kill_user_processes(self.uid)

    def close(self) -> None:
        self._stop_kernel()
        self.km = None
        self._ctx.destroy(linger=0)
        shutil.rmtree(self._root, ignore_errors=True)

    def _restart(self, why: str) -> bool:
        """Restart the kernel and re-run the notebook (without skipped cells); False when out of restarts."""
        if self.restarts >= self.max_restarts:
            self.log.append(f"{why}; no restarts left")
            return False
        self.restarts += 1
        self.log.append(f"{why}; restarting the kernel ({self.restarts}/{self.max_restarts})")
        self._stop_kernel()
        try:
            self._start()
        except Exception as e:  # noqa: BLE001 - the session is then dead: every later call says so
            self.log.append(f"the kernel could not be restarted ({type(e).__name__}: {str(e)[:120]})")
            self._stop_kernel()
            return False
        self.run_notebook()
        return True

    # -- execution ------------------------------------------------------------------------------
    def _execute(self, code: str, timeout: float, *, user_expressions=None, store_history=True):
        """Run ``code``; returns ('ok'|'error'|'timeout'|'dead', reply content or None)."""
        if self.kc is None:
            return "dead", None
        msg_id = self.kc.execute(
            code,
            store_history=store_history,
            allow_stdin=False,
            stop_on_error=False,
            user_expressions=user_expressions or {},
        )
        deadline = time.monotonic() + timeout
        while True:
            try:
                reply = self.kc.get_shell_msg(timeout=0.2)
            except queue.Empty:
                if not self.km.is_alive():
                    return "dead", None
                if time.monotonic() > deadline:
                    return "timeout", None
                continue
            if reply.get("parent_header", {}).get("msg_id") == msg_id:
                content = reply.get("content")
                if not isinstance(content, dict):
                    return "error", {"ename": "GraderError", "evalue": "malformed reply"}
                return ("ok" if content.get("status") == "ok" else "error"), content

    def _interrupt(self) -> bool:
        """Interrupt a running cell; True if the kernel answered within the grace period."""
        try:
            self.km.interrupt_kernel()
        except Exception:  # noqa: BLE001 - a dead kernel cannot be interrupted
            return False
        deadline = time.monotonic() + _GRACE
        while time.monotonic() < deadline:
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
                self.log.append(
                    f"notebook time limit ({self.timeout:g} s) reached before cell {k + 1}; "
                    "the remaining cells were not run"
                )
                return
            status, content = self._execute(source, min(self.cell_timeout, left))
            if status == "error":
                self.log.append(
                    f"cell {k + 1} raised {str(content.get('ename'))[:60]}: "
                    f"{' '.join(str(content.get('evalue')).split())[:120]}"
                )
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
        status, content = self._execute(
            setup + code, timeout, store_history=False, user_expressions={"r": f"{self._agent}.LAST"}
        )
        if status == "timeout":
            if not self._interrupt():
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
