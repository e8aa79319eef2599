"""explore, replay and shrink end to end on real clusters (issue 49): a seeded explore of two
short runs, a replay of a scripted run that reproduces its finding (and of one that cannot),
and a shrink of a finding that needs one of its three faults, which must come out as that
one fault."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from tenacity import Retrying, retry_if_result, stop_after_delay, wait_fixed

from contract.explore import EXPLORE_FILE
from runner.explore.space import Space, draw
from tests.run.cli import CLI, start

pytestmark = pytest.mark.cluster

HERE = Path(__file__).resolve().parent
#: A slowed leader, a paused follower, then every broker loses power; the scenario expects no
#: loss, and only the power loss loses records (nothing of the log was flushed).
THREE_FAULTS = HERE / "three_faults.toml"


def kafka_chaos(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)
    print(done.stdout[-6000:], done.stderr[-3000:])
    return done


@pytest.fixture(scope="module")
def finding(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scripted run whose verdict misses its expectation (lost == 0): the finding."""
    out = tmp_path_factory.mktemp("finding")
    done = kafka_chaos("run", "--scenario-file", str(THREE_FAULTS), "--scenario",
                       "three-faults-one-loss", "--out", str(out), "--no-report")
    assert done.returncode == 1, done.returncode  # the expectation was missed
    run_dir = next((out / "three-faults-one-loss").iterdir())
    res = json.loads((run_dir / "results.json").read_text())
    assert res["anomalies"]["lost"]["count"] > 100, res["anomalies"]["lost"]
    return run_dir


def test_a_replay_of_a_scripted_run_reproduces_its_finding(finding: Path,
                                                           tmp_path: Path) -> None:
    done = kafka_chaos("replay", str(finding), "--repeat", "1", "--out", str(tmp_path))
    assert done.returncode == 0
    tally = [ln for ln in done.stdout.splitlines() if ln.startswith("reproduced")]
    assert len(tally) == 1 and tally[0].startswith("reproduced 1/1: expectation: lost ==0 ")
    assert int(tally[0].rsplit(" ", 1)[1]) > 100  # the count the replay lost
    replay = tomllib.loads((finding / "replay.toml").read_text())["scenario"][0]
    starts = [(s["fault"], s["target"]) for s in replay["steps"] if s["action"] == "start"]
    assert starts == [("slow", "leader:0"), ("pause", "follower:0"), ("power-loss", "all")]
    (run_dir,) = (tmp_path / "replay-three-faults-one-loss").iterdir()
    replayed, original = fault_starts(run_dir), fault_starts(finding)
    assert [k for k, _ in replayed] == ["slow", "pause", "power-loss"], replayed
    # at the seconds after the workload began that they had (the `at` steps)
    for (_, at), (_, was) in zip(replayed, original, strict=True):
        assert abs(at - was) < 1.5, (replayed, original)


def fault_starts(run_dir: Path) -> list[tuple[str, float]]:
    """(kind, seconds after the workload began) of each fault start of a run: when applying
    it began (its start event is written once it took effect, seconds later for a power
    loss on a loaded host)."""
    events = [json.loads(line) for line in (run_dir / "history" / "events.jsonl").open()]
    t0 = next(e["ts_ns"] for e in events if e["kind"] == "phase" and e["phase"] == "start"
              and e["detail"].get("name") == "workload")
    return [(e["kind"], (e["detail"]["began_ns"] - t0) / 1e9) for e in events
            if e["phase"] == "start" and e["kind"] != "phase"]


def test_a_finding_that_never_comes_back_is_not_reproduced(finding: Path,
                                                           tmp_path: Path) -> None:
    # The same run, its results claiming duplicates it never had: no replay shows them.
    fake = tmp_path / "claimed"
    shutil.copytree(finding, fake)
    res = json.loads((fake / "results.json").read_text())
    res["anomalies"]["duplicate"].update(count=3, allowed=False)
    res.pop("expectations")
    (fake / "results.json").write_text(json.dumps(res))
    done = kafka_chaos("replay", str(fake), "--out", str(tmp_path / "runs"))
    assert done.returncode == 1
    assert "not reproduced (0/1): duplicate 0" in done.stdout


@pytest.mark.nightly  # four whole runs; the replay above runs the same script in the suite
def test_a_shrink_keeps_only_the_fault_the_finding_needs(finding: Path,
                                                         tmp_path: Path) -> None:
    done = kafka_chaos("shrink", str(finding), "--runs", "1", "--max-runs", "4",
                       "--out", str(tmp_path), timeout=1500)
    assert done.returncode == 0
    out = done.stdout
    assert "reproduced 1/1 as it happened" in out
    assert re.search(r"drop slow@leader:0 at [\d.]+s: kept \(1/1\)", out)
    assert re.search(r"drop pause@follower:0 at [\d.]+s: kept \(1/1\)", out)
    assert re.search(r"drop power-loss@all at [\d.]+s: not kept \(0/1\)", out)
    assert "stopped: the run budget (4 runs) is spent, after 4 run(s)" in out
    shrunk = tomllib.loads((finding / "shrunk.toml").read_text())["scenario"][0]
    starts = [s for s in shrunk["steps"] if s["action"] == "start"]
    assert [(s["fault"], s["target"]) for s in starts] == [("power-loss", "all")]


def test_a_seeded_explore_of_two_short_runs(tmp_path: Path) -> None:
    fixed = ["--fix", "brokers=3", "--fix", "controllers=0", "--fix", "partitions=2"]
    done = kafka_chaos("explore", "--budget", "30m", "--seed", "11", "--runs", "2",
                       "--run-duration", "20", "--kafka-versions", "4.3.1", "--clients",
                       "confluent-kafka", *fixed, "--out", str(tmp_path),
                       timeout=1200)
    (folder,) = (tmp_path / "explore").iterdir()
    doc: dict[str, Any] = json.loads((folder / EXPLORE_FILE).read_text())
    assert doc["seed"] == 11 and doc["stopped"] == "2 run(s) done"
    space = Space(("4.3.1",), ("confluent-kafka",), 20.0,
                  (("brokers", 3), ("controllers", 0), ("partitions", 2)))
    assert [r["options"] for r in doc["runs"]] == [draw(11, i, space) for i in range(2)]
    findings = 0
    for r in doc["runs"]:
        run_dir = folder / r["run_dir"]
        results = json.loads((run_dir / "results.json").read_text())
        options = json.loads((run_dir / "run.json").read_text())["options"]
        assert options["faults"] == r["options"]["faults"] and options["seed"] == \
            r["options"]["seed"]
        assert r["valid"] == results["valid"]
        started = [json.loads(line)["kind"] for line in
                   (run_dir / "history" / "events.jsonl").open()
                   if json.loads(line)["phase"] == "start"]
        assert set(started) & set(r["options"]["faults"]), started  # its faults struck
        if r["violations"]:
            findings += 1
            assert (run_dir / "replay.toml").is_file()
    assert done.returncode == (1 if findings else 0)
    assert f"explore: 2 run(s), {findings} finding(s)" in done.stdout
    report = kafka_chaos("report", str(folder))
    assert report.returncode == 0
    page = (folder / "index.html").read_text()
    assert 'id="findings"' in page and "seed 11 · 2 runs" in page


def test_ctrl_c_ends_an_explore_after_healing_and_keeps_what_ran(tmp_path: Path) -> None:
    proc = start(["explore", "--budget", "1h", "--seed", "3", "--run-duration", "60",
                  "--kafka-versions", "4.3.1", "--clients", "confluent-kafka",
                  "--fix", "brokers=3", "--fix", "controllers=0", "--fix", "faults=pause",
                  "--fix", "fault_interval=4", "--out", str(tmp_path)],
                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def a_fault_struck() -> bool:
        return any('"phase": "start"' in line and '"pause"' in line
                   for p in tmp_path.glob("explore/*/explore/*/history/events.jsonl")
                   for line in p.read_text().splitlines())

    try:
        Retrying(stop=stop_after_delay(240), wait=wait_fixed(1),
                 retry=retry_if_result(lambda ok: not ok))(a_fault_struck)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    print(out[-4000:])
    (folder,) = (tmp_path / "explore").iterdir()
    doc = json.loads((folder / EXPLORE_FILE).read_text())
    assert doc["stopped"] == "interrupted"
    (run,) = doc["runs"]  # listed, not checked
    assert (run["valid"], run["violations"]) == (None, {})
    assert "stopped: interrupted" in out
    (run_dir,) = (folder / "explore").iterdir()
    events = [json.loads(line) for line in (run_dir / "history" / "events.jsonl").open()]
    kinds = [(e["kind"], e["phase"]) for e in events]
    assert ("interrupted", "instant") in kinds
    # every pause that struck was ended: the heal ran before the cluster was removed
    assert kinds.count(("pause", "start")) == kinds.count(("pause", "end")) >= 1
