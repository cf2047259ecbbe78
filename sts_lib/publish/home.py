"""The course's home, written once: ``repository: url/branch`` in ``_config.yml``, and the sync that copies it.

A fork publishes the course from its own repository, so every place a learner is sent to (the install
cell of each chapter and exercise notebook, the exercises' Colab links, the citation) must follow one
setting. :func:`read_home` reads it into a :class:`Home` record, which derives everything else: the pip
requirement ``git+URL@BRANCH``, the Colab base URL, the GitHub Pages address. :func:`sync` rewrites the
authored sources (``book/src/NN_*.md`` and ``exercises/source/ex*.ipynb``) in place: each source's install
line (``sts-lib... @ git+URL@BRANCH``) says which home the file was last written for, and every form of that
old home in the file (pip requirement, Colab link, repository URL) becomes the configured one. A file that
already agrees is not touched (so ``make notebooks`` regenerates nothing and the book's execution cache
stays valid); ``make notebooks`` and ``make exercises`` run the sync first, and the generated notebooks
follow their sources. The exercise builder asks :class:`Home` for its Colab badges.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["CONFIG", "Home", "HomeError", "INSTALL_LINE", "REPO", "managed_sources", "read_home", "rewrite",
           "written_home", "sync"]  # fmt: skip

REPO = Path(__file__).resolve().parents[2]  # the checkout this package sits in (an editable install)
CONFIG = "_config.yml"
# The install line every managed source carries, e.g. ``"sts-lib[widgets] @ git+https://github.com/o/r@main"``.
# Its URL and branch are the home the file was last written for: the anchor of the rewrite.
INSTALL_LINE = re.compile(r"sts-lib(?:\[[\w,]+\])? @ git\+(?P<url>[^\s\"'@\\]+)@(?P<branch>[^\s\"'\\]+)")
_GITHUB = re.compile(
    r"https://github\.com/(?P<owner>[A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))/"
    r"(?P<repo>[A-Za-z0-9._-]+)"
)
_LOCAL = re.compile(r"file:///[^\s\"'@\\]+")
_BRANCH = re.compile(r"[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)*")
GITHUB_RULE = "https://github.com/OWNER/REPO (no trailing slash, no .git)"
URL_RULE = f"{GITHUB_RULE}, or file:///PATH of a local git repository (offline tests and mirrors; no Colab links)"
BRANCH_RULE = "a git branch name: letters, digits, '.', '_', '-' and '/' between parts; no '..', no '@'"


class HomeError(ValueError):
    """A bad or missing ``repository`` setting, or a source the sync cannot read; the message says which."""


@dataclass(frozen=True)
class Home:
    """Where the course lives: a repository URL and a branch (``_config.yml``'s ``repository:``).

    >>> h = Home("https://github.com/someone/sts-fork", "spring")
    >>> h.pip_url
    'git+https://github.com/someone/sts-fork@spring'
    >>> h.colab("exercises/student/ex1_task.ipynb")
    'https://colab.research.google.com/github/someone/sts-fork/blob/spring/exercises/student/ex1_task.ipynb'
    >>> h.pages_url
    'https://someone.github.io/sts-fork/'
    >>> Home("https://github.com/someone/sts-fork.git", "main")
    Traceback (most recent call last):
    ...
    sts_lib.publish.home.HomeError: repository.url is 'https://github.com/someone/sts-fork.git': ...
    """

    url: str
    branch: str = "main"
    source: str = field(default=CONFIG, compare=False)  # where the setting was read, for error messages

    def __post_init__(self):
        url_ok = _GITHUB.fullmatch(self.url) or _LOCAL.fullmatch(self.url)
        if not isinstance(self.url, str) or not url_ok or self.url.endswith((".git", "/")):
            raise HomeError(f"repository.url is {self.url!r}: it must be {URL_RULE} ({self.source})")
        if (
            not isinstance(self.branch, str)
            or not _BRANCH.fullmatch(self.branch)
            or ".." in self.branch
            or self.branch.startswith("-")
            or self.branch.endswith((".lock", "."))
        ):
            raise HomeError(f"repository.branch is {self.branch!r}: it must be {BRANCH_RULE} ({self.source})")

    @property
    def is_github(self) -> bool:
        return self.url.startswith("https://github.com/")

    @property
    def pip_url(self) -> str:
        """What pip installs the library from: ``git+URL@BRANCH``."""
        return f"git+{self.url}@{self.branch}"

    def _github(self) -> re.Match:
        if not self.is_github:
            raise HomeError(
                f"repository.url is {self.url!r}: Colab and GitHub Pages need a GitHub repository, "
                f"{GITHUB_RULE} ({self.source})"
            )
        return _GITHUB.fullmatch(self.url)

    @property
    def colab_base(self) -> str:
        """Colab's address of the branch's files: append a notebook's path (``exercises/student/...``)."""
        m = self._github()
        return f"https://colab.research.google.com/github/{m['owner']}/{m['repo']}/blob/{self.branch}"

    def colab(self, path: str) -> str:
        return f"{self.colab_base}/{path}"

    @property
    def pages_url(self) -> str:
        """Where GitHub Pages publishes the book (``.github/workflows/book.yml``)."""
        m = self._github()
        return f"https://{m['owner'].lower()}.github.io/{m['repo']}/"

    @property
    def student_pages_url(self) -> str:
        """Where GitHub Pages publishes the student edition, beside the course (``make site``: ``student/``)."""
        return f"{self.pages_url}student/"


def read_home(root: str | Path | None = None) -> Home:
    """The home configured in ``ROOT/_config.yml`` (default: the checkout this package sits in)."""
    import yaml  # the book's tooling has it (jupyter-book); a learner's install never reads the config

    path = Path(root if root is not None else REPO) / CONFIG
    if not path.is_file():
        raise HomeError(f"{path} is missing: the course's home is its repository: url and branch")
    repo = (yaml.safe_load(path.read_text()) or {}).get("repository")
    if not isinstance(repo, dict) or not repo.get("url"):
        raise HomeError(f"repository.url is missing in {path}: set it to {URL_RULE}")
    return Home(repo["url"], repo.get("branch", "main"), source=str(path))


def managed_sources(root: str | Path | None = None) -> list[Path]:
    """The files that carry the home: every chapter source and exercise or project source, and the student and
    solution notebooks built from the latter (the notebooks the book's Colab links open, committed): `make book`
    (its ``notebooks`` step) rewrites the home in all of them, so a fork that changes the one setting and runs it
    has nothing on the old home, without building the exercises again (which executes every solution)."""
    root = Path(root if root is not None else REPO)
    exercises = [
        p
        for folder in ("source", "student", "solutions")
        for p in (root / "exercises" / folder).glob("*.ipynb")
        if p.name.startswith(("ex", "pr"))
    ]
    return sorted([*(root / "book" / "src").glob("[0-9][0-9]_*.md"), *exercises])


def written_home(text: str, name: str = "the text") -> Home:
    """The home a source was last written for, read from its install line(s)."""
    found = {(m["url"], m["branch"]) for m in INSTALL_LINE.finditer(text)}
    if len(found) != 1:
        what = "no install line" if not found else f"install lines for {len(found)} different homes"
        raise HomeError(
            f'{name}: {what}; its first code cell must install "sts-lib @ git+URL@BRANCH" (found: {sorted(found)})'
        )
    url, branch = found.pop()
    return Home(url, branch, source=name)


def rewrite(text: str, new: Home, name: str = "the text") -> str:
    """``text`` with every form of the home it was written for replaced by ``new``'s (unchanged if equal).

    >>> old = 'pip install "sts-lib @ git+https://github.com/a/b@main"; see https://github.com/a/b or https://github.com/a/bc'
    >>> rewrite(old, Home("https://github.com/c/d", "v2"))
    'pip install "sts-lib @ git+https://github.com/c/d@v2"; see https://github.com/c/d or https://github.com/a/bc'
    """
    old = written_home(text, name)
    if old == new:
        return text
    replacements = {old.pip_url: new.pip_url, old.url: new.url}
    if old.is_github and old.colab_base in text:
        if not new.is_github:
            raise HomeError(
                f"{name} links to Colab, which opens notebooks from GitHub only: repository.url "
                f"must be {GITHUB_RULE}, not {new.url!r} ({new.source})"
            )
        replacements[old.colab_base] = new.colab_base
    # One pass over the longest forms first; a URL counts only as a whole (not the start of a longer name).
    pattern = "|".join(f"{re.escape(f)}(?![\\w.-])" for f in sorted(replacements, key=len, reverse=True))
    return re.sub(pattern, lambda m: replacements[m.group(0)], text)


def sync(root: str | Path | None = None, home: Home | None = None, *, check: bool = False, log=print) -> list[Path]:
    """Write the configured home into every managed source that differs; return those files.

    With ``check=True`` nothing is written: the list says which files are out of date.
    """
    home = home or read_home(root)
    changed = []
    for path in managed_sources(root):
        text = path.read_text()
        new = rewrite(text, home, name=str(path))
        if new != text:
            changed.append(path)
            if not check:
                path.write_text(new)
                log(f"{path}: home set to {home.pip_url}")
    return changed
