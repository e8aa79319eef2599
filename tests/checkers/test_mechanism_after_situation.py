"""A mechanism marked ``"after": "situation"`` counts only what the cluster did after the
script's last verified situation. The history below is CI run 41's unclean-election run:
a starved controller fenced every broker in turn and elected the scenario's leader uncleanly
before the script had set anything up; only the election after its kill is the mechanism."""

from __future__ import annotations

from checkers.observations import Change, PartitionHistory
from checkers.verdict import mechanism
from contract.events import INSTANT, SITUATION, Event


def _change(ts: int, leader: int, isr: tuple[int, ...], epoch: int,
            prev: Change | None) -> Change:
    return Change(ts, "chaos", 0, leader, isr, epoch, prev.leader if prev else None,
                  prev.isr if prev else None, prev.leader_epoch if prev else None)


def _changes(after_kill: bool) -> list[Change]:
    steps = [(1, 1, (1, 2, 3), 0), (2, 2, (2, 3), 1), (3, 3, (3,), 2),
             (4, 1, (1,), 3)]  # leader 1 elected uncleanly from ISR [3]: load, not the script
    if after_kill:
        steps.append((8, 2, (2,), 4))  # the stale follower elected after the kill
    out: list[Change] = []
    for ts, leader, isr, epoch in steps:
        out.append(_change(ts, leader, isr, epoch, out[-1] if out else None))
    return out


SITUATED = [Event(5, SITUATION, INSTANT, (1,), {"what": "lone leader"})]


def _seen(kind: str, events: list[Event], changes: list[Change],
          after: bool = True) -> dict[str, object]:
    want = {"kind": kind, **({"after": SITUATION} if after else {})}
    out = mechanism([want], events, PartitionHistory(changes))
    detail: dict[str, object] = out["details"][0]
    assert detail["observed"] is out["observed"]
    return detail


def test_an_election_before_the_situation_is_not_its_consequence() -> None:
    before_only = _changes(after_kill=False)
    anywhere = _seen("stale-leader-elected", SITUATED, before_only, after=False)
    assert anywhere["observed"] is True and "ts_ns=4" in str(anywhere["evidence"])
    late = _seen("stale-leader-elected", SITUATED, before_only)
    assert late["observed"] is False
    assert "after the situation at ts_ns=5" in str(late["evidence"])
    assert late["after"] == SITUATION


def test_the_election_after_the_situation_is_named() -> None:
    d = _seen("stale-leader-elected", SITUATED, _changes(after_kill=True))
    assert d["observed"] is True
    assert d["evidence"] == "chaos-0 leader 2 elected, last ISR [1], at ts_ns=8"


def test_changes_before_the_situation_still_give_the_state_a_later_change_moves_from() -> None:
    # The leader before the situation (1, epoch 3) is where the change after it starts.
    with_kill = _changes(after_kill=True)
    moved = _seen("leader-changed", SITUATED, with_kill)
    assert moved["observed"] is True and moved["evidence"] == \
        "chaos-0 leader 1 -> 2 at ts_ns=8"
    assert _seen("leader-epoch-increased", SITUATED, with_kill)["evidence"] == \
        "chaos-0 epoch 3 -> 4 at ts_ns=8"
    assert _seen("leader-changed", SITUATED, _changes(after_kill=False))["observed"] is False
    assert _seen("isr-shrunk-to", SITUATED, with_kill)["observed"] is True
    assert _seen("offline", SITUATED, with_kill)["observed"] is False


def test_the_last_situation_counts_and_none_means_nothing_does() -> None:
    with_kill = _changes(after_kill=True)
    again = [*SITUATED, Event(9, SITUATION, INSTANT, (2,), {"what": "second attempt"})]
    assert _seen("stale-leader-elected", again, with_kill)["observed"] is False
    none = _seen("stale-leader-elected", [], with_kill)
    assert none["observed"] is False and none["evidence"] == "no situation event to look after"
