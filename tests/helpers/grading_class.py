"""A class of submissions for the grader tests: correct, written differently, clumsy and hostile.

:func:`solution_functions` loads the committed solutions in-process; :func:`make_class` writes a
folder of submissions, one per student, and :data:`EXPECTED` says exactly what each must score.
Hostile students use their scores as witnesses: an exercise they answer correctly *only if* an
attack worked (reading a classmate's notebook, seeing the grader's process, reaching the network)
must score 0, so the gradebook itself proves the isolation held.
"""

from __future__ import annotations

import base64
import copy
import json
import math
import os
from fractions import Fraction
from pathlib import Path

import nbformat
import numpy as np
import torch

from sts_lib.exercises import NOTEBOOKS

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "exercises"
STEMS = list(NOTEBOOKS.values())  # the chapters' exercises and the projects (the exercises' own record)
MARKER = "sts-grader-test-daemon"  # in the argv of every process a hostile notebook leaves behind


def _python(source: str) -> str:
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def solution_functions() -> dict[str, dict]:
    """notebook stem -> namespace holding that notebook's solution functions (set-up cell included)."""
    out = {}
    for stem in STEMS:
        nb = nbformat.read(str(EX / "solutions" / f"{stem}.ipynb"), as_version=4)
        ns: dict = {}
        for c in nb.cells:
            tags = c.metadata.get("tags", [])
            if c.cell_type == "code" and "try-it" not in tags and "check" not in tags:
                exec(_python(c.source), ns)  # noqa: S102 - our own committed solutions
        out[stem] = ns
    return out


# -- answers written differently: the same values, other types --------------------------------------


def _map(value, leaf):
    if isinstance(value, tuple):
        return tuple(_map(v, leaf) for v in value)
    if isinstance(value, list):
        return [_map(v, leaf) for v in value]
    return leaf(value)


def _numpy(v):
    if isinstance(v, torch.Tensor):
        return v.detach().numpy()
    if isinstance(v, bool):
        return np.bool_(v)
    if isinstance(v, int):
        return np.int64(v)
    if isinstance(v, float):
        return np.float64(v)
    return v


def _lists(v):
    return v.tolist() if isinstance(v, (torch.Tensor, np.ndarray)) and v.ndim > 0 else v


def _zero_d_tensor(v):
    return torch.tensor(v, dtype=torch.float64) if isinstance(v, float) else v


def _zero_d_array(v):
    return np.array(v) if isinstance(v, float) else v


def _fraction(v):
    return Fraction(v) if isinstance(v, float) and math.isfinite(v) else v  # a Fraction has no nan


def _float32(v):
    if isinstance(v, torch.Tensor) and v.is_floating_point():
        return v.float()
    return np.float32(v) if isinstance(v, float) else v


def _int_when_integral(v):
    return int(v) if isinstance(v, float) and v.is_integer() else v


VARIANTS = {
    "numpy (arrays and NumPy scalars)": lambda out: _map(out, _numpy),
    "Python lists": lambda out: _map(out, _lists),
    "0-d tensors for numbers": lambda out: _map(out, _zero_d_tensor),
    "0-d arrays for numbers": lambda out: _map(out, _zero_d_array),
    "fractions.Fraction for numbers": lambda out: _map(out, _fraction),
    "float32": lambda out: _map(out, _float32),
    "ints where a float is integral": lambda out: _map(out, _int_when_integral),
    "a list instead of a tuple": lambda out: list(out) if isinstance(out, tuple) else out,
}


def variant(fn, name: str):
    """``fn`` with its return value rewritten by variant ``name`` (same values, other types)."""
    change = VARIANTS[name]

    def wrapped(*args, **kwargs):
        return change(fn(*args, **kwargs))

    wrapped.__name__ = getattr(fn, "__name__", "fn")
    return wrapped


# -- a folder of submissions ---------------------------------------------------------------------


def _nb(stem: str, kind: str = "solutions"):
    nb = nbformat.read(str(EX / kind / f"{stem}.ipynb"), as_version=4)
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
    return nb


def _cells(nb, ex_id, tag):
    return [c for c in nb.cells if c.metadata.get("exercise") == ex_id and tag in c.metadata.get("tags", [])]


def _set(nb, ex_id, source):
    _cells(nb, ex_id, "exercise")[0].source = source


def _lean(nb):
    """Only the set-up and exercise cells: a submission that does not re-run the try-it cells (faster)."""
    nb.cells = [
        c for c in nb.cells if c.cell_type != "code" or not ({"try-it", "check"} & set(c.metadata.get("tags", [])))
    ]
    return nb


def _write(path: Path, nb) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


TAMPER = """import sts_lib.exercises as _ex
from sts_lib.exercises import REGISTRY
def check(exercise_id, fn, **kw):
    ex = REGISTRY[exercise_id]
    print(f'[{exercise_id}] {ex.points}/{ex.points} points: correct')
_ex.check = check
_ex.run_check = lambda i, fn, **k: None
for e in REGISTRY.values():
    object.__setattr__(e, 'checker', lambda t, fn: t.award(e.points))"""

NUMPY_SOLUTIONS = {
    "ex1.baseline_losses": "def baseline_losses(d, T, q):\n    from fractions import Fraction\n"
    "    return Fraction(d, q), Fraction(d * (T - q), q * T)",
    "ex2.fcn_lower_bound": "def fcn_lower_bound(T, d, q, width):\n    import numpy as np\n"
    "    return np.float64(max(T * d - width, 0) * (T - q)) / np.float64(q * T * (T - 1))",
    "ex3.loss_on_ray": "def loss_on_ray(c, d, T, q):\n    import numpy as np\n    e = np.exp(c)\n"
    "    return np.array(d * T * (T - q) / (q * (q * e + T - q) ** 2))",
    "ex3.ground_truth": "def ground_truth(d, m):\n"
    "    W = [[1.0 if i == j and i >= d else 0.0 for j in range(d + m)] for i in range(d + m)]\n"
    "    V = [[1.0 if i == j else 0.0 for j in range(d + m)] for i in range(d)]\n    return W, V",
}


def make_class(folder: Path, grader_out: Path) -> None:
    """Write the class into ``folder``; ``grader_out`` is where the gradebook will be (a target)."""
    folder.mkdir(parents=True, exist_ok=True)
    # alice: every committed solution notebook, exercises and projects, untouched (full points).
    for stem in STEMS:
        _write(folder / "alice" / f"{stem}.ipynb", _nb(stem))
    # nick: correct answers written differently (fractions, NumPy scalars, 0-d arrays, lists, loops).
    for stem, ids in (
        ("ex1_task", ["ex1.baseline_losses"]),
        ("ex2_fcn", ["ex2.fcn_lower_bound"]),
        ("ex3_dynamics", ["ex3.loss_on_ray", "ex3.ground_truth"]),
    ):
        nb = _lean(_nb(stem))
        for ex_id in ids:
            _set(nb, ex_id, NUMPY_SOLUTIONS[ex_id])
        _write(folder / "nick" / f"{stem}.ipynb", nb)
    sol = _nb("ex1_task")
    stu = _nb("ex1_task", "student")
    # bob: the untouched student notebook; ivan: not JSON; judy: malformed cells.
    _write(folder / "bob_ex1_task.ipynb", stu)
    (folder / "ivan.ipynb").write_text("{ this is not a notebook")
    judy = nbformat.writes(_lean(copy.deepcopy(sol)))
    judy = judy.replace('"cells": [', '"cells": [7, {"cell_type": "code", "source": null, "metadata": {}}, ', 1)
    (folder / "judy.ipynb").write_text(judy)
    # carol: raises; dave: loops forever in a function and in a top-level cell; erin: deleted cells.
    nb = copy.deepcopy(sol)
    _set(
        nb,
        "ex1.sample_batch",
        "def sample_batch(B, T, q, d, generator=None):\n"
        "    X = torch.randn(B, T, d, generator=generator)\n    return X, X[:, :q, 10], None",
    )
    _write(folder / "carol.ipynb", _lean(nb))
    nb = copy.deepcopy(sol)
    _set(nb, "ex1.attention_forward", "def attention_forward(W, V, Z, z_query):\n    while True:\n        pass")
    _cells(nb, "ex1.sample_batch", "try-it")[0].source = "while True:\n    pass"
    nb.cells = [c for c in nb.cells if "check" not in c.metadata.get("tags", [])]
    _write(folder / "dave.ipynb", nb)
    nb = _lean(copy.deepcopy(sol))
    nb.cells = [c for c in nb.cells if c.metadata.get("exercise") != "ex1.attention_forward"]
    _write(folder / "erin" / "ex1_task.ipynb", nb)
    # frank: tampers with the checker and prints fake results; grace: wrong answers; heidi: kills her kernel.
    nb = _lean(copy.deepcopy(stu))
    _set(nb, "ex1.sample_batch", _cells(sol, "ex1.sample_batch", "exercise")[0].source)
    _set(nb, "ex1.baseline_losses", "def baseline_losses(d, T, q):\n    return 0.0, 0.0")
    nb.cells.insert(4, nbformat.v4.new_code_cell(TAMPER))
    _write(folder / "frank.ipynb", nb)
    nb = _lean(copy.deepcopy(sol))
    _set(
        nb,
        "ex1.attention_forward",
        "def attention_forward(W, V, Z, z_query):\n"
        "    a = torch.softmax(torch.einsum('btD,DE,bE->bt', Z, W, z_query), dim=0)\n"
        "    return torch.einsum('dD,btD,bt->bd', V, Z, a)",
    )
    _set(nb, "ex1.baseline_losses", "def baseline_losses(d, T, q):\n    return d / q, d / q + d / T")
    _write(folder / "grace.ipynb", nb)
    nb = _lean(copy.deepcopy(sol))
    _set(nb, "ex1.baseline_losses", "import os\ndef baseline_losses(d, T, q):\n    os._exit(1)")
    _write(folder / "heidi.ipynb", nb)
    # mallory: hostile. Each attack runs in its own cell; each witness is an exercise answered
    # correctly only if the attack worked.
    _write(folder / "mallory.ipynb", _mallory(sol, folder, grader_out))
    # trent: exhausts memory, file size and disk, returns a huge value; fiona: a fork bomb.
    _write(folder / "trent.ipynb", _trent(sol))
    _write(folder / "fiona.ipynb", _fiona(sol))
    # oscar: a correct ex2 notebook saved with 30 MB of outputs (a loop that printed, and plots).
    (folder / "oscar").mkdir()
    (folder / "oscar" / "ex2_fcn.ipynb").write_text(with_stored_outputs(_nb("ex2_fcn"), 30), encoding="utf-8")
    # peggy: library answers through aliases and a dynamic import; walter: chapter 7, clumsy.
    nb = _lean(_nb("ex3_dynamics"))
    for ex_id, source in ALIASED.items():
        _set(nb, ex_id, source)
    _write(folder / "peggy_ex3_dynamics.ipynb", nb)
    nb = _lean(_nb("ex7_practical"))
    for ex_id, source in WALTER.items():
        _set(nb, ex_id, source)
    _write(folder / "walter" / "ex7_practical.ipynb", nb)
    # paula: projects, partly done: a milestone half right, one that returns a string, one that runs past its
    # time limit, and a milestone's cells deleted; pete: a project milestone that reads another student's files.
    nb = _lean(_nb("pr1_width_law"))
    for ex_id, source in PAULA.items():
        _set(nb, ex_id, source)
    _write(folder / "paula" / "pr1_width_law.ipynb", nb)
    nb = _lean(_nb("pr3_fcn_bound"))
    nb.cells = [c for c in nb.cells if c.metadata.get("exercise") != "pr3.tight_layer"]
    _write(folder / "paula" / "pr3_fcn_bound.ipynb", nb)
    nb = _lean(_nb("pr2_readings"))
    _set(nb, "pr2.first_below", PETE.format(subs=str(folder)))
    _write(folder / "pete" / "pr2_readings.ipynb", nb)
    # rita: project 2 done, and a rubric-shaped CSV in her folder giving herself full marks on every criterion:
    # the grader reads rubric marks only from the instructor's file (--rubric), so hers stay the instructor's.
    _write(folder / "rita" / "pr2_readings.ipynb", _lean(_nb("pr2_readings")))
    (folder / "rita" / "rubric.csv").write_text(RITA_RUBRIC)


PAULA = {
    # the mean of per-sequence ratios: right at alpha = 0, wrong elsewhere (2 of 3 points)
    "pr1.family_error": "def family_error(scores, alpha, q):\n    z = alpha * np.asarray(scores, dtype=float)\n"
    "    w = np.exp(z - z.max(axis=1, keepdims=True))\n    w /= w.sum(axis=1, keepdims=True)\n"
    "    A, B = w[:, :q].sum(1), (w ** 2).sum(1)\n    return float(1 - np.mean(A * A / (q * B)))",
    "pr1.width_needed": "def width_needed(T, q, target, seed=0):\n    return '42'",  # not a number
    "pr1.fit_law": "def fit_power_law(q, T, m, boot=1000, seed=0):\n    while True:\n        pass",  # past the limit
}
# Correct only if it could read another student's submission (alice's, or anyone's beside it).
PETE = """def first_below(steps, loss, level):
    import glob
    seen = []
    for pattern in ("{subs}/alice/*.ipynb", "../alice/*.ipynb", "../../alice/*.ipynb", "/tmp/*/alice/*.ipynb"):
        for path in glob.glob(pattern):
            try:
                seen.append(open(path).read(100))
            except OSError:
                pass
    if not seen:
        return -1
    for step, value in zip(steps, loss):
        if value < level:
            return step
    return None"""


_ATTACKS = r"""
import os, signal, socket, subprocess, sys, glob
SUBS, OUT, LIB = {subs!r}, {out!r}, os.path.dirname(__import__("sts_lib").__file__)
witness = {{}}
def _try(name, f):
    try:
        witness[name] = bool(f())
    except BaseException:
        witness[name] = False
# read a classmate's notebook, and the instructor's files (the gradebook folder)
_try("read_classmate", lambda: len(open(os.path.join(SUBS, "alice", "ex1_task.ipynb")).read()) > 0)
_try("list_submissions", lambda: len(os.listdir(SUBS)) > 0)
# write: a classmate's notebook, the gradebook folder, the installed library
def _w(path):
    with open(path, "a") as f:
        f.write("# mallory was here\n")
    return True
_try("write_classmate", lambda: _w(os.path.join(SUBS, "alice", "ex1_task.ipynb")))
_try("write_gradebook", lambda: _w(os.path.join(os.path.dirname(OUT), "mallory-was-here.txt")))
_try("write_library", lambda: _w(os.path.join(LIB, "exercises", "_ch1_task.py")))
# see the grader: any process whose command line mentions the grader, or any process not ours
def _grader_visible():
    for p in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            if b"sts_lib.grading" in open(p, "rb").read():
                return True
        except OSError:
            pass
    return False
_try("see_grader", _grader_visible)
# the network: anything that answers (the grader's loopback included)
def _net():
    s = socket.create_connection(("1.1.1.1", 53), timeout=2)
    return True
_try("network", _net)
# processes that outlive the kernel: a child in its own session, and a double-forked daemon
subprocess.Popen(["sleep", "600", {marker!r}], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", {marker!r}])
    os._exit(0)
"""

_WITNESS_FN = """def baseline_losses(d, T, q):
    # correct only if an attack worked
    if any(witness.values()):
        return d / q, d * (T - q) / (q * T)
    return 0.0, 0.0
"""


def _mallory(sol, subs: Path, out: Path):
    nb = _lean(copy.deepcopy(sol))
    attacks = _ATTACKS.format(subs=str(subs), out=str(out), marker=MARKER)
    kill = (
        "import os, signal\nfor sig in (signal.SIGTERM, signal.SIGKILL):\n    try:\n"
        "        os.kill(os.getppid(), sig)\n    except OSError:\n        pass\n"
        "try:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass"
    )
    nb.cells.insert(3, nbformat.v4.new_code_cell(kill))  # kill everything it can see,
    nb.cells.insert(4, nbformat.v4.new_code_cell(attacks))  # then attack and leave daemons behind
    _set(nb, "ex1.baseline_losses", _WITNESS_FN)
    return nb


def _trent(sol):
    nb = _lean(copy.deepcopy(sol))
    hogs = [
        "x = bytearray(64 * 2**30)",  # 64 GB of memory
        "with open('big.bin', 'wb') as f:\n    for _ in range(4096):\n        f.write(b'0' * 2**20)",  # 4 GB file
        "import os\nfor k in range(10000):\n    with open(f'f{k}.bin', 'wb') as f:\n        f.write(b'0' * 2**20)",
    ]
    for k, src in enumerate(hogs):
        nb.cells.insert(3 + k, nbformat.v4.new_code_cell(src))
    _set(
        nb, "ex1.attention_forward", "def attention_forward(W, V, Z, z_query):\n    return torch.zeros(40_000_000)"
    )  # a 160 MB return value
    return nb


def _fiona(sol):
    """A fork bomb inside a checked function: only that exercise is lost."""
    nb = _lean(copy.deepcopy(sol))
    _set(
        nb,
        "ex1.attention_forward",
        "import os\ndef attention_forward(W, V, Z, z_query):\n"
        "    while True:\n        try:\n            os.fork()\n        except OSError:\n            pass",
    )
    return nb


def with_stored_outputs(nb, megabytes: float) -> str:
    """``nb`` as saved after a run that printed a lot and drew plots: about ``megabytes`` MB of stored
    outputs (progress lines with block characters, base64 images), spread over its code cells."""
    nb = copy.deepcopy(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    line = "step 100000: loss 0.123456 \u2588\u2588\u2588\u2588\u2588\u2588\u258c 98% |\n"
    image = base64.b64encode(os.urandom(3 * 2**19)).decode()  # a 2 MB "plot"
    lines = 50_000
    per_cell = len(line.encode()) * lines + len(image)
    k = 0
    while k * per_cell < megabytes * 2**20:
        code[k % len(code)].outputs += [
            nbformat.v4.new_output("stream", name="stdout", text=line * lines),
            nbformat.v4.new_output("display_data", data={"image/png": image, "text/plain": "<Figure>"}),
        ]
        k += 1
    return json.dumps(nbformat.from_dict(nb), ensure_ascii=False)  # as Jupyter saves it: UTF-8


# peggy: correct answers computed by the library, reached through an alias, a renamed import and
# a dynamic import with a computed name; scored in full, and flagged for the instructor.
ALIASED = {
    "ex3.loss_on_ray": "import sts_lib as sts\n_L = sts.loss_on_ray\n\ndef loss_on_ray(c, d, T, q):\n"
    "    return _L(c, d, T, q)",
    "ex3.ground_truth": "from sts_lib.models import ground_truth as _gt\n\ndef ground_truth(d, m):\n"
    "    return _gt(d, m)",
    "ex3.c_for_loss": "import importlib\n_mod = importlib.import_module('sts_lib.' + 'theory')\n\n"
    "def c_for_loss(target, d, T, q):\n    return getattr(_mod, 'c_for' + '_loss')(target, d, T, q)",
}
PEGGY_FLAGS = [
    "ex3.ground_truth calls sts_lib's ground_truth",
    "ex3.loss_on_ray calls sts_lib's loss_on_ray",
    "imports a module whose name is computed at run time (importlib.import_module)",
    "uses getattr with a name computed at run time",
]

# walter: chapter 7. The theory model's forward pass (no attention to the query), a scale that
# overflows for huge c, and a correct shift-free cosine written another way (in float32, through J).
WALTER = {
    "ex7.practical_forward": "def practical_forward(W, V, Z, z_query):\n"
    "    a = torch.softmax(torch.einsum('btD,DE,bE->bt', Z, W, z_query), dim=1)\n"
    "    return torch.einsum('dD,btD,bt->bd', V, Z, a)",
    "ex7.value_scale": "def value_scale(c, T, q):\n    e = math.exp(c / q)\n    D = (q + 1) * e + T - q\n"
    "    a_s, a_u = e / D, 1 / D\n    return a_s / (q * a_s ** 2 + (T - q) * a_u ** 2)",
    "ex7.shift_free_cosine": "def shift_free_cosine(W, d):\n    W = torch.as_tensor(W).float()\n"
    "    J = torch.zeros_like(W)\n    J[d:, d:] = 1.0\n    J = J / J.norm()\n"
    "    S = torch.zeros_like(W)\n    S[d:, d:] = torch.eye(W.shape[0] - d)\n"
    "    A, B = W - (W * J).sum() * J, S - (S * J).sum() * J\n"
    "    return float((A * B).sum() / (A.norm() * B.norm()))",
}


def _full_marks(student: str) -> str:
    from sts_lib.exercises.projects import PROJECTS

    rows = [f"{student},{p.part},{c.name},{c.points}" for p in PROJECTS.values() for c in p.rubric]
    return "student,project,criterion,points\n" + "\n".join(rows) + "\n"


RITA_RUBRIC = _full_marks("rita")
# The instructor's rubric marks (student, gradebook column) -> points; every other criterion is left empty (not yet
# marked). alice gets every criterion's maximum (added in instructor_rubric).
RUBRIC_MARKS = {
    ("paula", "pr1.rubric.fits"): 2,
    ("paula", "pr1.rubric.forms"): 1,
    ("pete", "pr2.rubric.readings"): 0,
    ("rita", "pr2.rubric.readings"): 1,
    ("rita", "pr2.rubric.verdicts"): 0.5,
}


def instructor_rubric(template: Path) -> dict:
    """Fill the template the grader wrote (``rubric template``) with the instructor's marks; returns them all."""
    import csv

    from sts_lib.grading.rubric import column

    marks = dict(RUBRIC_MARKS)
    with template.open(newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        key = (r["student"], column(r["project"], r["criterion"]))
        if r["student"] == "alice":
            from sts_lib.exercises.projects import PROJECTS

            marks[key] = PROJECTS[r["project"]].criterion(r["criterion"]).points
        r["points"] = "" if key not in marks else str(marks[key])
    with template.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["student", "project", "criterion", "points"])
        w.writeheader()
        w.writerows(rows)
    return marks


# Every student's score on every exercise, by notebook, in registry order (a notebook not listed: 0):
# ex1 (sample_batch 3, attention_forward 3, baseline_losses 2), ex2 (fcn_lower_bound 2, min_width 2,
# bayes_error 4), ex3 (ground_truth 2, loss_on_ray 3, c_for_loss 2, ray_gradient 2, fit_rate 3),
# ex4 (stochastic_pe 3, max_coherence 2, selection_margin 2), ex5 (ood_loss 3, leakage 2, fixed_pe_loss 3),
# ex7 (practical_forward 3, value_scale 3, shift_free_cosine 2).
FULL = {
    "ex1": (3, 3, 2),
    "ex2": (2, 2, 4),
    "ex3": (2, 3, 2, 2, 3),
    "ex4": (3, 2, 2),
    "ex5": (3, 2, 3),
    "ex7": (3, 3, 2),
    "pr1": (3, 3, 3, 3),
    "pr2": (2, 2, 3, 3),
    "pr3": (2, 3),
}  # pr*: the projects' milestones
EXPECTED_SCORES = {
    "alice": FULL,
    "nick": {"ex1": FULL["ex1"], "ex2": FULL["ex2"], "ex3": FULL["ex3"]},
    "bob": {},
    "ivan": {},
    "judy": {"ex1": (3, 3, 2)},
    "carol": {"ex1": (0, 3, 2)},
    "dave": {"ex1": (3, 0, 2)},
    "erin": {"ex1": (3, 0, 2)},
    "frank": {"ex1": (3, 0, 0)},
    "grace": {"ex1": (3, 0, 1)},
    "heidi": {"ex1": (3, 3, 0)},
    "mallory": {"ex1": (3, 3, 0)},
    "trent": {"ex1": (3, 0, 2)},
    "fiona": {"ex1": (3, 0, 2)},
    "oscar": {"ex2": (2, 2, 4)},  # 30 MB of stored outputs cost nothing
    "peggy": {"ex3": FULL["ex3"]},  # library answers: full points, and flags
    "walter": {"ex7": (0, 2, 2)},
    "paula": {"pr1": (2, 0, 0, 3), "pr3": (2, 0)},  # partial: each milestone scores what it earned
    "pete": {"pr2": (0, 2, 3, 3)},  # reading another student's files finds nothing
    "rita": {"pr2": FULL["pr2"]},  # and her own rubric.csv is not read
}


def expected_row(student: str) -> dict[str, int]:
    """exercise id -> the points ``student`` must score, for every registered exercise."""
    from sts_lib.exercises import REGISTRY

    by_notebook: dict[str, list[str]] = {}
    for ex in REGISTRY.values():
        by_notebook.setdefault(ex.id.split(".")[0], []).append(ex.id)
    row = {ex_id: 0 for ex_id in REGISTRY}
    for nb, points in EXPECTED_SCORES[student].items():
        assert len(points) == len(by_notebook[nb]), (student, nb)
        row.update(zip(by_notebook[nb], points))
    return row


EXPECTED = {s: sum(expected_row(s).values()) for s in EXPECTED_SCORES}  # totals, out of 78
