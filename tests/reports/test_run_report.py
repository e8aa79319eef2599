"""render_run: the page states the checker's verdict and counts, and is self-contained."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from reports import ReportError, render_run
from reports.__main__ import main
from reports.offset_map import fill_maps, plan_maps
from reports.summary import anomaly_rows, settings

EXTERNAL = re.compile(r"""(?:src|href|url)\s*[=(]\s*["']?\s*(?:https?:)?//""", re.I)


def rendered(run_dir: Path) -> str:
    path = render_run(run_dir)
    assert path == run_dir / "report.html"
    return path.read_text(encoding="utf-8")


def assert_self_contained(html: str) -> None:
    assert not EXTERNAL.search(html), EXTERNAL.search(html)
    assert "<link rel=\"stylesheet\"" not in html and "<script src" not in html
    assert "@import" not in html


def test_hand_run_report_shows_the_checkers_findings(hand_run: Path) -> None:
    html = rendered(hand_run)
    assert_self_contained(html)
    assert 'data-verdict="invalid"' in html
    assert 'data-kind="lost" data-count="1"' in html
    assert "forbidden: acks=all, min.insync.replicas=2, unclean=false" in html
    assert "p0#4" in html and "t+5.005s" in html
    assert "F1 kill 1" in html  # the example's fault, attributed from events.jsonl
    assert "pause 2" in html and "never ended" in html
    for href in ("history/writes.parquet", "history/events.jsonl", "results.json", "junit.xml"):
        assert f'href="./{href}' in html
    assert html.count("<svg") >= 5


def test_known_bugs_are_named_from_results(hand_run: Path) -> None:
    results = json.loads((hand_run / "results.json").read_text())
    results["anomalies"]["duplicate"] = {
        "count": 9, "allowed": False, "why": "forbidden: enable.idempotence=true",
        "known_bugs": {"librdkafka#4953": 7}, "examples": []}
    results["anomalies"]["poll-skip"] = {"count": 2, "allowed": True, "why": "accepted",
                                         "known_bugs": {"librdkafka#4844": 2}, "examples": []}
    results["known_bugs"] = {"librdkafka#4953": {"status": "open"},
                             "librdkafka#4844": {"status": "fixed"}}
    results["accepted_known"] = ["librdkafka#4844"]
    (hand_run / "results.json").write_text(json.dumps(results))
    html = rendered(hand_run)
    assert "7 duplicates match librdkafka#4953 (open)" in html
    assert "2 poll skips match librdkafka#4844 (fixed), accepted by this run" in html
    rows = {r.kind: r for r in anomaly_rows(results)}
    assert rows["duplicate"].known == ["7 duplicates match librdkafka#4953 (open)"]
    assert rows["lost"].known == []


def test_report_never_redecides_the_verdict(hand_run: Path) -> None:
    # The checker said valid although a count is non-zero and not allowed: show what it said.
    results = json.loads((hand_run / "results.json").read_text())
    results["valid"] = True
    (hand_run / "results.json").write_text(json.dumps(results))
    html = rendered(hand_run)
    assert 'data-verdict="valid"' in html and 'data-verdict="invalid"' not in html


def test_unchecked_run_is_unknown_and_still_rendered(hand_run: Path) -> None:
    (hand_run / "results.json").unlink()
    html = rendered(hand_run)
    assert 'data-verdict="unknown"' in html and "not been checked" in html
    junit = ET.parse(hand_run / "junit.xml").getroot()
    assert junit.get("errors") == "1"


def test_run_without_history_renders(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text(json.dumps({"scenario": "crashed-early"}))
    html = rendered(tmp_path)
    assert "no writes recorded" in html and "no cluster observations recorded" in html


def test_not_a_run_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ReportError):
        render_run(tmp_path)


def test_invalid_run_counts_examples_and_offset_maps(invalid_run: Path) -> None:
    html = rendered(invalid_run)
    results = json.loads((invalid_run / "results.json").read_text())
    assert results["valid"] is False and 'data-verdict="invalid"' in html
    for kind, a in results["anomalies"].items():
        assert f'data-kind="{kind}" data-count="{a["count"]}"' in html
    assert html.count('class="offset-figure') >= 2 or html.count("offset-figure") >= 2
    assert "disputed offsets" in html  # the lost tail's offsets were reused


def test_truncation_shows_as_disputed_offsets(invalid_run: Path) -> None:
    rows = anomaly_rows(json.loads((invalid_run / "results.json").read_text()))
    maps = plan_maps(rows)
    fill_maps(maps, invalid_run / "history", rows)
    lost = next(m for m in maps if "lost" in m.kinds)
    lost_offsets = {ex["acked_offset"] for r in rows if r.kind == "lost" for ex in r.examples}
    shown = {o for o in lost_offsets if lost.lo <= o < lost.hi}
    assert shown and shown <= set(lost.disputed)
    names = [name for name, _ in lost.rows]
    assert names[:2] == ["acknowledged", "drain"]


def test_unknown_run_says_why(unknown_run: Path) -> None:
    html = rendered(unknown_run)
    assert '<span class="pill p-undecided">undecided</span>' in html
    cases = {c.get("name"): c for c in ET.parse(unknown_run / "junit.xml").getroot().iter(
        "testcase")}
    assert cases["unseen"].find("error") is not None and cases["verdict"].find("error") is not None
    assert 'data-verdict="unknown"' in html
    assert "did not read every partition completely" in html
    assert "25 acknowledged writes are unseen" in html


def test_settings_fill_in_documented_defaults() -> None:
    shown = {s.name: s for s in settings({"producer_config": {"acks": "1"}})}
    assert shown["acks"].value == "1" and not shown["acks"].defaulted
    assert shown["enable.idempotence"].value == "false" and shown["enable.idempotence"].defaulted
    assert shown["min.insync.replicas"].value == "1"
    overridden = settings({"broker_config": {"min.insync.replicas": 1},
                           "topic_config": {"min.insync.replicas": 2}})
    assert {s.name: s.value for s in overridden}["min.insync.replicas"] == "2"
    # the liveness bound and the group protocol (classic unless consumer_config says so)
    assert shown["liveness bound (s)"].value == "?" and shown["group.protocol"].defaulted
    live = {s.name: s.value for s in settings({
        "workload": {"liveness_s": 30.0}, "consumer_config": {"group.protocol": "consumer"}})}
    assert live["liveness bound (s)"] == "30" and live["group.protocol"] == "consumer"
    assert {s.name: s.value for s in settings({"workload": {"liveness_s": 0}})}[
        "liveness bound (s)"] == "off"


def test_settings_show_the_workload_client_and_a_different_orchestrator_client() -> None:
    same = {"versions": {"confluent_kafka": "2.16.1", "librdkafka": "2.16.0",
                         "orchestrator_confluent_kafka": "2.16.1",
                         "orchestrator_librdkafka": "2.16.0"}}
    shown = {s.name: s.value for s in settings(same)}
    assert shown["client"] == "confluent-kafka 2.16.1" and shown["librdkafka"] == "2.16.0"
    assert "observer + drain client" not in shown
    other = {"versions": {**same["versions"], "confluent_kafka": "2.12.0",
                          "librdkafka": "2.12.0"}}
    shown = {s.name: s.value for s in settings(other)}
    assert shown["client"] == "confluent-kafka 2.12.0" and shown["librdkafka"] == "2.12.0"
    assert shown["observer + drain client"] == "confluent-kafka 2.16.1, librdkafka 2.16.0"
    # another client: its name and version; librdkafka only as the observer's and drain's
    java = {"versions": {**same["versions"], "client": "java", "client_version": "4.1.1",
                         "confluent_kafka": None, "librdkafka": None}}
    shown = {s.name: s.value for s in settings(java)}
    assert shown["client"] == "java 4.1.1" and "librdkafka" not in shown
    assert shown["observer + drain client"] == "confluent-kafka 2.16.1, librdkafka 2.16.0"


def test_junit_has_one_case_per_kind_and_failures_carry_examples(invalid_run: Path) -> None:
    render_run(invalid_run)
    root = ET.parse(invalid_run / "junit.xml").getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert {"verdict", "lost", "divergence", "poll-skip"} <= set(cases)
    results = json.loads((invalid_run / "results.json").read_text())
    failing = {k for k, a in results["anomalies"].items()
               if a["count"] and not a["allowed"] and k != "unseen"}
    assert {n for n, c in cases.items() if c.find("failure") is not None} == failing | {"verdict"}
    lost = cases["lost"].find("failure")
    assert lost is not None and '"seq":' in (lost.text or "")
    assert root.get("failures") == str(len(failing) + 1)


def test_cli_exit_codes(hand_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main([str(hand_run)]) == 0
    assert capsys.readouterr().out.strip() == str(hand_run / "report.html")
    assert main([str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1
    folder = hand_run.parents[1]
    done = subprocess.run([sys.executable, "-m", "reports", str(folder)], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0 and done.stdout.strip() == str(folder / "index.html")


def test_checkers_series_is_plotted_when_present(valid_run: Path) -> None:
    html = rendered(valid_run)
    assert "(checker&#39;s series)" in html or "(checker's series)" in html
    assert 'data-verdict="valid"' in html and "no anomaly was found" in html


def test_checker_shaped_examples_are_readable(invalid_run: Path) -> None:
    html = rendered(invalid_run)
    assert "was acknowledged at offset" in html  # the checker's summary sentence
    assert " ≠ " in html  # inconsistent-offset: the records read at one offset
    assert "replica n1" in html  # divergence: the replicas' rows in the offset map


def test_junit_of_text_with_control_characters_parses() -> None:
    """A record's text or a broker's error can hold characters XML 1.0 forbids; one of them
    made the whole junit.xml unparseable (issue 47). Now each is replaced."""
    from reports.junit import junit_xml
    from reports.summary import AnomalyRow, Verdict

    bad = "offset 7 held b'\x00\x1b[31m' \x0b"
    row = AnomalyRow(kind="lost", count=1, allowed=False, why=bad,
                     examples=[{"summary": bad}])
    data = junit_xml({"scenario": "s\x01", "run_id": "r"}, None, [row],
                     Verdict("invalid", bad, notes=[bad]))
    root = ET.fromstring(data)
    texts = [t for el in root.iter() for t in (el.text or "", *el.attrib.values())]
    assert any("offset 7 held" in t for t in texts)
    assert not any(c in t for t in texts for c in "\x00\x01\x0b\x1b")
