"""Confirmation on fresh seeds: every verdict whose rule was fixed after the runs were seen, decided again on seeds
never used before.

The reading policy (:mod:`sts_lib.reading.policy`) and its thresholds were written after the committed runs had been
seen, so the verdicts they give on those runs could be fitted to them. :func:`experiments_to_confirm` names every
experiment that decides a statement whose rule was fixed after the runs (``Statement.fixed == AFTER``, derived
from the documents' ``decides``, never listed by hand); ``python -m sts_lib.experiments confirm`` runs each of them
again at the scale of its committed document on :func:`fresh_seeds` (never used by any committed run, research run
or chapter), into ``results/confirmation/``, and writes ``results/confirmation/confirmation.json`` with
:func:`confirmation_document`: the policy's commit, the seeds, and every such statement's verdict on the committed
seeds and on the fresh ones. :func:`standing` is what chapter 8 shows: a verdict that replicates stands, marked
*confirmed on fresh seeds*; one that does not becomes *not decided*.
"""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path

from .decide import statement_verdict
from .verdicts import AFTER, BEFORE, NOT_DECIDED, STRUCTURAL, UNTESTABLE

#: The first fresh seed: every committed document uses seeds 0-4, the research runs seed 0, the chapters seeds below
#: 100 or the held-out offset 12,345 + s; 100 and up were never used before this confirmation.
FIRST_FRESH_SEED = 100
#: Where the fresh-seed documents are written (a folder of the results folder), and the confirmation document in it.
FRESH_DIR, DOCUMENT = "confirmation", "confirmation.json"
#: How chapter 8 says when a statement's rule was fixed, and what the fresh seeds said.
CONFIRMED, NOT_REPLICATED, UNCONFIRMED = (
    "after the runs, confirmed on fresh seeds",
    "after the runs, did not replicate on fresh seeds",
    "after the runs, not yet confirmed",
)
#: A statement no data can decide has no rule to fix.
NO_RULE = "no rule: nothing here can decide it"
#: A statement whose outcome is fixed by construction: no rule decides it, so there is nothing to confirm.
NO_RULE_STRUCTURAL = "no rule: fixed by construction"


def fresh_seeds(doc: dict) -> list[int]:
    """As many fresh seeds as the committed document ``doc`` has, from :data:`FIRST_FRESH_SEED`.

    >>> fresh_seeds({"seeds": [0, 1, 2, 3, 4]})
    [100, 101, 102, 103, 104]
    """
    return list(range(FIRST_FRESH_SEED, FIRST_FRESH_SEED + len(doc.get("seeds", [0]))))


def experiments_to_confirm(docs: dict, statements: tuple) -> list[str]:
    """The experiments of ``docs`` whose ``decides`` name one of ``statements`` whose rule was fixed after the runs
    (``statements``: :data:`sts_lib.reading.statements.STATEMENTS`)."""
    after = {st.key for st in statements if st.fixed == AFTER and not all(r.untestable for r in st.readings())}
    return [name for name, doc in docs.items() if any(d["statement"] in after for d in doc.get("decides", ()))]


def confirmation_document(
    committed: dict, fresh: dict, statements: tuple, *, policy_commit: str, started: str = ""
) -> dict:
    """The confirmation: each after-the-runs statement decided on the committed documents and on the fresh ones.

    ``committed`` and ``fresh`` are ``{name: doc}``; a document missing from ``fresh`` is taken from ``committed``
    (its experiment decides no after-the-runs statement). ``policy_commit``: the commit of the policy the verdicts
    are read by (committed before the fresh runs' verdicts were read).
    """
    both = {**committed, **fresh}
    rows = {}
    for st in statements:
        if st.fixed != AFTER:
            continue
        v_old, r_old = statement_verdict(st, committed)
        if v_old in (UNTESTABLE, *STRUCTURAL):
            continue  # only a verdict that could have failed is confirmed (or not): a structural one cannot
        v_new, r_new = statement_verdict(st, both)
        rows[st.key] = {
            "committed": v_old,
            "fresh": v_new,
            "replicates": v_old == v_new,
            "readings": {r.key: [a, b] for (r, a, _), (_, b, _) in zip(r_old, r_new)},
        }
    return {
        "policy_commit": policy_commit,
        "training_started": started,
        "written": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "seeds": {name: doc.get("seeds") for name, doc in fresh.items()},
        "committed_seeds": {name: committed[name].get("seeds") for name in fresh if name in committed},
        "statements": rows,
        "replicated": sum(r["replicates"] for r in rows.values()),
        "total": len(rows),
    }


def load_confirmation(root: str | os.PathLike | None = None) -> dict | None:
    """The committed confirmation document (``results/confirmation/confirmation.json``, in the first results folder
    of :func:`sts_lib.results.search_path` that has one), or None when there is none."""
    from ..results import search_path

    for folder in search_path(root):
        path = Path(folder) / FRESH_DIR / DOCUMENT
        if path.is_file():
            return json.loads(path.read_text())
    return None


def load_fresh(root: str | os.PathLike) -> dict:
    """``{name: doc}`` of the fresh-seed documents in ``root`` (the confirmation document itself left out)."""
    from ..results import list_results, load_result

    return {n: load_result(n, root) for n in list_results(root) if n != Path(DOCUMENT).stem}


def standing(st, v: str, confirmation: dict | None) -> tuple[str, str, str]:
    """``(verdict, when its rule was fixed, note)`` as chapter 8 shows the statement ``st`` whose verdict on the
    committed documents is ``v`` (:func:`sts_lib.reading.decide.statement_verdict`'s, which the caller has computed).

    A statement that cannot be tested here has no rule (:data:`NO_RULE`). One whose rule was fixed before the runs
    keeps its verdict. One fixed after them keeps it when the fresh
    seeds gave the same verdict (*confirmed on fresh seeds*), becomes *not decided* when they did not, and is marked
    *not yet confirmed* when no confirmation covers it (or the committed documents changed since).
    """
    if v == UNTESTABLE:
        return v, NO_RULE, ""
    if v in STRUCTURAL:
        return v, NO_RULE_STRUCTURAL, ""
    if st.fixed == BEFORE:
        return v, BEFORE, ""
    row = (confirmation or {}).get("statements", {}).get(st.key)
    if row is None or row["committed"] != v:
        return v, UNCONFIRMED, ""
    if row["replicates"]:
        return v, CONFIRMED, ""
    return NOT_DECIDED, NOT_REPLICATED, f"{v} on the committed seeds, {row['fresh']} on fresh ones"


__all__ = ["CONFIRMED", "DOCUMENT", "FIRST_FRESH_SEED", "FRESH_DIR", "NOT_REPLICATED", "NO_RULE", "NO_RULE_STRUCTURAL",
           "UNCONFIRMED", "confirmation_document", "experiments_to_confirm", "fresh_seeds", "load_confirmation",
           "load_fresh", "standing"]  # fmt: skip
