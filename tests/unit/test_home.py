"""The course's home is written once (``_config.yml``'s ``repository:``): the sources follow it, the sync that
writes it is idempotent, and a bad setting is refused with a message naming the key and what is allowed."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sts_lib.publish.home import Home, HomeError, managed_sources, read_home, rewrite, sync, written_home

ROOT = Path(__file__).resolve().parents[2]


def _project(tmp_path: Path, url: str, branch: str = "main") -> Path:
    """A copy of the config and the managed sources with ``repository: url/branch`` set as given."""
    for src in managed_sources(ROOT) + [ROOT / "_config.yml"]:
        dst = tmp_path / src.relative_to(ROOT)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    config = tmp_path / "_config.yml"
    home = read_home(ROOT)
    text = config.read_text()
    assert f"url: {home.url}\n  branch: {home.branch}\n" in text
    config.write_text(text.replace(f"url: {home.url}\n  branch: {home.branch}\n", f"url: {url}\n  branch: {branch}\n"))
    return tmp_path


def test_every_source_follows_the_config():
    home = read_home(ROOT)
    sources = managed_sources(ROOT)
    assert len(sources) >= 30  # nine chapters; each exercise and project: source, student, solution
    assert all(written_home(p.read_text(), str(p)) == home for p in sources)
    assert sync(ROOT, check=True) == [], "a source is out of date with _config.yml: run `make notebooks`"


def test_sync_is_idempotent_and_leaves_no_old_home(tmp_path):
    old = read_home(ROOT)
    root = _project(tmp_path, "https://github.com/prof-x/sts-spring", "spring/2026")
    new = read_home(root)
    changed = sync(root, log=lambda *a: None)
    assert sorted(changed) == managed_sources(root)
    texts = {p: p.read_text() for p in managed_sources(root)}
    assert sync(root, log=lambda *a: None) == [] and sync(root, check=True) == []
    assert {p: p.read_text() for p in managed_sources(root)} == texts
    for path, text in texts.items():
        assert new.pip_url in text, path
        assert old.url.removeprefix("https://") not in text and old.colab_base.split("//")[1] not in text, path
    assert new.colab("exercises/student/ex1_task.ipynb") in texts[root / "book" / "src" / "01_task.md"]


def test_sync_check_reports_without_writing(tmp_path):
    root = _project(tmp_path, "https://github.com/prof-x/sts-spring")
    before = {p: p.read_text() for p in managed_sources(root)}
    assert sorted(sync(root, check=True)) == sorted(before)
    assert {p: p.read_text() for p in managed_sources(root)} == before
    cli = subprocess.run(
        [sys.executable, "-m", "sts_lib.publish", "sync", "--check", "--root", str(root)],
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 1 and "01_task.md" in cli.stderr


@pytest.mark.parametrize(
    "url, branch, key, allowed",
    [
        ("https://github.com/prof-x/sts-spring.git", "main", "repository.url", "no .git"),
        ("https://github.com/prof-x/sts-spring/", "main", "repository.url", "no trailing slash"),
        ("https://gitlab.com/prof-x/sts-spring", "main", "repository.url", "https://github.com/OWNER/REPO"),
        ("git@github.com:prof-x/sts-spring", "main", "repository.url", "file:///PATH"),
        ("https://github.com/prof-x/sts-spring", "main..x", "repository.branch", "no '..'"),
        ("https://github.com/prof-x/sts-spring", "a@b", "repository.branch", "no '@'"),
    ],
)
def test_a_bad_setting_names_the_key_and_what_is_allowed(tmp_path, url, branch, key, allowed):
    root = _project(tmp_path, url, branch)
    with pytest.raises(HomeError) as err:
        sync(root)
    assert f"{key} is " in str(err.value) and allowed in str(err.value) and "_config.yml" in str(err.value)


def test_the_command_line_says_what_is_wrong_without_a_traceback(tmp_path):
    root = _project(tmp_path, "https://github.com/prof-x/sts-spring.git")
    cli = subprocess.run(
        [sys.executable, "-m", "sts_lib.publish", "sync", "--root", str(root)], capture_output=True, text=True
    )
    assert cli.returncode == 2 and "repository.url is" in cli.stderr and "Traceback" not in cli.stderr


def test_a_missing_setting_is_named(tmp_path):
    (tmp_path / "_config.yml").write_text("title: x\n")
    with pytest.raises(HomeError, match="repository.url is missing"):
        read_home(tmp_path)


def test_a_local_home_installs_but_cannot_serve_colab_links(tmp_path):
    local = Home(f"file://{tmp_path}/course", "main")
    assert local.pip_url == f"git+file://{tmp_path}/course@main"
    chapter = (ROOT / "book" / "src" / "06_related_results.md").read_text()  # no Colab link in it
    assert local.pip_url in rewrite(chapter, local)
    with pytest.raises(HomeError, match="links to Colab.*https://github.com/OWNER/REPO"):
        rewrite((ROOT / "book" / "src" / "01_task.md").read_text(), local, name="01_task.md")


def test_a_source_must_name_exactly_one_home():
    with pytest.raises(HomeError, match="x.md: no install line"):
        written_home("try:\n    import sts_lib\nexcept ImportError:\n    pass\n", "x.md")
    two = '"sts-lib @ git+https://github.com/a/b@main" "sts-lib @ git+https://github.com/a/c@main"'
    with pytest.raises(HomeError, match="2 different homes"):
        written_home(two, "x.md")
