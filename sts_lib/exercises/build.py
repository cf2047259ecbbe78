"""One source, two outputs: turn authored exercise notebooks into student and solution notebooks.

An exercise notebook in ``exercises/source`` is written once, with the solution in
place between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` lines (in code) or
``<!-- BEGIN SOLUTION -->`` / ``<!-- END SOLUTION -->`` (in markdown). Cell tags say
what each cell is: ``exercise`` (holds solution markers; metadata ``exercise`` names
its id), ``solution`` (the whole cell is solution material), ``try-it`` (a small
demo that calls the learner's function) and ``check`` (calls the checker). A ``try-it`` cell that prints Monte-Carlo numbers drawn
with the library's samplers also carries nbval's ``nbval-ignore-output``; the ``check`` lines are
always compared.

* The **student** notebook replaces every solution block by a stub that raises
  ``NotImplementedError``, drops ``solution`` cells, clears outputs and tags the
  ``try-it`` cells ``raises-exception`` so nbval expects their error.
* The **solution** notebook drops the marker lines and is executed, so its stored
  ``check`` lines (full points) are what ``pytest --nbval`` compares against.
* The **book page** ``book/exercises/<stem>.md`` (:func:`book_page`) shows each exercise's
  statement, hints and code skeleton in a sphinx-exercise ``{exercise}`` and its solution in a
  closed ``{solution}`` dropdown; each chapter includes it.

:func:`find_leaks` is the guard that no solution line reaches a student notebook.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import nbformat

REPO_URL = "https://github.com/sts-course/sparse-token-selection"
COLAB = "https://colab.research.google.com/github/sts-course/sparse-token-selection/blob/main"
_BEGIN, _END = "### BEGIN SOLUTION", "### END SOLUTION"
_MD_BEGIN, _MD_END = "<!-- BEGIN SOLUTION -->", "<!-- END SOLUTION -->"
_MARKERS = (_BEGIN, _END, _MD_BEGIN, _MD_END)
STUB_MESSAGE = "Exercise {id}: replace this line with your code"
BOOK_DIR = "book/exercises"   # the book's exercise pages, one per source notebook


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _replace_blocks(source: str, begin: str, end: str, stub) -> str:
    """Replace each ``begin``..``end`` block (marker lines included) by ``stub(indent)``."""
    out, inside, indent = [], False, ""
    for line in source.splitlines():
        key = line.strip()
        if key == begin:
            if inside:
                raise ValueError(f"nested {begin!r}")
            inside, indent = True, line[: len(line) - len(line.lstrip())]
            out.extend(stub(indent))
        elif key == end:
            if not inside:
                raise ValueError(f"{end!r} without {begin!r}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{begin!r} without {end!r}")
    return "\n".join(out)


def _solution_blocks(source: str, begin: str, end: str) -> list[str]:
    """The lines inside every solution block of ``source``."""
    lines, inside = [], False
    for line in source.splitlines():
        key = line.strip()
        if key == begin:
            inside = True
        elif key == end:
            inside = False
        elif inside:
            lines.append(line)
    return lines


def _badge(kind: str, stem: str) -> nbformat.NotebookNode:
    url = f"{COLAB}/exercises/{'student' if kind == 'student' else 'solutions'}/{stem}.ipynb"
    note = ("Student notebook, generated from `exercises/source` by `python -m sts_lib.exercises build`."
            if kind == "student" else
            "**Solution notebook** (for instructors), generated from `exercises/source`: do not edit by hand.")
    cell = nbformat.v4.new_markdown_cell(f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
                                         f"({url})\n\n{note}")
    cell["id"] = "colab-badge"
    return cell


def make_student(source_nb, stem: str) -> nbformat.NotebookNode:
    """The student version of a source notebook (stubs, no solutions, no outputs)."""
    nb = copy.deepcopy(source_nb)
    cells = [_badge("student", stem)]
    for cell in nb.cells:
        tags = _tags(cell)
        if "solution" in tags:
            continue
        if cell.cell_type == "code":
            ex_id = cell.metadata.get("exercise", "")
            if "exercise" in tags:
                msg = STUB_MESSAGE.format(id=ex_id)
                cell.source = _replace_blocks(cell.source, _BEGIN, _END, lambda ind: [
                    f"{ind}# YOUR CODE HERE", f"{ind}raise NotImplementedError({msg!r})"])
            if "try-it" in tags and "raises-exception" not in tags:
                cell.metadata["tags"] = tags + ["raises-exception"]
            cell.outputs, cell.execution_count = [], None
        elif cell.cell_type == "markdown" and _MD_BEGIN in cell.source:
            cell.source = _replace_blocks(cell.source, _MD_BEGIN, _MD_END, lambda ind: [f"{ind}*Your answer here.*"])
        cells.append(cell)
    nb.cells = cells
    nb.metadata["sts_exercises"] = {"version": "student", "source": f"exercises/source/{stem}.ipynb"}
    return nb


def make_solution(source_nb, stem: str) -> nbformat.NotebookNode:
    """The solution version: marker lines removed, everything else kept (outputs added by execution)."""
    nb = copy.deepcopy(source_nb)
    cells = [_badge("solution", stem)]
    for cell in nb.cells:
        lines = [ln for ln in cell.source.splitlines() if ln.strip() not in _MARKERS]
        cell.source = "\n".join(lines)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cells.append(cell)
    nb.cells = cells
    nb.metadata["sts_exercises"] = {"version": "solution", "source": f"exercises/source/{stem}.ipynb"}
    return nb


def expected_student(student_nb) -> nbformat.NotebookNode:
    """A copy of a student notebook with the outputs its stubs must produce, for ``pytest --nbval``.

    ``try-it`` cells must raise ``NotImplementedError`` with the stub's message and
    ``check`` cells must print "not attempted"; other cells are left unrun, so nbval
    executes them (they must not fail) without comparing their output.
    """
    from . import REGISTRY

    nb = copy.deepcopy(student_nb)
    for n, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        tags, ex_id = _tags(cell), cell.metadata.get("exercise")
        if "try-it" in tags:
            cell.outputs = [nbformat.v4.new_output("error", ename="NotImplementedError",
                                                   evalue=STUB_MESSAGE.format(id=ex_id), traceback=[])]
            cell.execution_count = n + 1
            # The stub's error is deterministic even where the solution's output is not compared.
            cell.metadata["tags"] = [t for t in tags if t != "nbval-ignore-output"]
        elif "check" in tags:
            ex = REGISTRY[ex_id]
            line = f"[{ex_id}] 0/{ex.points} points: not attempted (NotImplementedError)\n"
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=line)]
            cell.execution_count = n + 1
    return nb


def solution_lines(source_nb) -> set[str]:
    """Distinctive solution lines: inside solution blocks or cells, and nowhere else in the source."""
    inside, outside = [], []
    for cell in source_nb.cells:
        if "solution" in _tags(cell):
            inside += cell.source.splitlines()
            continue
        inside += _solution_blocks(cell.source, _BEGIN, _END) + _solution_blocks(cell.source, _MD_BEGIN, _MD_END)
        outside += _replace_blocks(_replace_blocks(cell.source, _BEGIN, _END, lambda i: []),
                                   _MD_BEGIN, _MD_END, lambda i: []).splitlines()
    seen = {ln.strip() for ln in outside}
    return {ln.strip() for ln in inside
            if len(ln.strip()) >= 8 and not ln.strip().startswith("#") and ln.strip() not in seen}


def find_leaks(source_nb, student_nb) -> list[str]:
    """Everything in ``student_nb`` that reveals a solution; an empty list means clean."""
    leaks = []
    secret = solution_lines(source_nb)
    for k, cell in enumerate(student_nb.cells):
        for marker in _MARKERS:
            if marker in cell.source:
                leaks.append(f"cell {k}: solution marker {marker!r}")
        if "solution" in _tags(cell):
            leaks.append(f"cell {k}: a cell tagged 'solution'")
        if cell.cell_type == "code" and cell.get("outputs"):
            leaks.append(f"cell {k}: stored outputs")
        for line in cell.source.splitlines():
            if line.strip() in secret:
                leaks.append(f"cell {k}: solution line {line.strip()!r}")
    return leaks


def execute(nb, cwd: str | Path, timeout: int = 600) -> nbformat.NotebookNode:
    """Run a notebook in a fresh ``python3`` kernel with ``cwd`` as working directory."""
    from nbclient import NotebookClient

    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(cwd)}})
    client.execute()
    return nb


def _write(nb, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.validate(nb)
    nbformat.write(nb, str(path))


def build(source_dir: str | Path = "exercises/source", out_dir: str | Path = "exercises", *,
          execute_solutions: bool = True, only: list[str] | None = None, log=print,
          book_dir: str | Path | None = BOOK_DIR) -> list[Path]:
    """Write ``out_dir/student/*.ipynb`` and ``out_dir/solutions/*.ipynb`` from ``source_dir``,
    and the book's exercise pages ``book_dir/*.md`` (None: skip them).

    Refuses to write a student notebook that :func:`find_leaks` flags. Returns the written paths.
    """
    source_dir, out_dir = Path(source_dir), Path(out_dir)
    written = []
    paths = sorted(source_dir.glob("ex*.ipynb"))
    if not paths:
        raise FileNotFoundError(f"no exercise notebooks (ex*.ipynb) in {source_dir}")
    for path in paths:
        stem = path.stem
        if only and stem not in only:
            continue
        src = nbformat.read(str(path), as_version=4)
        student = make_student(src, stem)
        leaks = find_leaks(src, student)
        if leaks:
            raise RuntimeError(f"{path}: the student version would leak solutions: {leaks[:5]}")
        solution = make_solution(src, stem)
        if execute_solutions:
            log(f"executing the solution of {stem} ...")
            (out_dir / "solutions").mkdir(parents=True, exist_ok=True)
            execute(solution, out_dir / "solutions")
        for nb, sub in ((student, "student"), (solution, "solutions")):
            target = out_dir / sub / f"{stem}.ipynb"
            _write(nb, target)
            written.append(target)
            log(f"wrote {target}")
    if book_dir is not None:
        written += build_book_pages(source_dir, book_dir, only=only, log=log)
    return written


# -- the book's exercise pages (book/exercises/*.md), generated from the same source -------------

_HEADING = re.compile(r"^##\s+Exercise\s+(\d+)\.(\d+):\s*(.+?)\s*$")
_DETAILS = re.compile(r"<details>\s*<summary>(.*?)</summary>(.*?)</details>", re.S)
_GENERATED = ("<!-- Generated by `python -m sts_lib.exercises build` from exercises/source/{stem}.ipynb: "
              "do not edit; edit the source notebook. tests/test_book.py fails when this page drifts. -->")


def _fence(body: str, char: str = ":") -> str:
    """A colon (or backtick) fence one longer than any run of the same character at a line start in ``body``."""
    runs = [len(m.group(0)) for m in re.finditer(rf"^\s*{re.escape(char)}{{3,}}", body, flags=re.M)]
    return char * max([3] + [r + 1 for r in runs])


_DISPLAY = re.compile(r"[ \t]*\$\$(.+?)\$\$([.,:;]?)[ \t]*\n?", re.S)


def _display_math_blocks(text: str) -> str:
    """Put every ``$$...$$`` on lines of its own: MyST reads display math only as a block of its own
    (a notebook's Markdown also accepts it inside a paragraph); trailing punctuation moves inside."""
    return _DISPLAY.sub(lambda m: f"\n\n$$\n{m.group(1).strip()}{m.group(2)}\n$$\n\n", text).replace("\n\n\n", "\n\n")


def _split_markdown(source: str) -> tuple[str, str]:
    """(statement, solution) of a markdown cell: the text outside and inside its solution blocks."""
    statement = _replace_blocks(source, _MD_BEGIN, _MD_END, lambda ind: [f"{ind}*Your answer here.*"])
    solution = "\n".join(_solution_blocks(source, _MD_BEGIN, _MD_END))
    return _display_math_blocks(statement), _display_math_blocks(solution)


def _directive(name: str, arg: str, options: list[str], body: str) -> str:
    body = body.strip("\n")
    fence = _fence(body)
    return "\n".join([f"{fence}{{{name}}} {arg}".rstrip(), *options, "", body, fence])


def _code_block(code: str) -> str:
    code = code.strip("\n")
    fence = _fence(code, "`")
    return f"{fence}python\n{code}\n{fence}"


def book_page(source_nb, stem: str) -> str:
    """The MyST page for the book: each exercise's statement, hints and a code skeleton in an
    ``{exercise}`` directive, and its solution in a closed ``{solution}`` dropdown.

    Generated from the same source notebook as the student and solution notebooks, so the three
    cannot drift apart. A chapter includes it with ``{include}``; labels are ``ex-<id>``.
    """
    chapter_intro = ""
    first = source_nb.cells[0] if source_nb.cells else None
    if first is not None and first.cell_type == "markdown":
        lines = [ln for ln in first.source.splitlines() if not ln.startswith("# ")]
        chapter_intro = "\n".join(lines).strip()
    parts = [_GENERATED.format(stem=stem), "",
             f"{chapter_intro} Here you can read each exercise, its hints and, for self-study, a solution; "
             f"the checker in the student notebook `{stem}.ipynb` grades your code and says what is wrong.", ""]
    exercises, current = [], None
    for cell in source_nb.cells:
        tags = _tags(cell)
        m = _HEADING.match(cell.source.splitlines()[0]) if cell.cell_type == "markdown" and cell.source else None
        if m:
            current = {"number": f"{m.group(1)}.{m.group(2)}", "title": m.group(3), "statement": [],
                       "hints": [], "code": [], "stub": [], "solution_md": [], "discussion": [], "id": None}
            exercises.append(current)
            body = "\n".join(cell.source.splitlines()[1:]).strip()
            st, sol = _split_markdown(body)
            current["statement"].append(st)
            if sol:
                current["solution_md"].append(sol)
            continue
        if current is None:
            continue
        if cell.cell_type == "code":
            if "exercise" in tags:
                current["id"] = current["id"] or cell.metadata.get("exercise")
                current["stub"].append(_replace_blocks(cell.source, _BEGIN, _END, lambda ind: [
                    f"{ind}# YOUR CODE HERE", f"{ind}raise NotImplementedError"]))
                current["code"].append("\n".join(ln for ln in cell.source.splitlines()
                                                  if ln.strip() not in _MARKERS))
            elif "solution" in tags:
                current["code"].append(cell.source)
            continue
        if "solution" in tags:
            current["solution_md"].append(cell.source)
            continue
        hints = _DETAILS.findall(cell.source)
        if hints:
            current["hints"] += [(t.strip(), _display_math_blocks(b.strip())) for t, b in hints]
            continue
        if cell.source.lstrip().startswith("That is all"):
            continue
        st, sol = _split_markdown(cell.source)
        if current["stub"]:
            current["discussion"].append(st)               # after the code: interprets the try-it output
        else:
            current["statement"].append(st)
            if sol:
                current["solution_md"].append(sol)
    for ex in exercises:
        label = "ex-" + (ex["id"] or ex["number"]).replace(".", "-").replace("_", "-")
        body = ["\n\n".join(s for s in ex["statement"] if s.strip())]
        if ex["stub"]:
            body += ["", "Complete:", "", _code_block("\n\n".join(ex["stub"]))]
        for title, text in ex["hints"]:
            body += ["", _directive("admonition", title, [":class: dropdown"], text)]
        parts += [_directive("exercise", ex["title"], [f":label: {label}"], "\n".join(body)), ""]
        sol = []
        if ex["code"]:
            sol += [_code_block("\n\n".join(ex["code"]))]
        sol += [s.strip() for s in ex["solution_md"] + ex["discussion"] if s.strip()]
        if sol:
            parts += [_directive("solution", label, [":class: dropdown"], "\n\n".join(sol)), ""]
    return "\n".join(parts).rstrip() + "\n"


def build_book_pages(source_dir: str | Path = "exercises/source", book_dir: str | Path = BOOK_DIR, *,
                     only: list[str] | None = None, log=print) -> list[Path]:
    """Write ``book_dir/<stem>.md`` (see :func:`book_page`) for every source notebook."""
    source_dir, book_dir = Path(source_dir), Path(book_dir)
    written = []
    for path in sorted(source_dir.glob("ex*.ipynb")):
        if only and path.stem not in only:
            continue
        text = book_page(nbformat.read(str(path), as_version=4), path.stem)
        target = book_dir / f"{path.stem}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
            log(f"wrote {target}")
        written.append(target)
    return written


def stored_check_lines(nb) -> list[str]:
    """The ``[exN.name] p/P points: ...`` lines stored in a notebook's outputs."""
    lines = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            text = out.get("text", "") if out.get("output_type") == "stream" else ""
            lines += re.findall(r"^\[ex\d\.\w+\] \d+/\d+ points: .*$", text, flags=re.M)
    return lines
