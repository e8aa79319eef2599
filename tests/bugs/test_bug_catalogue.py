"""The known-bug catalogue without a cluster: every entry names a registry bug (or says
why not), ``kafka-chaos bugs`` lists it, ``run --bug`` refuses bad input with one line and
exit 2 before anything starts, and each side pins what the entry says."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from contract.clients import parse_client
from contract.events import Event
from contract.known_bugs import BY_ID
from contract.settings import Settings
from runner.config import RunConfig, RunConfigError
from scenarios import SCENARIOS
from scenarios.bugs import (
    BUG_BY_ID,
    BUGS,
    NOT_ATTEMPTED,
    BugEntry,
    find,
    judge,
    summary,
    tally,
)
from scenarios.eof_restart import EOF_RESTARTS, eof_restarts_done
from tests.run.cli import CLI


def test_entries_pin_two_versions_of_a_registered_bug() -> None:
    ids = [b.id for b in BUGS]
    assert ids[:2] == ["librdkafka#4844", "KIP-966"] and len(set(ids)) == len(ids)
    for b in BUGS:
        if not b.runnable:
            # without a scenario an entry says what is known: nothing yet, or where it was
            # seen, or why it did not reproduce; never a pass
            assert b.status == NOT_ATTEMPTED or b.status.startswith(
                ("seen", "not reproduced")), b.status
            continue
        bug = BY_ID[b.id]
        assert b.kind in bug.kinds
        assert all(bug.affects(v) for v in b.versions("affected")), b.id
        # a fixed side runs on a version without the bug, or on a client the bug's
        # component is not (a librdkafka bug's fix by another client); an open bug has
        # only its affected side
        if b.axis == "client":
            assert Settings(client=parse_client(b.affected).kind).component_used(bug.component)
            assert not Settings(client=parse_client(b.fixed).kind).component_used(bug.component)
        else:
            assert not any(bug.affects(v) for v in b.versions("fixed")) \
                if b.fixed != "none" else b.sides == ("affected",)
        # an unaffected control is a release before the bug's first affected one
        assert not any(bug.affects(v) for v in b.versions("unaffected")), b.id
        assert all(bug.affected_from for _ in b.versions("unaffected")), b.id
        assert b.scenario is not None and SCENARIOS[b.scenario.name] is b.scenario
        for side in (*b.sides, "unaffected"):
            for version in b.versions(side):
                cfg = b.scenario.run_config(**b.pin(side, version))
                cfg.validate()
                assert getattr(cfg, b.axis) == version


def test_kip966_runs_on_its_further_versions(tmp_path: Path) -> None:
    """KIP-966 holds on Kafka 4.0.x defaults too (ELR off) and not on a fresh 4.1.x cluster
    (ELR on): ``--on 4.0.2,4.1.2`` runs those, each judged as its side, and tallies them in a
    figure section of its own (not the entry's 3.9.1/4.3.1 one)."""
    from reports.figures import sections, write_bug_rate
    from runner.bug_runs import figure_id
    from scenarios.bugs import Pick

    kip = find("KIP-966")
    picks = kip.picks("4.0.2,4.1.2")
    assert picks == [Pick("affected", "4.0.2"), Pick("fixed", "4.1.2")]
    assert kip.pin("affected", "4.0.2") == {"consumers": 0, "kafka_version": "4.0.2"}
    assert kip.labels("affected") == "Kafka 3.9.1, 4.0.2"
    assert kip.labels("fixed") == "Kafka 4.3.1, 4.1.2, 4.2.2"
    assert figure_id(kip, picks) == ("KIP-966:4.0.2:4.1.2", "KIP-966 on 4.0.2, 4.1.2")
    assert figure_id(kip, kip.picks("both")) == ("KIP-966", "KIP-966")
    # the section is one the figure file can hold, next to the entry's own
    figures = tmp_path / "bug-rates.md"
    for chosen in (kip.picks("both"), picks):
        section, title = figure_id(kip, chosen)
        write_bug_rate(section, "kafka-chaos run --bug KIP-966", [
            (p.side, kip.label(p.side, p.version), 1, 1, ["0"]) for p in chosen],
            kind="lost", path=figures, title=title)
    assert sections(figures) == ["KIP-966", "KIP-966:4.0.2:4.1.2"]
    assert "### KIP-966 on 4.0.2, 4.1.2" in figures.read_text()
    assert kip.picks("fixed") == [Pick("fixed", "4.3.1")]
    assert summary(kip, "affected", None, "4.0.2").startswith(
        "KIP-966 on affected (Kafka 4.0.2): lost ?")
    with pytest.raises(ValueError,
                       match=r"versions of KIP-966 \(3.9.1, 4.0.2, 4.3.1, 4.1.2, 4.2.2\)"):
        kip.picks("4.0.2,4.0.9")


def test_a_classic_scenario_runs_with_kip848_groups_and_tallies_apart(tmp_path: Path) -> None:
    """librdkafka#5586's scenario tunes the classic protocol (heartbeat.interval.ms,
    session.timeout.ms), which KIP-848 sets broker side and librdkafka refuses: with
    ``--group-protocol consumer`` the scenario's own such keys are dropped, the caller's are
    still refused, and the tally gets a figure section of its own."""
    from reports.figures import sections, write_bug_rate
    from runner.bug_runs import figure_id

    entry = find("librdkafka#5586")
    sc = entry.scenario
    with pytest.raises(RunConfigError, match="session.timeout.ms belongs to the classic"):
        sc.run_config(group_protocol="consumer",
                      consumer_config={"session.timeout.ms": "30000"}).validate()
    cfg = sc.run_config(**entry.pin("affected"), group_protocol="consumer")
    cfg.validate()  # was refused: the scenario's own classic keys
    assert cfg.consumer_config == {"debug": "cgrp"}
    classic = sc.run_config(**entry.pin("affected"))
    assert classic.consumer_config["heartbeat.interval.ms"] == "10000"
    picks = entry.picks("affected")
    assert figure_id(entry, picks, "classic") == figure_id(entry, picks) == (
        "librdkafka#5586", "librdkafka#5586")
    assert figure_id(entry, picks, "consumer") == (
        "librdkafka#5586:KIP-848", "librdkafka#5586 with KIP-848 groups (group.protocol=consumer)")
    figures = tmp_path / "bug-rates.md"
    for protocol in ("classic", "consumer"):
        section, title = figure_id(entry, picks, protocol)
        write_bug_rate(section, "kafka-chaos run --bug librdkafka#5586", [
            (p.side, entry.label(p.side, p.version), 1, 1, ["1"]) for p in picks],
            kind="stuck-consumer", path=figures, title=title)
    assert sections(figures) == ["librdkafka#5586", "librdkafka#5586:KIP-848"]


def test_an_open_bug_runs_on_its_unaffected_control() -> None:
    """librdkafka#5301 is open (no fixed side) and affects 2.12.0 on: 2.11.1, before it, is
    listed as an unaffected control. ``--on 2.11.1`` runs it, judged as a fixed side (a
    stuck producer there contradicts the entry, timing-dependent or not), in a figure
    section of its own; ``both`` and the nightly still run the affected side only."""
    from runner.bug_runs import figure_id
    from scenarios.bugs import Pick, run_misses

    bug = find("librdkafka#5301")
    assert bug.picks("2.11.1") == [Pick("unaffected", "2.11.1")]
    assert bug.picks("both") == [Pick("affected", "2.16.2")]
    assert bug.pin("unaffected", "2.11.1") == {"client_version": "2.11.1"}
    assert figure_id(bug, bug.picks("2.11.1")) == ("librdkafka#5301:2.11.1",
                                                  "librdkafka#5301 on 2.11.1")
    stuck = {"valid": False, "anomalies": {"stuck-producer": {"count": 1, "known_bugs": {}}}}
    live = {"valid": True, "anomalies": {"stuck-producer": {"count": 0}}}
    assert run_misses(bug, "unaffected", stuck) == [
        "stuck-producer = 1 (expected 0 on the unaffected version)",
        "verdict False (expected True)"]
    assert run_misses(bug, "unaffected", live) == []
    assert summary(bug, "unaffected", live, "2.11.1").startswith(
        "librdkafka#5301 on unaffected (confluent-kafka 2.11.1): stuck-producer 0")
    with pytest.raises(ValueError, match="not fixed"):
        bug.picks("fixed")


def test_eof_restart_expectation_follows_the_client_version() -> None:
    sc = SCENARIOS["eof-consumer-restart"]
    cfg: RunConfig = sc.run_config(client_version="2.13.0")
    assert cfg.consumer_mode == "restart"
    assert cfg.consumer_config["enable.partition.eof"] == "true"
    assert sc.expect_for(cfg, "4.3.1") == {"valid": False, "anomalies": {"poll-skip": ">0"}}
    fixed = sc.expect_for(sc.run_config(client_version="2.13.2"), "4.3.1")
    assert fixed["valid"] is True and fixed["anomalies"]["poll-skip"] == "==0"


def test_eof_restart_run_ends_after_restarts_and_a_new_assignment() -> None:
    def rebalance(what: str, t: int) -> Event:
        return Event(ts_ns=t, kind="rebalance", phase="instant", detail={"what": what})

    cycle = [rebalance("restart", 0), rebalance("revoked", 1), rebalance("assigned", 2)]
    events = [rebalance("assigned", -1)]
    for _ in range(EOF_RESTARTS - 1):
        events += cycle
        assert not eof_restarts_done(events), len(events)
    assert EOF_RESTARTS >= 2
    # the last restart counts only once its new consumer holds the partition again
    assert not eof_restarts_done([*events, *cycle[:2]])
    assert eof_restarts_done([*events, *cycle])
    # other readers' and other kinds' events do not count as restarts
    other = Event(ts_ns=3, kind="phase", phase="start", detail={"what": "restart"})
    assert not eof_restarts_done([*events, other, rebalance("assigned", 4)])
    assert SCENARIOS["eof-consumer-restart"].done_when is eof_restarts_done


def test_find_refuses_unknown_and_unattempted(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="unknown bug"):
        find("nope#1")
    # every entry has a scenario today; one without is refused with what is known
    idle = BugEntry(id="X-1", axis="kafka_version", affected="3.9.1", fixed="none",
                    kind="lost", status=NOT_ATTEMPTED, title="an entry without a scenario")
    monkeypatch.setitem(BUG_BY_ID, "X-1", idle)
    with pytest.raises(ValueError, match="no scenario yet"):
        find("X-1")


def test_judge_needs_the_kind_the_tag_and_the_verdict() -> None:
    kip = find("KIP-966")

    def res(count: int, tagged: int, valid: object) -> dict[str, object]:
        return {"valid": valid, "anomalies": {"lost": {
            "count": count, "known_bugs": {"KIP-966": tagged} if tagged else {}}}}

    assert judge(kip, "affected", res(5, 5, True)) == []
    assert judge(kip, "affected", res(5, 0, True))  # a loss the bug does not explain
    assert judge(kip, "affected", res(0, 0, True))
    assert judge(kip, "fixed", res(0, 0, True)) == []
    assert judge(kip, "fixed", res(1, 0, True))
    assert judge(kip, "fixed", None) == ["no results"]


def test_tally_counts_the_runs_that_showed_the_promise() -> None:
    kip = find("KIP-966")

    def res(count: int, tagged: int, valid: object) -> dict[str, object]:
        return {"valid": valid, "anomalies": {"lost": {
            "count": count, "known_bugs": {"KIP-966": tagged} if tagged else {}}}}

    runs = [res(1935, 1935, True), res(0, 0, True), res(12, 0, True), None]
    assert tally(kip, "affected", runs) == (
        "KIP-966 on affected (Kafka 3.9.1): 1/4 runs as expected; lost per run: "
        "1935, 0, 12, -")
    assert tally(kip, "fixed", [res(0, 0, True)] * 5) == (
        "KIP-966 on fixed (Kafka 4.3.1): 5/5 runs as expected; lost per run: 0, 0, 0, 0, 0")


def test_a_timing_dependent_bug_hidden_in_a_run_is_counted_not_failed() -> None:
    dup = find("librdkafka#4953")
    assert dup.timing and dup.sides == ("affected",)

    def res(count: int, tagged: int, valid: object) -> dict[str, object]:
        return {"valid": valid, "anomalies": {"duplicate": {
            "count": count, "known_bugs": {dup.id: tagged} if tagged else {}}}}

    hidden, shown = res(0, 0, True), res(4130, 4130, True)
    assert "not shown by this run" in summary(dup, "affected", hidden)
    assert summary(dup, "affected", shown).endswith("as expected")
    assert "NOT as expected" in summary(dup, "affected", res(12, 0, True))
    assert tally(dup, "affected", [hidden, shown, hidden]).startswith(
        "librdkafka#4953 on affected (confluent-kafka 2.16.1): 1/3 runs as expected")


def test_bugs_lists_the_catalogue() -> None:
    proc = subprocess.run([*CLI, "bugs"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:5] == ["id", "title", "affected", "fixed", "status"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert set(rows) == {b.id for b in BUGS}
    assert "confluent-kafka 2.13.0" in rows["librdkafka#4844"]
    assert "confluent-kafka 2.13.2" in rows["librdkafka#4844"]
    assert "Kafka 3.9.1" in rows["KIP-966"] and "Kafka 4.3.1" in rows["KIP-966"]
    assert "not fixed" in rows["librdkafka#4953"]
    assert "not fixed (unaffected: confluent-kafka 2.11.1)" in rows["librdkafka#5301"]
    assert "reproduces sometimes (timing)" in rows["librdkafka#4953"]
    assert "Kafka 3.9.1" in rows["KAFKA-17754"] and "reproduces (timing)" in rows["KAFKA-17754"]
    assert "confluent-kafka 2.16.2" in rows["txn-offsets-after-abort"]
    assert "seen (its script" in rows["txn-offsets-after-abort"]


@pytest.mark.parametrize("args,reason", [
    (["--bug", "nope#1"], "unknown bug 'nope#1'"),
    (["--bug", "KAFKA-17754", "--client", "java:4.1.1"], "pins --client"),
    (["--bug", "librdkafka#4953", "--on", "fixed"], "is not fixed: it runs on its affected"),
    (["--bug", "KIP-966", "--on", "broken"], "--on"),
    (["--bug", "KIP-966", "--kafka-version", "4.3.1"], "pins --kafka-version"),
    (["--bug", "librdkafka#4844", "--client-version", "2.16.1"], "pins --client-version"),
    (["--bug", "KIP-966", "--scenario", "safe-config-chaos"], "drop --scenario"),
    (["--on", "fixed"], "--on needs --bug"),
    (["--repeat", "5"], "--repeat needs --bug"),
    (["--bug", "KIP-966", "--repeat", "0"], "--repeat must be >= 1"),
    (["--figures", "f.md"], "--figures needs --bug"),
    (["--bug", "KIP-966", "--figures", "f.md"], "--figures needs --repeat"),
    (["--bug", "KIP-966", "--repeat", "2", "--figures", "/nonexistent/dir/f.md"],
     "--figures: no folder /nonexistent/dir"),
    (["--bug", "KIP-966", "--on", "both", "--kafka-version", "4.3.1"],
     "pins --kafka-version (3.9.1 on affected, 4.3.1 on fixed)"),
    (["--bug", "KIP-966", "--on", "4.0.2,4.1.2", "--kafka-version", "4.3.1"],
     "pins --kafka-version (4.0.2 on affected, 4.1.2 on fixed)"),
    (["--bug", "KIP-966", "--on", "4.0.9"], "--on '4.0.9': say affected, fixed, both or"),
    (["--bug", "librdkafka#4953", "--on", "2.16.2"], "versions of librdkafka#4953 (2.16.1)"),
    # every side is validated before the first cluster starts
    (["--bug", "KIP-966", "--on", "both", "--brokers", "1"], "--replication-factor must be"),
])
def test_run_bug_bad_input_is_one_line_and_exit_2(args, reason, tmp_path) -> None:  # type: ignore[no-untyped-def]
    proc = subprocess.run([*CLI, "run", *args, "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and reason in lines[0], proc.stderr
    assert not list(tmp_path.iterdir()), "a refused run must not create a run directory"


def test_rate_counts_the_runs_as_the_tally_says() -> None:
    """The numbers a bug-rate figure is written from (``--figures``) are the tally's."""
    from scenarios.bugs import rate, tally

    kip = find("KIP-966")
    shown = {"valid": True, "anomalies": {"lost": {"count": 9, "known_bugs": {"KIP-966": 9}}}}
    clean = {"valid": True, "anomalies": {"lost": {"count": 0, "known_bugs": {}}}}
    assert rate(kip, "affected", [shown, clean, None]) == (1, 3, ["9", "0", "-"])
    assert tally(kip, "affected", [shown, clean, None]).endswith(
        "1/3 runs as expected; lost per run: 9, 0, -")
