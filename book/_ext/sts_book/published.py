"""The book's PDFs on the web: published beside the HTML book, linked from its pages and every page's download menu.

Two PDFs (:data:`EDITIONS`): the course PDF (``make pdf``, ``_build/latex/sts-course.pdf``, with solutions and the
self-checks' feedback at the end of each chapter) and the student edition (``make pdf-student``,
``_build/student/latex/sts-course.pdf``, with neither), published as ``sts-course.pdf`` and
``sts-course-student.pdf`` at the root of the HTML output. A PDF is linked only once it is built, so no link
dangles and ``make book`` needs no TeX:

* ``{sts-pdf}`text``` and ``{sts-pdf-student}`text``` (the front page, the instructor guide): ``text`` linked to
  that PDF when it is built, plain text otherwise (and always in a PDF: :func:`pdf_role`);
* the download menu of every page (sphinx-book-theme's ``.ipynb``/``.md``/``.pdf``): its ``.pdf`` entry printed the
  web page (``window.print()``); here it is replaced by a link to each PDF built (:func:`_download_menu`), and
  dropped when none is;
* the HTML build copies each PDF it links into its output (:func:`_ship`).

The student edition's web book (``make book-student``, ``hide_solutions``) links and ships the student PDF only. A
page whose links were decided for another set of PDFs is read again (an ``env-get-outdated`` hook; its execution is
cached), and a change of that set changes the configuration value :data:`CONFIG` (rebuild ``html``), so Sphinx
writes every page again with its new menu.

What the book does not publish is linked where the course's repository publishes it:
``{sts-repo}`title <README.md#publishing-your-own-copy>``` (the instructor guide's link to the README) links a file
of the repository on GitHub, at the home the book is built from (``_config.yml``'s ``repository: url, branch``, which
Jupyter Book passes to the theme as ``repository_url`` and ``repository_branch``), so that a fork's book links the
fork's files and no source names the home; without a GitHub home the title is plain text (:func:`repository_role`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from docutils import nodes

#: edition -> (the name it is published under, where its build leaves it under ``_build``, its menu entry)
EDITIONS = {
    "course": ("sts-course.pdf", "latex/sts-course.pdf", "book (PDF)"),
    "student": ("sts-course-student.pdf", "student/latex/sts-course.pdf", "student edition (PDF)"),
}
#: The configuration value that holds the editions this build links (set when the configuration is read).
CONFIG = "sts_pdfs"
_MENU = "download-buttons"  # sphinx-book-theme's label of the download menu
_PRINT = "download-pdf-button"  # ... and of its entry that prints the page


def _student(config) -> bool:
    return bool(getattr(config, "hide_solutions", False))


def _build_dir(app) -> Path:
    """``_build``: the output folder's parent (``_build/html``), or its grandparent (``_build/student/html``)."""
    out = Path(app.outdir)
    return out.parent.parent if out.parent.name == "student" else out.parent


def _html_out(app) -> bool:
    return Path(app.outdir).name == "html"


def _present(app, html: bool) -> tuple[str, ...]:
    """The editions an HTML build (``html``) links: in the student edition the student PDF alone; each only when its
    PDF is built. None outside HTML."""
    if not html:
        return ()
    wanted = ("student",) if _student(app.config) else tuple(EDITIONS)
    return tuple(e for e in wanted if (_build_dir(app) / EDITIONS[e][1]).is_file())


def built(app) -> tuple[str, ...]:
    """The editions this build links (:func:`_present`)."""
    return _present(app, app.builder.format == "html")


def _role(edition: str):
    def role(name, rawtext, text, lineno, inliner, options=None, content=None):
        env = inliner.document.settings.env
        linked = edition in built(env.app)
        if not hasattr(env, "sts_pdf_pages"):
            env.sts_pdf_pages = {}
        env.sts_pdf_pages[env.docname] = (env.app.builder.format, built(env.app))
        if not linked:
            return [nodes.inline(rawtext, text)], []
        uri = "../" * env.docname.count("/") + EDITIONS[edition][0]
        return [nodes.reference(rawtext, text, refuri=uri)], []

    role.__doc__ = f"``{{sts-pdf...}}`text```: ``text`` linked to the {edition} PDF where it is built, else plain."
    return role


pdf_role = _role("course")
student_pdf_role = _role("student")


def _outdated(app, env, added, changed, removed) -> list[str]:
    """Pages whose links were decided for another state (another builder, another set of PDFs built)."""
    now = (app.builder.format, built(app))
    return [
        doc
        for doc, state in getattr(env, "sts_pdf_pages", {}).items()
        if tuple(state) != now and doc in env.found_docs and doc not in changed
    ]


def _purge(app, env, docname) -> None:
    getattr(env, "sts_pdf_pages", {}).pop(docname, None)


def _merge(app, env, docnames, other) -> None:
    if not hasattr(env, "sts_pdf_pages"):
        env.sts_pdf_pages = {}
    env.sts_pdf_pages.update({d: s for d, s in getattr(other, "sts_pdf_pages", {}).items() if d in docnames})


def menu_entries(editions, pathto) -> list[dict]:
    """The download menu's entries for the PDFs of ``editions`` (sphinx-book-theme's link buttons).

    >>> [b["text"] for b in menu_entries(("course", "student"), lambda name, _: name)]
    ['book (PDF)', 'student edition (PDF)']
    """
    return [
        {
            "type": "link",
            "url": pathto(EDITIONS[e][0], 1),
            "text": EDITIONS[e][2],
            "tooltip": f"Download the {EDITIONS[e][2].replace(' (PDF)', '')} as a PDF",
            "icon": "fas fa-file-pdf",
            "label": f"download-{e}-pdf-button",
        }
        for e in editions
    ]


def _download_menu(app, pagename, templatename, context, doctree) -> None:
    """Every page's download menu links the PDFs built instead of printing the page."""
    for group in context.get("header_buttons", []):
        if group.get("label") == _MENU:
            kept = [b for b in group["buttons"] if b.get("label") != _PRINT]
            group["buttons"] = kept + menu_entries(built(app), context["pathto"])


def _ship(app, exception) -> None:
    """After an HTML build, copy each PDF it links to the root of its output, where the links point."""
    if exception is None:
        for edition in built(app):
            name, made, _ = EDITIONS[edition]
            shutil.copy2(_build_dir(app) / made, Path(app.outdir) / name)


def repository_url(theme_options: dict, target: str) -> str | None:
    """The address on GitHub of ``target`` (a path in the repository, with an optional ``#anchor``) at the book's home,
    or None when the home is not a GitHub repository.

    >>> repository_url({"repository_url": "https://github.com/o/r", "repository_branch": "v1"}, "README.md#a-b")
    'https://github.com/o/r/blob/v1/README.md#a-b'
    >>> repository_url({"repository_url": "file:///srv/r"}, "README.md") is None
    True
    """
    url = (theme_options or {}).get("repository_url") or ""
    if not url.startswith("https://github.com/"):
        return None
    return f"{url.rstrip('/')}/blob/{theme_options.get('repository_branch') or 'main'}/{target.lstrip('/')}"


def repository_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{sts-repo}`title <path#anchor>``` (or ``{sts-repo}`path```): ``title`` linked to that file of the course's
    repository on GitHub, plain where the home is not on GitHub."""
    from sphinx.util.nodes import split_explicit_title

    _, title, target = split_explicit_title(text)
    uri = repository_url(inliner.document.settings.env.config.html_theme_options, target)
    if uri is None:
        return [nodes.inline(rawtext, title)], []
    return [nodes.reference(rawtext, title, refuri=uri)], []


def setup(app):
    app.add_config_value(CONFIG, (), "html")
    # Before the builder is made: its build information hashes the configuration values of rebuild "html", so a
    # change of the PDFs built writes every page again. An output folder named html is an HTML build.
    app.connect("config-inited", lambda app, config: setattr(config, CONFIG, _present(app, _html_out(app))))
    app.add_role("sts-pdf", pdf_role)
    app.add_role("sts-pdf-student", student_pdf_role)
    app.add_role("sts-repo", repository_role)
    app.connect("env-get-outdated", _outdated)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    # After sphinx-book-theme has made the header's buttons (priority 501).
    app.connect("html-page-context", _download_menu, priority=600)
    app.connect("build-finished", _ship)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
