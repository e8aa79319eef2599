"""The pages' Content-Security-Policy and links (issue 47): no ``'unsafe-inline'``, every inline
``<script>`` and ``<style>`` allowed by its own SHA-256, no inline handler or style attribute,
and every link to a run's files a quoted relative path. Before: the policy allowed any inline
script, and a run folder named ``javascript:alert(1)`` was a ``javascript:`` link on the
matrix page."""

from __future__ import annotations

import base64
import hashlib
import json
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from reports import render_matrix, render_run
from tests.support.hand_run import hand_results, write_hand_run

HOSTILE = "javascript:alert(1)"
QUOTED = "javascript%3Aalert%281%29"


class Page(HTMLParser):
    """What a browser would take from a page: its policy, inline blocks, attributes, links."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.csp: list[str] = []
        self.blocks: list[tuple[str, str]] = []  # (script|style, exact text)
        self.attributes: list[tuple[str, str]] = []  # (tag, attribute name)
        self.hrefs: list[str] = []
        self._open: str | None = None
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "meta" and (values.get("http-equiv") or "").lower() == \
                "content-security-policy":
            self.csp.append(values.get("content") or "")
        if tag in ("script", "style"):
            self._open = tag
            self.blocks.append((tag, ""))
        self.attributes += [(tag, name) for name, _ in attrs]
        if "href" in values:
            self.hrefs.append(values["href"] or "")

    def handle_data(self, data: str) -> None:
        if self._open:  # raw text, possibly in several pieces
            tag, text = self.blocks[-1]
            self.blocks[-1] = (tag, text + data)

    def handle_endtag(self, tag: str) -> None:
        if tag == self._open:
            self._open = None

    def directive(self, name: str) -> list[str]:
        (policy,) = self.csp
        for part in policy.split(";"):
            words = part.split()
            if words and words[0] == name:
                return words[1:]
        return []


def explore_json(folder: Path, run_dir: str) -> None:
    (folder / "explore.json").write_text(json.dumps({
        "seed": 1, "started_at": "2026-12-04T10:00:00Z", "stopped": "1 run(s) done",
        "covered": {}, "runs": [{"index": 0, "run_dir": run_dir, "options": {"acks": "all"},
                                 "valid": False, "violations": {"lost": 1}}]}))


@pytest.fixture
def hostile_folder(tmp_path: Path) -> Path:
    """An explore folder whose one run is named like a script URL, with a replay.toml."""
    folder = tmp_path / "runs"
    run = write_hand_run(folder / HOSTILE, hand_results())
    (run / "replay.toml").write_text("")
    (run / "logs").mkdir(exist_ok=True)
    (run / "logs" / "x:y#z?.log").write_text("broker log\n")
    explore_json(folder, HOSTILE)
    return folder


def pages(folder: Path) -> dict[str, Page]:
    index = render_matrix(folder)
    report = folder / HOSTILE / "report.html"
    return {"matrix": Page(index.read_text(encoding="utf-8")),
            "run": Page(render_run(report.parent).read_text(encoding="utf-8"))}


def sha256_source(text: str) -> str:
    return f"'sha256-{base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()}'"


def test_every_inline_block_is_allowed_by_its_hash_and_nothing_else(
        hostile_folder: Path) -> None:
    for name, page in pages(hostile_folder).items():
        assert len(page.csp) == 1, name
        assert "unsafe" not in page.csp[0], f"{name}: {page.csp[0]}"
        assert page.directive("default-src") == ["'none'"]
        kinds = {tag for tag, _ in page.blocks}
        assert kinds == {"script", "style"}, name
        for tag, text in page.blocks:
            assert text.strip(), f"{name}: an empty <{tag}>"
            assert sha256_source(text) in page.directive(f"{tag}-src"), f"{name}: <{tag}>"
        # Neither can be allowed by a hash (CSP level 2): handlers and looks live in the blocks.
        inline = [(t, a) for t, a in page.attributes if a.startswith("on") or a == "style"]
        assert inline == [], f"{name}: {inline}"


def test_a_run_folder_named_like_a_script_url_is_linked_as_a_file(
        hostile_folder: Path) -> None:
    got = pages(hostile_folder)
    matrix, run = got["matrix"].hrefs, got["run"].hrefs
    assert f"./{QUOTED}/report.html" in matrix  # the grid, the list of runs, the findings
    assert f"./{QUOTED}/replay.toml" in matrix
    assert "./logs/x%3Ay%23z%3F.log" in run
    for name, page in got.items():
        for href in page.hrefs:
            if href.startswith("#") or href == "data:,":  # in-page anchors, the empty favicon
                continue
            assert href.startswith("./") and urlsplit(href).scheme == "", f"{name}: {href}"
            assert not urlsplit(href).query and not urlsplit(href).fragment, f"{name}: {href}"
            base = hostile_folder if name == "matrix" else hostile_folder / HOSTILE
            target = base / unquote(href)
            assert target.exists() or target.name == "junit.xml", f"{name}: {href}"
