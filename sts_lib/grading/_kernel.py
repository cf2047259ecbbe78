"""The grader's agent inside a learner's kernel: find functions, call them, report safely.

After the submitted notebook has run, the grader imports this module in the same
kernel and, for every test input of every checker, executes one ``call(...)``. The
result is left in ``LAST`` as base64-encoded JSON (see :mod:`._wire`) and read back
through the kernel protocol's ``user_expressions``, so nothing printed by the
learner's code is mistaken for a result. Everything here runs alongside untrusted
code; the grader trusts none of it beyond the encoded value it validates.
"""

from __future__ import annotations

import base64
import pickle

from ..exercises import student_line
from ._wire import MAX_BYTES, ValueTooLarge, dumps, encode

LAST = ""


def _reply(outcome: dict) -> str:
    """The encoded outcome, or a 'too large' notice when it would exceed what the grader reads."""
    text = dumps(outcome)
    if len(text) > MAX_BYTES * 4 // 3:
        text = dumps({"status": "toolarge", "bytes": len(text) * 3 // 4, "limit": MAX_BYTES})
    return text


def defined(ns: dict, names: list[str]) -> None:
    """Set LAST to the names (of ``names``) bound to callables in the namespace ``ns``."""
    global LAST
    LAST = dumps([n for n in names if callable(ns.get(n))])


def call(ns: dict, name: str, payload: str) -> None:
    """Call ``ns[name](*args, **kwargs)`` with pickled arguments; set LAST to the outcome."""
    global LAST
    LAST = dumps({"status": "raised", "ename": "GraderError", "evalue": "no result"})
    fn = ns.get(name)
    if not callable(fn):
        LAST = dumps({"status": "missing"})
        return
    try:
        args, kwargs = pickle.loads(base64.b64decode(payload))
    except Exception as e:  # noqa: BLE001 - e.g. the learner shadowed a module the inputs need
        LAST = dumps(
            {
                "status": "raised",
                "ename": type(e).__name__,
                "evalue": f"the test inputs could not be rebuilt in your notebook: {e}",
            }
        )
        return
    try:
        value = fn(*args, **kwargs)
    except KeyboardInterrupt:
        raise  # the grader's interrupt: a timeout
    except NotImplementedError as e:
        LAST = dumps({"status": "notimpl", "evalue": str(e)[:300]})
        return
    except BaseException as e:  # noqa: BLE001 - SystemExit included: it is the learner's error
        LAST = dumps(
            {"status": "raised", "ename": type(e).__name__, "evalue": str(e)[:500], "line": student_line(e, fn)}
        )
        return
    try:
        LAST = _reply({"status": "ok", "value": encode(value)})
    except ValueTooLarge as e:
        LAST = dumps({"status": "toolarge", "bytes": int(e.args[0]), "limit": MAX_BYTES})
    except Exception:  # noqa: BLE001 - e.g. an object whose attributes raise
        LAST = dumps({"status": "ok", "value": {"__object__": type(value).__name__}})
