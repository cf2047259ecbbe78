"""The sandbox a learner's kernel runs in: Debian's ``bubblewrap`` (``bwrap``), plus resource limits.

Each kernel is started by :func:`kernel_argv` inside a fresh set of namespaces: its own PID namespace (it sees
and can signal only its own processes; when the sandbox ends, the kernel kills every process left in it), no
network (its own empty network namespace), a root file system that holds only the system folders, the Python
installation and the installed ``sts_lib``, all read-only; the course's committed results
(:func:`sts_lib.results.course_results`, which a checkout keeps beside the package rather than in it)
read-only at ``/course/results``, named by ``$STS_RESULTS``, so a notebook's ``load_result`` reads what it reads
outside; a private read-only copy of the student's own files at ``/submission``; a size-limited writable
``$HOME`` and ``/tmp`` (tmpfs); and one folder shared with the grader, holding only the Unix sockets the
kernel talks over (``ipc`` transport: a kernel without network cannot reach the grader over TCP). When the
grader runs as root, the kernel further drops to an unprivileged user id of its own (``setpriv``), which is
what makes the process limit count only the sandbox's processes; ``prlimit`` sets the limits on memory
(address space per process), processes, file size and open files. Where ``bwrap`` is missing or does not work
(macOS, Colab, some containers), :func:`detect` says why and the grader runs kernels unsandboxed, saying so
loudly and in every gradebook row.
"""

from __future__ import annotations

import functools
import itertools
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Limits", "RESULTS_DIR", "SANDBOX_HOME", "SUBMISSION_DIR", "detect", "kernel_argv", "kernel_spec",
           "kill_user_processes", "new_uid"]  # fmt: skip

SANDBOX_HOME = "/home/student"  # the kernel's working folder and $HOME (tmpfs)
SUBMISSION_DIR = "/submission"  # the read-only private copy of the student's files
RESULTS_DIR = "/course/results"  # the course's committed results, read-only ($STS_RESULTS in the kernel)
_UID_BASE = 2_000_000  # sandbox user ids: far above any real account
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc")


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed kernel (all of them are enforced by the kernel's OS)."""

    memory_mb: int = 4096  # address space of each process (RLIMIT_AS); torch needs ~0.7 GB
    processes: int = 128  # processes and threads of the sandbox user (RLIMIT_NPROC)
    file_mb: int = 64  # largest file a kernel may write (RLIMIT_FSIZE)
    disk_mb: int = 256  # size of the writable $HOME, and separately of /tmp (tmpfs)
    open_files: int = 256  # open file descriptors per process (RLIMIT_NOFILE)
    message_mb: int = 24  # largest message the grader reads from a kernel (zmq MAXMSGSIZE)

    def __post_init__(self):
        for name in ("memory_mb", "processes", "file_mb", "disk_mb", "open_files", "message_mb"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"Limits.{name} must be a positive integer, got {value!r}")


_uids = itertools.count()
_uid_lock = threading.Lock()


def new_uid() -> int:
    """A user id no other sandbox of this machine uses now: one per kernel start, restarts included.

    RLIMIT_NPROC counts the processes of a user, so a fresh user per kernel means what an old
    kernel left behind (or another student's kernel) never counts against a new one.
    """
    with _uid_lock:
        return _UID_BASE + (os.getpid() % 4096) * 100_000 + next(_uids) % 100_000


def _readonly_roots() -> list[str]:
    """Folders the kernel needs to read: the Python installation, the venv and ``sts_lib``."""
    import sts_lib

    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(sts_lib.__file__).resolve().parent)}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(path)
    roots.add(str(Path(sys.executable).resolve().parent.parent))
    out = []
    for root in sorted({os.path.realpath(r) for r in roots if r and os.path.isdir(r)}, key=len):
        if root in ("/", "/usr") or any(root == o or root.startswith(o + "/") for o in out):
            continue
        if any(root == s or root.startswith(s + "/") for s in _SYSTEM_DIRS):
            continue
        out.append(root)
    return out


def _system_binds() -> list[str]:
    args = []
    for d in _SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    return args


def kernel_argv(
    *,
    python: str,
    submission: str,
    comm_dir: str,
    limits: Limits,
    uid: int | None,
    bwrap: str = "bwrap",
    results: str | None = None,
) -> list[str]:
    """The command that starts one sandboxed ``ipykernel`` (``{connection_file}`` left for jupyter_client).

    ``submission`` is the grader's private copy of the student's files (bound read-only),
    ``comm_dir`` the folder holding the connection file and the kernel's sockets, ``uid`` the
    unprivileged user to drop to (:func:`new_uid`, when the grader is root; None otherwise), ``results`` the
    course's committed results (bound read-only at :data:`RESULTS_DIR`; None: none to show).
    """
    mb = 2**20
    argv = [
        bwrap,
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "sandbox",
        *_system_binds(),
        # ipykernel exits when its parent looks like init; inside the PID namespace it always is
        # (bwrap's reaper is PID 1), and --die-with-parent already ends the kernel with the grader.
        "--setenv",
        "JPY_PARENT_PID",
        "1",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--perms",
        "1777",
        "--size",
        str(limits.disk_mb * mb),
        "--tmpfs",
        "/tmp",
        "--perms",
        "0777",
        "--size",
        str(limits.disk_mb * mb),
        "--tmpfs",
        SANDBOX_HOME,
    ]
    roots = _readonly_roots()
    # bwrap creates the folders above a mount point with the host's modes (/root is 0700): make
    # them traversable for the unprivileged sandbox user, and nothing more (they are empty).
    ancestors = sorted(
        {
            str(a)
            for r in [*roots, comm_dir, *([RESULTS_DIR] if results else [])]
            for a in Path(r).parents
            if str(a) != "/"
        },
        key=lambda a: a.count("/"),
    )
    for a in ancestors:
        if a != "/tmp" and not any(a == s or a.startswith(s + "/") for s in _SYSTEM_DIRS):
            argv += ["--perms", "0755", "--dir", a]
    for root in roots:
        argv += ["--ro-bind", root, root]
    if results:
        argv += ["--ro-bind", results, RESULTS_DIR]
    argv += ["--ro-bind", submission, SUBMISSION_DIR, "--bind", comm_dir, comm_dir, "--chdir", SANDBOX_HOME]
    if uid is not None:
        argv += [
            "--",
            "setpriv",
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
        ]
    else:
        argv += ["--unshare-user-try", "--cap-drop", "ALL", "--"]
    nproc = limits.processes if uid is not None else limits.processes + _own_process_count()
    argv += [
        "prlimit",
        f"--as={limits.memory_mb * mb}",
        f"--nproc={nproc}",
        f"--fsize={limits.file_mb * mb}",
        f"--nofile={limits.open_files}",
        "--core=0",
        "--",
        python,
        "-m",
        "ipykernel_launcher",
        "-f",
        "{connection_file}",
    ]
    return argv


def _own_process_count() -> int:
    """Processes and threads of this user now: RLIMIT_NPROC counts them too when we are not root."""
    uid, n = os.getuid(), 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    n += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                continue
    return n


@functools.cache
def detect() -> tuple[str | None, str]:
    """``(path to bwrap, '')`` when a sandbox can be made here, else ``(None, why not)``."""
    if not sys.platform.startswith("linux"):
        return None, f"no sandbox on {sys.platform}: bubblewrap needs Linux"
    path = shutil.which("bwrap")
    if path is None:
        return None, "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    for tool in ("prlimit", "setpriv"):
        if shutil.which(tool) is None:
            return None, f"{tool} (util-linux) is not installed"
    probe = [
        path,
        "--unshare-pid",
        "--unshare-net",
        "--die-with-parent",
        *_system_binds(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--",
        "true",
    ]
    try:
        proc = subprocess.run(probe, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"bwrap could not be run ({e})"
    if proc.returncode != 0:
        return None, f"bwrap cannot create namespaces here: {proc.stderr.strip()[:200]}"
    return path, ""


def kernel_spec(
    python: str,
    *,
    submission: str,
    comm_dir: str,
    limits: Limits,
    uid: int | None,
    bwrap: str | None,
    results: str | None = None,
) -> tuple[dict, str]:
    """``(kernel.json content, transport)`` for one kernel: sandboxed over ``ipc`` when ``bwrap`` is given.

    Unsandboxed, the kernel is a plain child over TCP, still under ``prlimit`` where it exists.
    """
    if bwrap:
        argv = kernel_argv(
            python=python,
            submission=submission,
            comm_dir=comm_dir,
            limits=limits,
            uid=uid,
            bwrap=bwrap,
            results=results,
        )
        # Interrupt by message: a signal would reach bwrap, not the kernel inside it.
        return {"argv": argv, "display_name": "sts sandbox", "language": "python", "interrupt_mode": "message"}, "ipc"
    argv = [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    if shutil.which("prlimit"):
        mb = 2**20
        argv = ["prlimit", f"--as={limits.memory_mb * mb}", f"--fsize={limits.file_mb * mb}", "--core=0", "--", *argv]
    return {"argv": argv, "display_name": "sts unsandboxed", "language": "python"}, "tcp"


def kill_user_processes(uid: int) -> int:
    """SIGKILL every process of ``uid`` (a sandbox user); returns how many were found.

    The PID namespace already ends them with the sandbox; this is the belt to its braces.
    """
    found = 0
    for _ in range(3):
        pids = []
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    if entry.stat().st_uid == uid:
                        pids.append(int(entry.name))
                except OSError:
                    continue
        if not pids:
            break
        found += len(pids)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)
    return found
