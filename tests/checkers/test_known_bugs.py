"""The known-bug registry (contract/known_bugs.py): well-formed, versions, conditions."""

from __future__ import annotations

from contract.anomalies import ANOMALY_KINDS
from contract.known_bugs import BY_ID, FACTS, KNOWN_BUGS, unknown_ids, version_tuple

KINDS = set(ANOMALY_KINDS) | {"reused-offset"}


def test_entries_are_well_formed() -> None:
    assert len(BY_ID) == len(KNOWN_BUGS)
    for b in KNOWN_BUGS:
        assert b.status in ("open", "fixed") and b.link.startswith("https://"), b.id
        assert set(b.kinds) <= KINDS and b.kinds, b.id
        assert b.facts and b.facts <= set(FACTS), b.id
        assert (b.status == "fixed") == (b.fixed_in is not None), b.id
    assert {"librdkafka#4953", "librdkafka#4844", "KIP-966"} <= set(BY_ID)


def test_affected_versions() -> None:
    eof = BY_ID["librdkafka#4844"]  # broken since 2.2.0, fixed in 2.13.2 (CHANGELOG)
    assert [eof.affects(v) for v in ("2.0.2", "2.2.0", "2.13.0", "2.13.2", "2.16.0")] == [
        False, True, True, False, False]
    assert eof.affects(None) and eof.affects("")  # unknown: cannot be ruled out
    assert BY_ID["librdkafka#4953"].affects("2.16.0")  # open
    assert BY_ID["KIP-966"].affects("4.0.0") and not BY_ID["KIP-966"].affects("4.1.1")
    assert version_tuple("2.13.2-RC1") == (2, 13, 2) and version_tuple("x") == ()


def test_the_stages_read_versions_with_one_parser() -> None:
    """Settings and scenarios read a version as the registry does (a pre-release's
    suffix is not a digit of its minor version)."""
    from contract.settings import Settings
    from scenarios.replication import elr_default

    honoured = [Settings(kafka_version=v).unclean_honoured
                for v in ("3.8.1", "3.8-rc9", "3.9.0", "3.9.1rc1", "4.3.1", None)]
    assert honoured == [False, False, True, True, True, True]  # unknown: not assumed ignored
    assert [elr_default(v) for v in ("4.0.0", "4.0-rc1", "4.1.0", "4.3.1")] == [
        False, False, True, True]


def test_conditions_need_every_fact() -> None:
    bug = BY_ID["librdkafka#4953"]
    facts = {"idempotent_producer": True, "non_transactional_producer": True,
             "epoch_bump_before": True, "copies_in_new_epoch": True}
    assert bug.explains("duplicate", facts) and bug.explains("reorder", facts)
    assert not bug.explains("duplicate", {**facts, "copies_in_new_epoch": False})
    assert not bug.explains("lost", facts)
    assert not bug.explains("duplicate", {**facts, "epoch_bump_before": False})
    assert not bug.explains("duplicate", {"idempotent_producer": True})


def test_unknown_ids() -> None:
    assert unknown_ids(["librdkafka#4953", "nope#1"]) == ["nope#1"]
