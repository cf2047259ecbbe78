"""One kernel process for one submission: its private files, its (sandboxed) start, its shell channel, its end.

:class:`KernelProcess` owns everything the operating system sees of a student's kernel: a private temporary folder
holding a copy of the student's files, the ``ipykernel`` started inside the bubblewrap sandbox of :mod:`.sandbox`
when one is given (talking over Unix sockets in a folder shared with the grader, since the kernel has no network)
or as a plain child process otherwise, and the zmq context whose ``MAXMSGSIZE`` bounds every message *while* it is
received. Only the shell channel is opened; the kernel's printed output (IOPub) is never subscribed to.
:meth:`KernelProcess.execute` runs code and waits for its reply, :meth:`KernelProcess.interrupt` interrupts it,
and :meth:`KernelProcess.stop` ends the kernel and every process its sandbox user left behind. What is run, under
which time limits, and when to restart is :class:`~._session.KernelSession`'s.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import zmq

import sts_lib

from ..exercises import GRADING_ENV
from ..results import course_results
from . import sandbox as sb

#: Seconds a kernel gets to answer an interrupt before it is restarted.
GRACE = 5.0
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


class KernelProcess:
    """The kernel of one submission: started by :meth:`start` (again after :meth:`stop`), ended by :meth:`close`.

    ``files`` are the student's files (name -> bytes) for the kernel's private working copy, ``sandbox`` the path
    of ``bwrap`` (None: no sandbox). When the grader runs as root, each sandboxed start drops to a fresh
    unprivileged user of its own (:func:`.sandbox.new_uid`).
    """

    def __init__(self, files: dict[str, bytes], *, sandbox: str | None = None, limits: sb.Limits | None = None):
        self.sandbox, self.limits = sandbox, limits or sb.Limits()
        self.uid: int | None = None  # the sandbox user of the running kernel (grader is root)
        self.root = Path(tempfile.mkdtemp(prefix="sts-grade-"))
        self._write_private_copy(files)
        self.km = self.kc = None
        self._ctx = zmq.Context()
        # Bound every message while it is read, and how many wait unread.
        self._ctx.setsockopt(zmq.MAXMSGSIZE, self.limits.message_mb * 2**20)
        self._ctx.setsockopt(zmq.RCVHWM, 64)

    @property
    def running(self) -> bool:
        """Is a kernel started (and not stopped)? It may still have died since."""
        return self.kc is not None

    def _write_private_copy(self, files: dict[str, bytes]) -> None:
        sub = self.root / "submission"
        sub.mkdir()
        for name, data in files.items():
            target = (sub / name).resolve()
            if sub.resolve() not in target.parents:  # never write outside the copy
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        for path in [sub, *sub.rglob("*")]:
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
        os.chmod(self.root, 0o755)

    def start(self) -> str:
        """Start the kernel and import what every exercise uses, outside any notebook's time limit; ``""``, or why
        that preparation failed (the kernel still runs). Raises RuntimeError when the kernel does not start."""
        from jupyter_client import KernelManager
        from jupyter_client.kernelspec import KernelSpecManager

        self.uid = sb.new_uid() if self.sandbox and os.geteuid() == 0 else None
        results = course_results()
        spec, transport = sb.kernel_spec(
            sys.executable,
            submission=str(self.root / "submission"),
            comm_dir=str(self.root / "comm"),
            limits=self.limits,
            uid=self.uid,
            bwrap=self.sandbox,
            results=str(results) if results else None,
        )
        kernels = self.root / "kernels"
        (kernels / "sts-grade").mkdir(parents=True, exist_ok=True)
        (kernels / "sts-grade" / "kernel.json").write_text(json.dumps(spec))
        comm = self.root / "comm"
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
        # The course's committed results, as the notebook's own load_result would find them from a checkout, a wheel
        # or Colab: the sandbox shows a checkout's results/ (beside the package, not in it) only at RESULTS_DIR.
        if results:
            env["STS_RESULTS"] = sb.RESULTS_DIR if self.sandbox else str(results)
        if self.sandbox:
            env.update(HOME=sb.SANDBOX_HOME, MPLCONFIGDIR=f"{sb.SANDBOX_HOME}/.matplotlib", TMPDIR="/tmp")
            cwd = str(self.root)
        else:
            env.update(HOME=str(self.root / "submission"), PATH=os.environ.get("PATH", env["PATH"]))
            cwd = str(self.root / "submission")
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
        status, content = self.execute((_COPY_IN if self.sandbox else "") + _IMPORTS, 300.0, store_history=False)
        if status != "ok":
            return f"{content.get('ename')}: {str(content.get('evalue'))[:120]}" if content else status
        return ""

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

    def stop(self) -> None:
        """End the kernel (if any) and, in the sandbox as root, every process its user left behind."""
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
        """:meth:`stop`, then free the sockets' context and delete the private folder."""
        self.stop()
        self.km = None
        self._ctx.destroy(linger=0)
        shutil.rmtree(self.root, ignore_errors=True)

    def execute(self, code: str, timeout: float, *, user_expressions=None, store_history=True):
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

    def interrupt(self) -> bool:
        """Interrupt a running cell; True if the kernel answered within :data:`GRACE` seconds."""
        try:
            self.km.interrupt_kernel()
        except Exception:  # noqa: BLE001 - a dead kernel cannot be interrupted
            return False
        deadline = time.monotonic() + GRACE
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
