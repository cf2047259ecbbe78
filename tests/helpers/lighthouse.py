"""Lighthouse's slow phone over the built book, served gzipped as GitHub Pages serves it (issue 48, item 1).

npm's ``lighthouse`` (pinned in the Makefile: 12.x, as 13 wants Node 22) drives Debian's Chromium with its default
mobile emulation: a moto g power on slow 4G, the CPU slowed 4x, throttling simulated from one observed load. What
the audit simulates is computed from the tasks this host ran, so a busy host scores lower: a page whose first run
misses a held figure or the bar is judged by the median of seven runs (Lighthouse's docs/variability.md advises five; a
late first frame, below, can come in several runs of a page), its runs stopping once the median of seven is decided
(four runs that meet a figure, or four that miss it: :func:`decided`), and every run's figures are kept, with the
host's load and idle share as the run began. One Node process runs Lighthouse for every page (Runner), each run in a
Chromium of its own.

A host shared with other work moves the scores by more than the bar's margin (the introduction, four runs each:
0.96-0.97 alone, 0.88 beside two busy processes). So `make test` audits the book with the host to itself, after the
other tests (docs/variability.md: no other work on the machine that runs it), each run once the cores have been idle
for a second (QUIET).

Chromium runs with Paint Holding off (CHROME_FLAGS). With it on, a formula-heavy chapter sometimes reached the screen a
second late although it was parsed, styled, painted and committed by 0.3 s: Lighthouse navigates from about:blank,
Chromium holds the blank page until the new one's first contentful paint, and in those runs no new frame was drawn for
about a second after the first commit (the trace: 58 frames in a row dropped, the main thread idle for the last
0.24-0.43 s of them, and the next frame at 1.25-1.33 s in every such run). Lighthouse's simulation then counted every
task before that frame (FCP 2.1 -> 3.0-3.2 s, score 0.95 -> 0.77-0.86). How often it came varied from run to run of the
suite, the cores idle before every run: 0 of 20 runs in one fresh clone, 9 of 14 on chapters 3 and 5 in the next.
Chapter 3 drew the late frame in 7 of 8 runs beside two busy processes and in 2 of 7 on the quiet host with Paint
Holding on; with it off, in none of 3 and none of 7 (chapter 5: none of 7; the first frame at 0.33-0.41 s under load).
Two changes on the page's side (the theme's forced layouts deferred; every section laid out only near the screen) left
it late in 6 of 6 runs. The same second-long gap in headless runs, with BeginFrames withheld from the page's compositor
by viz, is GoogleChrome/lighthouse#17148 (open; it reproduces on PageSpeed Insights) and #17230. With the hold off the
audit measures when the page first paints, which is what Lighthouse's FCP means; a reader's browser keeps its hold,
which only keeps the previous page on screen until the new one has painted. ``python tests/helpers/lighthouse.py [PAGE
...]`` prints the table for the built book and writes it to _build/lighthouse.json.
"""

from __future__ import annotations

import functools
import gzip
import io
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from book_site import HTML, ROOT, QuietHandler, chromium, pages, redirect_target, serve  # noqa: E402

LIGHTHOUSE = ROOT / ".venv" / "lighthouse" / "node_modules" / ".bin" / "lighthouse"
#: Issue 48's bar for every page audited, held: performance 0.90. Its other bar, accessibility 1.00, is held by the
#: browser passes (tests/helpers/browser.py: every rule Lighthouse's accessibility category scores, at every impact, on
#: every page at 1280 and 390 px), which ran the same axe-core rules as that category, and Lighthouse runs its
#: performance category only: the category's axe-core run was 3.3 s of a chapter's 12 s (interleaved runs of chapters
#: 3 and 5, four each: the same performance scores with and without it, 0.94-0.99).
PERFORMANCE = 0.90
#: Total blocking time held on every page (median): before the mathematics was typeset at build time a chapter
#: blocked a slow phone for 480-1,300 ms (the review's audit) and 4,200 ms here (chapter 3); the stock Jupyter Book
#: page blocks for 90 ms.
MAX_TBT_MS = 800
#: A page's first load, everything it fetched (bytes as sent, gzipped).
MAX_FIRST_LOAD = 2_500_000
#: The pages the bar applies to: every chapter, project and appendix page but the two generated from the library's
#: docstrings (their scores are recorded, not held to the bar).
EXEMPT = ("book/appendix/api.html", "book/appendix/api_tools.html")
RUNS = 7
#: Debian's Chromium as Lighthouse drives it here: headless, without the GPU this host lacks, and with Paint Holding
#: off (the module's docstring says why).
CHROME_FLAGS = "--headless=new --no-sandbox --disable-gpu --disable-features=PaintHolding"


@functools.lru_cache(maxsize=256)
def _gzipped(path: str, mtime_ns: int) -> bytes:
    """The file at ``path`` gzipped, once per version of it (``mtime_ns``): every run of every page asks for the same
    style sheets and scripts, and compressing a chapter's took about 40 ms in the server while the page loads."""
    with open(path, "rb") as f:
        return gzip.compress(f.read(), 6)


class _Gzip(QuietHandler):
    """A static server that compresses text as GitHub Pages does (HTML, CSS, JavaScript, SVG, JSON)."""

    TEXT = ("text/", "application/javascript", "application/json", "image/svg+xml")

    def send_head(self):
        path = self.translate_path(self.path)
        if os.path.isdir(path):
            path = os.path.join(path, "index.html")
        kind = self.guess_type(path)
        if (
            "gzip" not in self.headers.get("Accept-Encoding", "")
            or not kind.startswith(self.TEXT)
            or not (os.path.isfile(path))
        ):
            return super().send_head()
        body = _gzipped(path, os.stat(path).st_mtime_ns)
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Vary", "Accept-Encoding")
        self.end_headers()
        return io.BytesIO(body)


def redirects(page: Path) -> bool:
    """Whether ``page`` is only a redirect (a meta refresh): the front page, ``index.html``, sends the reader to the
    introduction. Lighthouse audits such a page at the page it redirects to, and says to test that page directly;
    here half its runs of ``index.html`` stopped at the 45 s load limit ("results may be incomplete", 2026-12-06:
    2 of 4 runs, 48-49 s, against 6-7 s), so the redirect is left out and its target is audited. The browser passes
    follow the redirect and check where it lands."""
    return redirect_target(page) is not None


def audited_pages() -> list[str]:
    """Every page of the book Lighthouse audits, relative to the HTML root: the chapters, projects and appendices (not
    the search page, the indexes, nor a page that only redirects)."""
    return [
        p.relative_to(HTML).as_posix() for p in pages() if p.relative_to(HTML).parts[0] == "book" and not redirects(p)
    ]


#: A run starts once the host's cores have been this idle for a second (or after QUIET_WAIT_S, and the run records
#: how idle they were), so that other work on the host is not counted against a page.
QUIET, QUIET_WAIT_S = 0.9, 90.0


def _idle_fraction(seconds: float = 1.0) -> float | None:
    """How idle the host's cores were over the next ``seconds`` (/proc/stat; None where there is none)."""

    def ticks() -> tuple[int, int]:
        with open("/proc/stat") as f:
            values = [int(v) for v in f.readline().split()[1:]]
        return values[3] + values[4], sum(values)  # idle and iowait; all

    try:
        idle0, all0 = ticks()
        time.sleep(seconds)
        idle1, all1 = ticks()
    except OSError:
        return None
    return (idle1 - idle0) / max(all1 - all0, 1)


def wait_until_quiet() -> float | None:
    """Wait (at most QUIET_WAIT_S) for a second in which the cores are QUIET idle; return the last second's idle."""
    deadline = time.monotonic() + QUIET_WAIT_S
    while True:
        idle = _idle_fraction()
        if idle is None or idle >= QUIET or time.monotonic() > deadline:
            return idle


#: The flags every run is given, as the CLI's ``--only-categories=performance --quiet``, and without the report's
#: full-page picture (for its viewer's element thumbnails; no audit reads it: 1.8-2.0 s of a chapter's run).
FLAGS = {"onlyCategories": ["performance"], "disableFullPageScreenshot": True, "logLevel": "silent"}
RUNNER = Path(__file__).with_name("lighthouse_runner.mjs")


class Runner:
    """One Node process that runs Lighthouse once per :meth:`run` (tests/helpers/lighthouse_runner.mjs), each run
    in a Chromium of its own launched as the CLI launches it; a context manager. Starting Node, loading Lighthouse and
    resolving its configuration took about 4 s of each CLI run here."""

    def __enter__(self) -> Runner:
        self.proc = subprocess.Popen(
            ["node", str(RUNNER), str(LIGHTHOUSE.parents[1])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        return self

    def __exit__(self, *exc) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def run(self, url: str) -> dict:
        """Lighthouse's report (its JSON result) for ``url``."""
        job = {"url": url, "chromePath": chromium(), "chromeFlags": CHROME_FLAGS.split(), "flags": FLAGS}
        self.proc.stdin.write(json.dumps(job) + "\n")
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"lighthouse's runner stopped on {url} (exit status {self.proc.poll()})")
        report = json.loads(line)
        if "error" in report or report.get("runtimeError"):
            raise RuntimeError(f"lighthouse failed on {url}: {report.get('error') or report['runtimeError']}")
        return report


def run_once(url: str, runner: Runner) -> dict:
    """One Lighthouse run of ``url``, once the host is quiet: scores and the figures a reader waits on."""
    idle = wait_until_quiet()
    load = round(os.getloadavg()[0], 2)  # what else the host was doing as the run began
    report = runner.run(url)
    audits = report["audits"]
    return {
        "performance": report["categories"]["performance"]["score"],
        "tbt_ms": round(audits["total-blocking-time"]["numericValue"]),
        "lcp_ms": round(audits["largest-contentful-paint"]["numericValue"]),
        "fcp_ms": round(audits["first-contentful-paint"]["numericValue"]),
        "cls": round(audits["cumulative-layout-shift"]["numericValue"], 3),
        "bytes": audits["total-byte-weight"]["numericValue"],
        "dom": audits["dom-size"]["numericValue"],
        "benchmark_index": report["environment"]["benchmarkIndex"],
        "load_1min": load,
        "idle_before": None if idle is None else round(idle, 2),
    }


#: The figures a page is held to by the median of its runs: whether one run meets each. Its weight is held on every
#: run (:func:`too_heavy`): what a first load fetches does not vary from run to run as the timings do.
HELD = {
    "performance": lambda run: run["performance"] >= PERFORMANCE,
    "tbt_ms": lambda run: run["tbt_ms"] <= MAX_TBT_MS,
}


def too_heavy(run: dict) -> bool:
    """Whether a run fetched more than :data:`MAX_FIRST_LOAD` on its first load."""
    return run["bytes"] > MAX_FIRST_LOAD


def misses(run: dict) -> bool:
    """Whether a run misses a held figure (the blocking time, the weight) or the 0.90 bar."""
    return too_heavy(run) or not all(meets(run) for meets in HELD.values())


def decided(runs: list[dict], of: int = RUNS) -> bool:
    """Whether the median of ``of`` runs is already known from the first ``runs``, whatever the others give: a
    median of seven meets a figure when four runs do, and misses it when four do not. Stopping there gives the
    verdict seven runs give, in fewer runs (a first run that misses, then four that meet: five runs, not seven). A run
    that is too heavy decides it at once: the weight is held on every run."""
    need = of // 2 + 1
    met = [sum(meets(r) for r in runs) for meets in HELD.values()]
    return (
        len(runs) >= of
        or any(map(too_heavy, runs))
        or any(len(runs) - m >= need for m in met)
        or all(m >= need for m in met)
    )


def audit(page: str, base: str, runner: Runner) -> dict:
    """``page``'s runs (one, or up to seven when the first misses a held figure, until their median is decided) and
    their medians."""
    runs = [run_once(base + page, runner)]
    if misses(runs[0]) and page not in EXEMPT:
        while not decided(runs):
            runs.append(run_once(base + page, runner))
    median = {k: statistics.median(r[k] for r in runs) for k in ("performance", "tbt_ms", "lcp_ms", "fcp_ms")}
    return {"page": page, "runs": runs, **median, "bytes": max(r["bytes"] for r in runs)}


def audit_book(selected: list[str] | None = None, held_only: bool = False) -> list[dict]:
    """``selected`` pages, or every audited page; ``held_only``: not the pages the bar does not apply to
    (:data:`EXEMPT`: recorded when asked for, by this module's command line, and never held)."""
    pages_ = selected or [p for p in audited_pages() if not (held_only and p in EXEMPT)]
    with serve(HTML, handler=_Gzip) as base, Runner() as runner:
        return [audit(page, base, runner) for page in pages_]


def table(results: list[dict]) -> str:
    rows = ["page | performance | TBT ms | LCP ms | first load kB | runs | host: load, idle before"]
    for r in results:
        rows.append(
            f"{r['page']} | {r['performance']:.2f} | {r['tbt_ms']:.0f} | "
            f"{r['lcp_ms']:.0f} | {r['bytes'] / 1e3:.0f} | {len(r['runs'])} | "
            f"{max(run['load_1min'] for run in r['runs']):.2f}, "
            f"{min(run.get('idle_before') or 0 for run in r['runs']):.0%} idle"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    found = audit_book(sys.argv[1:] or None)
    print(table(found))
    (ROOT / "_build" / "lighthouse.json").write_text(json.dumps(found, indent=1))
