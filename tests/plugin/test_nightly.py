"""The nightly matrix driver with a fake runner: cells, judging, JUnit, exit codes."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from chaos import nightly
from chaos.plugin_result import ChaosResult
from tests.plugin.fakes import write_run


def fake(cell: nightly.Cell, out: Path, common: dict[str, Any]) -> ChaosResult:
    run_dir = out / (cell.scenario or nightly.RANDOM_FAULTS) / cell.name.replace("/", "_")
    if cell.scenario == "safe-config-chaos":
        write_run(run_dir, run={"scenario": cell.scenario, "seed": common.get("seed")},
                  expectations={"met": True, "details": []})
    elif cell.scenario == "acks1-leader-failover":  # the scenario expected loss, saw none
        write_run(run_dir, expectations={"met": False, "details": [
            {"what": "lost >0", "actual": 0, "met": False}]})
    else:
        raise RuntimeError("no Docker engine")
    return ChaosResult.from_run_dir(run_dir, label=cell.name)


def test_cells_local_and_full() -> None:
    local = nightly.local_cells(30)
    assert [c.name for c in local] == ["safe-config-chaos", "acks1-leader-failover",
                                       "random-faults[acks=1-no-unclean-kill]",
                                       "bug:librdkafka#4844[affected]",
                                       "bug:librdkafka#4844[fixed]",
                                       "bug:KIP-966[affected]", "bug:KIP-966[fixed]",
                                       # not fixed: its affected side only
                                       "bug:librdkafka#4953[affected]",
                                       # fixed by another client (the Java client's TV2)
                                       "bug:KAFKA-17754[affected]",
                                       "bug:KAFKA-17754[fixed]",
                                       # open bugs and a finding: affected sides only
                                       "bug:KAFKA-20716[affected]",
                                       "bug:lost-marker-next-txn[affected]",
                                       # fixed in 2.10.1: both sides
                                       "bug:librdkafka#5088[affected]",
                                       "bug:librdkafka#5088[fixed]",
                                       "bug:librdkafka#5301[affected]",
                                       # open: their affected sides only
                                       "bug:librdkafka#5511[affected]",
                                       "bug:librdkafka#5456[affected]",
                                       "bug:librdkafka#5541[affected]",
                                       "bug:librdkafka#5541[fixed]",
                                       # the Java consumer, which validates, as its fixed side
                                       "bug:librdkafka#5158[affected]",
                                       "bug:librdkafka#5158[fixed]",
                                       # the Java consumer's close as its fixed side
                                       "bug:librdkafka#3400[affected]",
                                       "bug:librdkafka#3400[fixed]",
                                       # open: its affected side only
                                       "bug:librdkafka#5586[affected]",
                                       # fixed in 2.1.1: both sides
                                       "bug:librdkafka#4261[affected]",
                                       "bug:librdkafka#4261[fixed]"]
    assert local[2].config["min_insync"] == 1 and local[0].config == {"duration": 30}
    full = nightly.full_cells(60)
    grid = [c for c in full if c.scenario is None]
    assert len(grid) == 12
    assert {c.config["min_insync"] for c in grid if c.axes["acks"] == "all"} == {2}
    assert "safe-config-chaos" in [c.name for c in full]
    kip848 = [c for c in full if c.axes.get("group_protocol") == "consumer"]
    assert [c.name for c in kip848] == ["group-coordinator-chaos[group-protocol=consumer]",
                                        "coordinator-moved-on-assign[group-protocol=consumer]"]
    from scenarios import SCENARIOS

    for c in kip848:  # each runs as configured (a classic-only setting would be refused)
        SCENARIOS[str(c.scenario)].run_config(**c.config).validate()
    assert [c.name for c in full if c.bug] == [c.name for c in local if c.bug]


def test_nightly_writes_junit_and_exit_code(tmp_path: Path, capsys) -> None:
    code = nightly.main(["--out", str(tmp_path), "--seed", "3", "--only", "safe",
                         "--only", "acks1", "--only", "random"], runner=fake)
    assert code == 1  # acks1 failed its expectation; the random cell errored
    root = ET.parse(tmp_path / "junit.xml").getroot()
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "1")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert cases["safe-config-chaos"].find("failure") is None
    failure = cases["acks1-leader-failover"].find("failure")
    assert failure is not None and failure.get("message") == "expected lost >0, got 0"
    error = cases["random-faults[acks=1-no-unclean-kill]"].find("error")
    assert error is not None and "no Docker engine" in (error.get("message") or "")
    props = {p.get("name"): p.get("value")
             for p in cases["safe-config-chaos"].iter("property")}
    assert props["chaos.verdict"] == "valid" and props["chaos.report"].endswith("report.html")
    out = capsys.readouterr().out
    assert "nightly: 3 cell(s) in" in out and "matrix report:" in out


def test_only_and_exit_codes(tmp_path: Path) -> None:
    assert nightly.main(["--out", str(tmp_path), "--only", "safe"], runner=fake) == 0
    assert nightly.main(["--out", str(tmp_path), "--only", "random"], runner=fake) == 2
    assert nightly.main(["--out", str(tmp_path), "--only", "nothing"], runner=fake) == 2


def _bug_result(tmp_path: Path, name: str, count: int, tagged: int, valid: bool,
                kind: str = "poll-skip", bug: str = "librdkafka#4844") -> ChaosResult:
    run_dir = write_run(tmp_path / name, counts={kind: count}, valid=valid)
    res = ChaosResult.from_run_dir(run_dir)
    assert res.results is not None
    res.results["anomalies"][kind]["known_bugs"] = {bug: tagged} if tagged else {}
    return res


def test_a_timing_dependent_bug_need_not_show_in_every_nightly_run(tmp_path: Path) -> None:
    [cell] = [c for c in nightly.local_cells(30) if c.bug == "librdkafka#4953"]

    def result(name: str, count: int, tagged: int, valid: bool) -> ChaosResult:
        return _bug_result(tmp_path, name, count, tagged, valid, "duplicate", cell.bug or "")

    assert nightly.judge(cell, result("hit", 40, 40, True)) == []
    assert nightly.judge(cell, result("miss", 0, 0, True)) == []  # this run did not show it
    # but a duplicate the bug does not explain, or another verdict, fails the cell
    assert "40 but 39 tagged" in str(nightly.judge(cell, result("untagged", 40, 39, True)))
    assert "verdict False" in str(nightly.judge(cell, result("invalid", 0, 0, False)))


def test_bug_cells_are_judged_by_their_side(tmp_path: Path) -> None:
    affected, fixed = [c for c in nightly.local_cells(30) if c.bug == "librdkafka#4844"]
    assert (affected.side, fixed.side) == ("affected", "fixed")
    assert nightly.judge(affected, _bug_result(tmp_path, "a", 2, 2, False)) == []
    # the kind without the bug's tag: a skip the entry does not explain
    untagged = nightly.judge(affected, _bug_result(tmp_path, "b", 2, 0, False))
    assert "none tagged librdkafka#4844" in str(untagged)
    assert nightly.judge(affected, _bug_result(tmp_path, "c", 0, 0, True))
    assert nightly.judge(fixed, _bug_result(tmp_path, "d", 0, 0, True)) == []
    assert "expected 0 on the fixed version" in str(
        nightly.judge(fixed, _bug_result(tmp_path, "e", 1, 0, False)))
