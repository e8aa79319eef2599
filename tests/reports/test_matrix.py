"""render_matrix: scenario × configuration grid, verdict colours, trends, working links."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from reports import ReportError, render_matrix
from reports.matrix import build_matrix, find_runs
from tests.support.synthetic import PlannedFault, SyntheticSpec, write_synthetic_run


def small(scenario: str, day: int, **kw) -> SyntheticSpec:
    return SyntheticSpec(scenario=scenario, writes=800, duration_s=10.0, partitions=2,
                         started_at=f"2026-11-{day:02d}T02:00:00Z", seed=day,
                         faults=[PlannedFault("kill", [1], 2, 5)], consumer=False, **kw)


@pytest.fixture
def runs_folder(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    for day in (18, 19, 20):  # nightly: one cell, three runs, the middle one invalid
        write_synthetic_run(small("safe-config-chaos", day, duplicate=2 if day == 19 else 0),
                            root / "safe-config-chaos" / f"202611{day}T020000Z")
    write_synthetic_run(small("acks1-leader-failover", 20, acks="1", lost=10),
                        root / "acks1-leader-failover" / "20261120T020000Z")
    write_synthetic_run(small("unclean-election", 20, unclean=True, unseen=3),
                        root / "unclean-election" / "20261120T020000Z")
    os.symlink(root / "safe-config-chaos" / "20261120T020000Z", root / "latest")
    return root


def test_runs_are_found_once_and_not_through_latest(runs_folder: Path) -> None:
    found = find_runs(runs_folder)
    assert len(found) == 5 and all("latest" not in p.parts for p in found)


def test_grid_columns_are_the_settings_that_differ(runs_folder: Path) -> None:
    ctx = build_matrix(runs_folder, render_missing=False)
    assert ctx["varying"] == ["unclean.leader.election", "acks"]
    assert ("brokers", "3") in ctx["common"]
    cell = ctx["cells"][("safe-config-chaos", ("false", "all"))]
    assert [r.verdict for r in cell.runs] == ["valid", "invalid", "valid"]
    assert cell.latest.verdict == "valid" and cell.counts["invalid"] == 1
    assert ctx["totals"] == {"valid": 3, "invalid": 1, "unknown": 1}


def test_matrix_page_links_every_run_report(runs_folder: Path) -> None:
    index = render_matrix(runs_folder)
    assert index == runs_folder / "index.html"
    html = index.read_text()
    links = set(re.findall(r'href="([^"#]+)"', html)) - {"data:,"}  # the empty favicon
    assert len([link for link in links if link.endswith("report.html")]) == 5
    for link in links:
        assert not link.startswith(("http:", "https:", "/")) and (runs_folder / link).is_file()
    assert html.count('class="trend"') == 1  # only the repeated cell has a trend strip
    assert html.count('data-verdict="unknown"') == 1


def test_matrix_of_nothing_and_of_a_file(tmp_path: Path) -> None:
    assert "No runs found" in render_matrix(tmp_path).read_text()
    (tmp_path / "f").write_text("x")
    with pytest.raises(ReportError):
        render_matrix(tmp_path / "f")


def test_client_versions_become_a_column_when_runs_differ(tmp_path: Path) -> None:
    import json

    root = tmp_path / "runs"
    for name, client in (("a", None), ("b", "2.11.1"), ("c", "java")):
        run = write_synthetic_run(small("safe-config-chaos", 20), root / name)
        if client:  # a --client-version run: run.json has what its processes reported
            doc = json.loads((run / "run.json").read_text())
            doc["versions"].update(confluent_kafka=client, librdkafka=client)
            if client == "java":  # a --client java:4.1.1 run: librdkafka wrote nothing
                doc["versions"].update(client="java", client_version="4.1.1",
                                       confluent_kafka=None, librdkafka=None)
            (run / "run.json").write_text(json.dumps(doc))
    ctx = build_matrix(root, render_missing=False)
    assert ctx["varying"] == ["client", "librdkafka"]
    assert ("safe-config-chaos", ("confluent-kafka 2.11.1", "2.11.1")) in ctx["cells"]
    assert ("safe-config-chaos", ("java 4.1.1", "?")) in ctx["cells"]
