"""The book's sources read as a notebook needs them: MyST blocks, labels, numbers, titles and references.

:func:`blocks` splits a Markdown cell into lines and directives (a plain code fence kept whole); :class:`Book`
reads every page of the book once (includes expanded, as Sphinx reads them) and records where each label points
and what a reference to it reads: a box's kind and number as the book shows it (per chapter and kind, the
chapter's number from its file name, ``:nonumber:`` skipped), a section's heading, a page's title; and the
BibTeX entries as author-year text and a list entry. :mod:`sts_book.notebooks` renders the learner's notebooks with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
OUT = "notebooks"  # the learner notebooks' folder, relative to the repository (excluded from the book's sources)
CHAPTERS = "book/src"
#: Every page whose labels a chapter may reference (the chapter sources first: they define the numbers).
LABELLED = ("book/src/*.md", "book/appendix/*.md", "book/projects/*.md")  # exercises: through their {include}
BOXES = {"note": "Note", "important": "Important", "tip": "Tip", "warning": "Warning", "caution": "Caution",
         "seealso": "See also", "hint": "Hint", "attention": "Attention"}  # fmt: skip

FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|:{3,})(?P<info>.*)$")
DIRECTIVE = re.compile(r"^\{(?P<name>[\w:.-]+)\}\s*(?P<arg>.*)$")
OPTION = re.compile(r"^:(?P<key>[\w-]+):\s*(?P<value>.*)$")
TARGET = re.compile(r"^\((?P<label>[^()\s]+)\)=\s*$")
HEADING = re.compile(r"^(?P<hashes>#{1,6})\s+(?P<text>.+?)\s*#*\s*$")
ROLE = re.compile(r"\{(?P<name>[\w:.-]+)\}`(?P<text>[^`]*)`")
EXPLICIT = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]+)>$", re.S)


class NotebookError(ValueError):
    """A source this module cannot render for a notebook: the message names the file, the construct and why."""


@dataclass(frozen=True)
class Target:
    """Where a label points: its page (``book/03_gd_dynamics``), the anchor and what a reference to it reads."""

    doc: str
    anchor: str
    text: str


def doc_of(path: Path) -> str:
    """The book's page of a source: ``book/src/03_x.md`` -> ``book/03_x``; others keep their path."""
    rel = path.relative_to(ROOT).with_suffix("")
    return f"book/{rel.name}" if rel.parent.as_posix() == CHAPTERS else rel.as_posix()


def chapter_number(doc: str) -> int | None:
    """The book's number of a chapter page (``book/03_gd_dynamics`` -> 3); None for the others (unnumbered)."""
    m = re.fullmatch(r"book/(\d\d)_\w+", doc)
    return int(m[1]) if m and int(m[1]) > 0 else None


def anchor(label: str) -> str:
    """The HTML id Sphinx gives a label (docutils' ``make_id``)."""
    from docutils.nodes import make_id

    return make_id(label)


def blocks(lines: list[str]):
    """Yield ``("text", line)`` and ``("directive", name, arg, options, body_lines, fence)`` over a Markdown cell,
    keeping plain code fences whole (a directive inside one is code)."""
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            yield ("text", lines[i])
            i += 1
            continue
        char, n = m["fence"][0], len(m["fence"])
        end = next(
            (j for j in range(i + 1, len(lines)) if re.fullmatch(rf" {{0,3}}{re.escape(char)}{{{n},}}\s*", lines[j])),
            len(lines),
        )
        d = DIRECTIVE.match(m["info"].strip())
        if not d:  # a plain code fence: copied as it is
            yield from (("text", line) for line in lines[i : end + 1])
            i = end + 1
            continue
        body = [line[len(m["indent"]) :] if line.startswith(m["indent"]) else line for line in lines[i + 1 : end]]
        options, k = {}, 0
        if body[:1] == ["---"]:  # options as a YAML block
            close = body.index("---", 1)
            for line in body[1:close]:
                key, _, value = line.partition(":")
                options[key.strip()] = value.strip()
            k = close + 1
        while k < len(body) and (o := OPTION.match(body[k])):
            options[o["key"]] = o["value"]
            k += 1
        yield ("directive", d["name"], d["arg"].strip(), options, body[k:], m["fence"])
        i = end + 1


class Book:
    """The labels, titles, numbers and references of the book's sources: what a notebook's links and numbers read."""

    def __init__(self, root: Path = ROOT):
        self.root = root
        self.targets: dict[str, Target] = {}
        self.titles: dict[str, str] = {}
        self.numbers: dict[tuple[str, int], str] = {}  # (doc, index of the numbered directive) -> "Theorem 3.1"
        for pattern in LABELLED:
            for path in sorted(root.glob(pattern)):
                self._read(path)
        self.bib = bibliography(root / "book" / "references.bib")

    def _read(self, path: Path):
        doc = doc_of(path)
        lines = path.read_text(encoding="utf-8").splitlines()
        counters: dict[str, int] = {}
        pending, index = None, 0
        for kind, *rest in walk(lines, self.include_dir(path)):
            if kind == "text":
                line = rest[0]
                if t := TARGET.match(line):
                    pending = t["label"]
                elif h := HEADING.match(line):
                    text = plain(h["text"])
                    self.titles.setdefault(doc, text)
                    if pending:
                        self.targets[pending] = Target(doc, anchor(pending), text)
                        pending = None
                continue
            name, arg, options = rest[0], rest[1], rest[2]
            kind_name = name.removeprefix("prf:")
            numbered = (name.startswith("prf:") and kind_name != "proof") or name == "exercise"
            shown = kind_name.capitalize()
            if numbered:
                index += 1
                if "nonumber" not in options and (c := chapter_number(doc)) is not None:
                    counters[kind_name] = counters.get(kind_name, 0) + 1
                    shown = f"{shown} {c}.{counters[kind_name]}"
                self.numbers[(doc, index)] = shown
            if label := options.get("label") or options.get("name"):
                text = shown if numbered and shown[-1].isdigit() else (plain(arg) or label)
                self.targets[label] = Target(doc, anchor(label), text)

    def include_dir(self, path: Path) -> Path:
        """The folder an ``{include}`` of a source is read from: the page's (a chapter's page is in book/)."""
        return self.root / doc_of(path).rpartition("/")[0]

    def url(self, base: str, doc: str, label: str | None = None) -> str:
        return f"{base}{doc}.html" + (f"#{anchor(label)}" if label else "")


LEAVES = ("code-cell", "code", "code-block", "math", "bibliography", "include")


def walk(lines, folder: Path):
    """Every block of a source in document order, descending into directives (their bodies are Markdown) and
    into included files (as Sphinx reads them)."""
    for block in blocks(lines):
        yield block
        if block[0] == "directive" and block[1] == "include":
            yield from walk((folder / block[2]).read_text(encoding="utf-8").splitlines(), folder)
        elif block[0] == "directive" and block[1] not in LEAVES:
            yield from walk(block[4], folder)


def plain(text: str) -> str:
    """A heading or title without Markdown emphasis or roles' markup (their text stays)."""
    text = ROLE.sub(lambda m: EXPLICIT.sub(r"\g<title>", m["text"]), text)
    return re.sub(r"\*\*|__", "", text).strip()


def bibliography(path: Path) -> dict:
    """``{key: (author-year text, the full entry in Markdown)}`` of the book's BibTeX file."""
    from pybtex.database import parse_file

    out = {}
    for key, entry in parse_file(str(path)).entries.items():
        people = entry.persons.get("author", []) or entry.persons.get("editor", [])
        last = [" ".join(p.last_names).replace("{", "").replace("}", "") for p in people]
        who = last[0] if len(last) == 1 else " and ".join(last) if len(last) == 2 else f"{last[0]} et al."
        f = entry.fields
        year = f.get("year", "n.d.")
        names = ", ".join(
            " ".join(p.last_names) + (", " + "".join(n[0] + "." for n in p.first_names + p.middle_names) if
                                      p.first_names else "")
            for p in people
        ).replace("{", "").replace("}", "")  # fmt: skip
        venue = f.get("journal") or f.get("booktitle") or f.get("publisher") or f.get("howpublished") or ""
        title = f.get("title", "").replace("{", "").replace("}", "")
        full = f"{names} ({year}). *{title}*." + (f" {venue.replace('{', '').replace('}', '')}." if venue else "")
        if f.get("url"):
            full += f" <{f['url']}>"
        out[key] = (f"{who}, {year}", full)
    return out
