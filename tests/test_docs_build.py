"""The user guide builds: ``mkdocs build --strict`` of docs/ fails the suite on a broken link
or anchor, a page missing from the nav or a nav entry without a page (mkdocs.yml's
``validation`` turns each into a warning, strict mode into an error). The README's own links
into the repository resolve. No cluster, no Spark: a few seconds."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=config.parent, text=True, capture_output=True, timeout=300)


def _nav_pages(nav: Any) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [p for item in nav for p in _nav_pages(item)]
    if isinstance(nav, dict):
        return [p for value in nav.values() for p in _nav_pages(value)]
    return []


def _config() -> dict[str, Any]:
    # mkdocs.yml has no !!python tags, so the safe loader reads all of it
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text())


def test_the_guide_builds_strictly(tmp_path: Path) -> None:
    done = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "index.html").exists()


def test_every_page_in_docs_is_in_the_nav_and_every_nav_entry_exists() -> None:
    nav = _nav_pages(_config()["nav"])
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(set(pages) - set(nav)) == [], "pages missing from mkdocs.yml's nav"
    assert sorted(set(nav) - set(pages)) == [], "nav entries without a page"
    assert len(nav) == len(set(nav)), "a page twice in the nav"


def _copy_of_the_guide(tmp_path: Path) -> Path:
    shutil.copytree(DOCS, tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    return tmp_path / "mkdocs.yml"


def test_a_broken_link_or_anchor_fails_the_build(tmp_path: Path) -> None:
    """The strictness is real: the same build fails once a page links to nothing."""
    config = _copy_of_the_guide(tmp_path / "link")
    page = config.parent / "docs" / "index.md"
    page.write_text(page.read_text() + "\n[gone](no-such-page.md)\n")
    assert _build(config, tmp_path / "s1").returncode != 0
    config = _copy_of_the_guide(tmp_path / "anchor")
    page = config.parent / "docs" / "index.md"
    page.write_text(page.read_text() + "\n[gone](cli.md#no-such-section)\n")
    assert _build(config, tmp_path / "s2").returncode != 0


def test_a_page_left_out_of_the_nav_fails_the_build(tmp_path: Path) -> None:
    config = _copy_of_the_guide(tmp_path)
    (config.parent / "docs" / "orphan.md").write_text("# Not in the nav\n")
    done = _build(config, tmp_path / "site")
    assert done.returncode != 0
    assert "orphan.md" in done.stdout + done.stderr


def test_the_readmes_links_into_the_repository_resolve() -> None:
    text = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [t.split("#")[0] for t in targets if "://" not in t and not t.startswith("#")]
    assert local, "the README links into the guide"
    missing = [t for t in local if t and not (ROOT / t).exists()]
    assert missing == []


_DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
_COMMIT = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
_DIARY = re.compile(r"\bsuite \d+\b|\bfixed in [0-9a-f]{7}|\bCI run \d+", re.I)


def test_the_readme_and_the_guide_stay_for_users() -> None:
    """No development diary: the README stays short, and neither it nor a guide page carries
    dates, commit hashes or suite-run stories (dates belong to CHANGELOG.md and to the
    figures, which their commands write; docs/CONVENTIONS.md is the contributors')."""
    readme = ROOT / "README.md"
    assert len(readme.read_text().splitlines()) <= 250
    pages = [readme, *(p for p in DOCS.rglob("*.md")
                       if p.parent.name != "figures" and p.name != "CONVENTIONS.md")]
    for page in pages:
        text = page.read_text()
        for pattern in (_DATE, _COMMIT, _DIARY):
            found = pattern.findall(text)
            assert found == [], (page.relative_to(ROOT), found)
