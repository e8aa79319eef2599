"""Reports rendered in a real headless Chromium: no console errors, no network, content there.

Chromium is Debian's (``/usr/bin/chromium``, or ``$KAFKA_CHAOS_CHROMIUM``); a machine without
one fails these tests rather than skipping them. Each page's screenshot is kept under
``test-artifacts/reports/`` for a human to look at.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from reports import render_matrix, render_run

from .browser import Chromium

pytestmark = pytest.mark.browser

MAX_REPORT_BYTES = 3_000_000


@pytest.fixture
def chromium() -> Iterator[Chromium]:
    # a browser of its own per test (about a second to start): what a page before left
    # running in a shared one cannot hold up the next test's load
    with Chromium() as browser:  # fails (does not skip) when no Chromium is installed
        yield browser


PAGE_FACTS = """(() => ({
  verdict: document.querySelector('#verdict').dataset.verdict,
  badge: document.querySelector('#verdict .badge').textContent.trim(),
  counts: Object.fromEntries([...document.querySelectorAll('tr.a-row')].map(
      r => [r.dataset.kind, Number(r.querySelector('td.num').textContent.replace(/,/g, ''))])),
  plots: [...document.querySelectorAll('.figure svg.plot')].map(s => ({
      id: s.closest('.figure').id, w: s.getBoundingClientRect().width,
      h: s.getBoundingClientRect().height, marks: s.querySelectorAll('path,rect').length,
      empty: s.classList.contains('empty')})),
  offsetMaps: document.querySelectorAll('.offset-figure svg').length,
  timePlots: document.querySelectorAll('.timeplot svg.plot, #plot-faults svg.plot').length,
  cursors: document.querySelectorAll('svg.plot line.cursor').length,  // made by the script
  scrollHeight: document.documentElement.scrollHeight,
}))()"""


def check_report(chromium: Chromium, run_dir: Path, artifacts: Path, name: str) -> dict:
    report = render_run(run_dir)
    size = report.stat().st_size
    assert size < MAX_REPORT_BYTES, f"{name}: report is {size:,} bytes"
    load = chromium.open(report)
    assert load.errors == [], f"{name}: console errors {load.errors}"
    assert load.foreign_requests == [], f"{name}: network requests {load.foreign_requests}"
    assert load.csp_violations == [], f"{name}: {load.csp_violations}"
    facts = chromium.evaluate(PAGE_FACTS)
    chromium.screenshot(artifacts / f"{name}.png")
    shutil.copy(report, artifacts / f"{name}.html")
    results = json.loads((run_dir / "results.json").read_text())
    expected = {True: "valid", False: "invalid"}.get(results["valid"], "unknown")
    assert facts["verdict"] == expected and facts["badge"] == expected.upper()
    assert facts["counts"] == {k: a["count"] for k, a in results["anomalies"].items()}
    drawn = {p["id"]: p for p in facts["plots"]}
    for plot in ("plot-faults", "plot-throughput", "plot-latency", "plot-leadership"):
        assert plot in drawn and not drawn[plot]["empty"], f"{name}: {plot} missing"
        assert drawn[plot]["w"] > 800 and drawn[plot]["h"] > 60 and drawn[plot]["marks"] > 3
    # The inline script ran under the page's CSP (its hash): every time plot got its cursor.
    assert facts["cursors"] == facts["timePlots"] >= 4, f"{name}: the script did not run"
    return facts


def test_valid_report(chromium: Chromium, valid_run: Path, artifacts: Path) -> None:
    facts = check_report(chromium, valid_run, artifacts, "valid")
    assert facts["offsetMaps"] == 0


def test_invalid_report_with_many_anomalies(
    chromium: Chromium, invalid_run: Path, artifacts: Path
) -> None:
    facts = check_report(chromium, invalid_run, artifacts, "invalid")
    assert facts["offsetMaps"] >= 2
    assert not next(p for p in facts["plots"] if p["id"] == "plot-anomalies")["empty"]
    # The shared time cursor: hovering one plot draws the instant on every time plot.
    chromium.evaluate("""(() => { const s = document.querySelector('#plot-latency svg');
        const r = s.getBoundingClientRect();
        s.dispatchEvent(new MouseEvent('mousemove', {clientX: r.left + r.width / 2,
                                                     clientY: r.top + 20, bubbles: true})); })()""")
    shown = chromium.evaluate("""[...document.querySelectorAll('.cursor-label')]
        .filter(t => t.style.display !== 'none').map(t => t.textContent)""")
    assert len(shown) >= 4 and len(set(shown)) == 1 and shown[0].startswith("t = ")


def test_unknown_report(chromium: Chromium, unknown_run: Path, artifacts: Path) -> None:
    check_report(chromium, unknown_run, artifacts, "unknown")


MAX_LARGE_REPORT_ELEMENTS = 6_000


def test_large_report_stays_light(chromium: Chromium, large_run: Path, artifacts: Path) -> None:
    """A 400k-write run's page stays small: downsampled plots, capped tables.

    What it bounds is what makes a page open fast (size, elements, height); the time to open
    one is measured by ``python -m bench report --browser``, not here.
    """
    facts = check_report(chromium, large_run, artifacts, "large")
    elements = chromium.evaluate("document.getElementsByTagName('*').length")
    assert facts["plots"] and elements < MAX_LARGE_REPORT_ELEMENTS, f"{elements} elements"
    assert facts["scrollHeight"] < 12_000


def test_matrix_page(
    chromium: Chromium, valid_run: Path, invalid_run: Path, unknown_run: Path, artifacts: Path
) -> None:
    folder = valid_run.parent
    os.symlink(valid_run, folder / "latest")
    index = render_matrix(folder)
    load = chromium.open(index)
    assert load.errors == [] and load.foreign_requests == [] and load.csp_violations == []
    verdicts = chromium.evaluate(
        "[...document.querySelectorAll('.cellbox')].map(c => c.dataset.verdict).sort()")
    assert verdicts == ["invalid", "unknown", "valid"]
    # The script ran under the CSP: the headings it made sortable sort on a click.
    sorted_by = chromium.evaluate("""(() => { const th = document.querySelector('table.runs th');
        th.click(); return [th.classList.contains('sortable'), th.dataset.dir]; })()""")
    assert sorted_by == [True, "asc"]
    chromium.screenshot(artifacts / "matrix.png")
    shutil.copy(index, artifacts / "matrix.html")
