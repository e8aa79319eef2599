"""The findings index of an explore folder, from a literal explore.json: grouped by violation,
then by configuration, with each run's report and replay file; a nightly folder shows its
newest explore."""

from __future__ import annotations

import json
from pathlib import Path

from reports import render_matrix
from reports.findings import build_findings

OPTS = {"kafka_version": "4.3.1", "client": "confluent-kafka", "acks": "all", "min_insync": 2,
        "replication_factor": 3, "unclean": False, "idempotence": None,
        "transactions": False, "consumer_mode": "assign", "faults": ["kill", "pause"]}


def explore_folder(folder: Path) -> Path:
    (folder / "explore" / "r1").mkdir(parents=True)
    (folder / "explore" / "r1" / "replay.toml").write_text("")
    runs = [
        {"index": 0, "run_dir": "explore/r0", "options": OPTS, "valid": True,
         "violations": {}, "seconds": 40.0},
        {"index": 1, "run_dir": "explore/r1", "options": OPTS, "valid": False,
         "violations": {"duplicate": 3, "lost": 2}, "seconds": 41.0},
        {"index": 2, "run_dir": "explore/r2", "options": {**OPTS, "acks": "1"},
         "valid": False, "violations": {"duplicate": 5}, "seconds": 39.0},
        {"index": 3, "run_dir": "explore/r3", "options": OPTS, "valid": "unknown",
         "violations": {"unknown": 1}, "seconds": 38.0,
         "unknown_reasons": ["consumer c0 read nothing"]},
    ]
    (folder / "explore.json").write_text(json.dumps({
        "seed": 5, "budget_s": 600, "started_at": "2026-12-04T10:00:00Z", "runs": runs,
        "covered": {"acks": ["1", "all"]}, "stopped": "3 run(s) done"}))
    return folder


def test_findings_are_grouped_by_violation_then_configuration(tmp_path: Path) -> None:
    got = build_findings(explore_folder(tmp_path))
    assert got is not None and (got["runs"], got["findings"]) == (4, 3)
    groups = got["groups"]
    assert [(g.violation, g.runs) for g in groups] == [("duplicate", 2), ("lost", 1),
                                                       ("unknown", 1)]
    (unknown,) = groups[2].configs.values()
    assert unknown[0].note == "consumer c0 read nothing"  # why it could not tell
    dup = groups[0].configs
    assert len(dup) == 2  # acks=all and acks=1 are two configurations
    (all_runs,) = [v for k, v in dup.items() if "acks=all" in k]
    assert [(r.index, r.count, r.faults, r.replay) for r in all_runs] == [
        (1, 3, "kill,pause", "explore/r1/replay.toml")]
    (one_runs,) = [v for k, v in dup.items() if "acks=1" in k]
    assert one_runs[0].replay is None  # no replay.toml beside it


def test_the_matrix_page_of_an_explore_folder_has_the_findings(tmp_path: Path) -> None:
    page = render_matrix(explore_folder(tmp_path)).read_text()
    assert 'id="findings"' in page and 'href="./explore/r1/replay.toml"' in page
    assert "seed 5 · 4 runs · 3 not VALID · stopped: 3 run(s) done" in page
    assert "consumer c0 read nothing" in page
    assert build_findings(tmp_path / "explore") is None  # a folder without an explore


def test_a_nightly_folder_shows_its_newest_explore_with_links_from_itself(
        tmp_path: Path) -> None:
    explore_folder(tmp_path / "explore" / "20261201T000000Z")
    newer = explore_folder(tmp_path / "explore" / "20261202T000000Z")
    doc = json.loads((newer / "explore.json").read_text())
    doc["seed"] = 9
    (newer / "explore.json").write_text(json.dumps(doc))
    got = build_findings(tmp_path)
    assert got is not None and got["seed"] == 9
    run = got["groups"][0].configs
    assert any(r.replay == "explore/20261202T000000Z/explore/r1/replay.toml"
               for runs in run.values() for r in runs)


def test_a_damaged_explore_json_is_named_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "explore.json").write_text("{not json")
    got = build_findings(tmp_path)
    assert got is not None and got["error"].startswith("explore.json could not be read")
    assert "explore.json could not be read" in render_matrix(tmp_path).read_text()
