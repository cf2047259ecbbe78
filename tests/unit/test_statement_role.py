"""The ``{sts-statement}`key``` role (sts_book/statement.py): a statement of the paper named outside chapter 8,
rendered from the records as chapter 8 shows it and linked to its readings dropdown there, the same text and link in
HTML and LaTeX; an unknown key fails the build naming the known keys; the verdicts are computed once per build; the
role reads sts_lib through its public API only and imports nothing of it that imports Sphinx."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from docutils import nodes

from sts_lib.chapters.ch8_reproduction import load_documents
from sts_lib.presentation.verdict_table import readings_anchor, readings_dropdown
from sts_lib.reading.confirmation import load_confirmation, standing
from sts_lib.reading.decide import statement_verdict
from sts_lib.reading.statements import STATEMENTS
from sts_lib.reading.verdicts import VERDICTS

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "book" / "_ext" / "sts_book" / "statement.py"


@pytest.fixture(scope="module")
def role():
    return importlib.import_module("sts_book.statement")


def _inliner(docname="book/05_length_generalization"):
    deps = []
    env = SimpleNamespace(docname=docname, doc2path=lambda d: f"{d}.md", note_dependency=deps.append)
    return SimpleNamespace(document=SimpleNamespace(settings=SimpleNamespace(env=env))), deps


def test_every_statement_renders_chapter_8s_verdict_and_links_its_readings(role):
    docs, conf = load_documents(), load_confirmation()
    found, files = role.shown()
    assert list(found) == [st.key for st in STATEMENTS]
    for st in STATEMENTS:
        v, _, _ = standing(st, statement_verdict(st, docs)[0], conf)
        assert found[st.key] == (v, VERDICTS[v].key, readings_anchor(st.key))  # the word, not the mark
        assert f"\n:name: {readings_anchor(st.key)}\n" in str(readings_dropdown(st.key, docs))  # the link lands
    assert len({s.label for s in found.values()}) == len(STATEMENTS)  # one label per statement
    assert all(Path(f).is_file() for f in files) and any(f.endswith("statements.py") for f in files)


def test_the_role_is_the_verdict_linked_to_chapter_8(role):
    inliner, deps = _inliner()
    (span,), msgs = role.statement_role("sts-statement", "", "fig4.quicker", 3, inliner)
    (ref,) = span.children
    word = role.shown()[0]["fig4.quicker"].text
    assert not msgs and span.astext() == word
    assert (ref["refdomain"], ref["reftype"], ref["reftarget"]) == ("std", "ref", "ch8-readings-fig4-quicker")
    assert ref["refexplicit"] and ref["refwarn"]  # a label chapter 8 lacks fails the build
    assert deps == list(role.shown()[1])  # a new result or record re-reads the page
    (titled,), _ = role.statement_role("sts-statement", "", "slightly quicker <fig4.quicker>", 3, inliner)
    assert titled.astext() == f"slightly quicker ({word})"


def test_an_unknown_key_fails_the_build_naming_the_known_keys(role):
    from sphinx.errors import ExtensionError

    inliner, _ = _inliner()
    with pytest.raises(ExtensionError) as err:
        role.statement_role("sts-statement", "", "fig9.nope", 7, inliner)
    msg = str(err.value)
    assert "book/05_length_generalization.md:7" in msg and "'fig9.nope'" in msg
    assert all(repr(st.key) in msg for st in STATEMENTS)


def test_the_verdicts_are_computed_once_per_build(role, monkeypatch):
    import sts_lib.reading.decide as decide

    calls = []
    real = decide.statement_verdict
    monkeypatch.setattr(decide, "statement_verdict", lambda st, docs: calls.append(st.key) or real(st, docs))
    role._new_build(None)
    inliner, _ = _inliner()
    for key in ("fig4.quicker", "fig5.dominates", "fig4.quicker"):
        role.statement_role("sts-statement", "", key, 1, inliner)
    assert len(calls) == len(STATEMENTS)  # once, not per use
    role._new_build(None)  # a new build computes them again
    role.shown()
    assert len(calls) == 2 * len(STATEMENTS)


def test_in_latex_a_dropdowns_label_is_a_target_before_its_title(role):
    title = nodes.rubric("", "Figure 4: every reading", ids=["ch8-readings-fig4-quicker"])
    box = nodes.container("", title, nodes.paragraph("", "body"), design_component="dropdown")
    other = nodes.rubric("", "a rubric of its own", ids=["elsewhere"])
    doc = nodes.document(None, None)
    doc += [box, other]
    role.DropdownLabels.run(SimpleNamespace(document=doc))
    target = box[0]
    assert isinstance(target, nodes.target) and target["ids"] == ["ch8-readings-fig4-quicker"]
    assert box[1] is title and title["ids"] == [] and other["ids"] == ["elsewhere"]


def _sts_lib_imports() -> list[tuple[str, list[str]]]:
    """``[(module, [names])]`` the extension imports from sts_lib."""
    out = []
    for node in ast.walk(ast.parse(SOURCE.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sts_lib"):
            out.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names if a.name.startswith("sts_lib")]
    return out


def test_the_role_uses_sts_libs_public_api_and_no_module_that_imports_sphinx():
    imports = _sts_lib_imports()
    assert imports, "the role reads the records through sts_lib"
    private = [f"{m}.{n}" for m, names in imports for n in [*m.split("."), *names] if n.startswith("_")]
    assert not private, private
    code = "import sys\n" + "".join(f"import {m}\n" for m, _ in imports)
    code += "print(sorted({k.split('.')[0] for k in sys.modules} & {'sphinx', 'docutils', 'myst_parser', 'myst_nb'}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_the_same_text_and_link_in_html_and_latex(tmp_path, role):
    """A two-page Sphinx project (MyST, sphinx-design): a page that uses the role, and chapter 8's readings dropdown
    as chapter 8 prints it. The HTML links the dropdown's id; the LaTeX ``\\hyperref`` s a ``\\label`` that exists."""
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace

    src = tmp_path / "src"
    (src / "book").mkdir(parents=True)
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(SOURCE.parents[1])!r})\n"
        "extensions = ['myst_parser', 'sphinx_design', 'sts_book.statement']\n"
        "myst_enable_extensions = ['colon_fence']\nroot_doc = 'index'\n"
        "latex_documents = [('index', 'x.tex', 'x', 'x', 'manual')]\n"
    )
    (src / "index.md").write_text(
        "# Root\n\nQuicker: {sts-statement}`fig4.quicker`.\n\n```{toctree}\nbook/08_reproduction\n```\n"
    )
    (src / "book" / "08_reproduction.md").write_text(
        f"# Eight\n\n{readings_dropdown('fig4.quicker', load_documents())}\n"
    )
    word = role.shown()[0]["fig4.quicker"].text
    out = {}
    for builder in ("html", "latex"):
        with docutils_namespace():  # each build registers its nodes and roles afresh
            app = Sphinx(src, src, tmp_path / builder, tmp_path / f"{builder}.doctrees", builder, status=None,
                         warningiserror=True, freshenv=True)  # fmt: skip
            app.build()
        out[builder] = tmp_path / builder
    html = (out["html"] / "index.html").read_text()
    assert 'href="book/08_reproduction.html#ch8-readings-fig4-quicker"' in html and word in html
    assert 'id="ch8-readings-fig4-quicker"' in (out["html"] / "book" / "08_reproduction.html").read_text()
    tex = (out["latex"] / "x.tex").read_text()
    label = r"\detokenize{book/08_reproduction:ch8-readings-fig4-quicker}"
    assert rf"\hyperref[{label}]" in tex and rf"\label{{{label}}}" in tex and word in tex
