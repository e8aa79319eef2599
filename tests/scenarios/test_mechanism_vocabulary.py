"""One mechanism vocabulary (contract.mechanisms) for TOML scenarios, built-in scenarios and
the checker: TOML accepts every kind the checker decides (consumer-restart too, which it once
could not say), the built-in scenarios use only its kinds and parameters, and the checker
decides every kind of it."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from checkers.observations import Change, PartitionHistory
from checkers.verdict import mechanism
from contract.events import INSTANT, REBALANCE, SITUATION, START, Event
from contract.faults import FAULTS
from contract.mechanisms import AFTER, AFTER_VALUES, MECHANISMS
from runner.config import RunConfigError
from scenarios import SCENARIOS
from scenarios.base import Scenario
from scenarios.bugs import BUGS
from scenarios.toml_file import load_scenarios

#: A value for each parameter a kind may state, as a TOML file and a scenario would.
EXAMPLE_PARAMS: dict[str, Any] = {"fault": "kill", "size": 1, "count": 2}


def _entry(kind: str, *, optional: bool = True) -> dict[str, Any]:
    spec = MECHANISMS[kind]
    names = (*spec.params, *(spec.optional if optional else ()))
    return {"kind": kind, **{n: EXAMPLE_PARAMS[n] for n in names}}


def _toml_line(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def _load(tmp_path: Path, entry: dict[str, Any]) -> list[dict[str, Any]]:
    lines = [f"{k} = {_toml_line(v)}" for k, v in entry.items()]
    path = tmp_path / "s.toml"
    path.write_text('[[scenario]]\nname = "m"\nsummary = "s"\n[[scenario.mechanism]]\n'
                    + "\n".join(lines) + "\n")
    mech = load_scenarios(path, builtins={})["m"].mechanism
    assert isinstance(mech, list)
    return mech


@pytest.mark.parametrize("kind", MECHANISMS)
@pytest.mark.parametrize("optional", [False, True])
def test_toml_accepts_every_kind_of_the_vocabulary(tmp_path: Path, kind: str,
                                                   optional: bool) -> None:
    entry = _entry(kind, optional=optional)
    assert _load(tmp_path, entry) == [entry]


def test_toml_says_consumer_restart(tmp_path: Path) -> None:
    # The kind the eof-consumer-restart scenario uses; TOML's own list once lacked it.
    assert _load(tmp_path, {"kind": "consumer-restart"}) == [{"kind": "consumer-restart"}]
    assert _load(tmp_path, {"kind": "consumer-restart", "count": 3}) == [
        {"kind": "consumer-restart", "count": 3}]


@pytest.mark.parametrize(("entry", "message"), [
    ({"kind": "consumer-restart", "count": 0}, "count must be a whole number >= 1"),
    ({"kind": "consumer-restart", "count": "two"}, "count must be a whole number >= 1"),
    ({"kind": "consumer-restart", "size": 1}, "unknown key 'size'"),
    # TOML steps emit no situation event, so "after" could never be observed there
    ({"kind": "leader-changed", AFTER: SITUATION}, f"unknown key '{AFTER}'"),
    ({"kind": "restarted"}, "kind must be one of " + ", ".join(MECHANISMS)),
])
def test_toml_refuses_what_the_vocabulary_does_not_say(tmp_path: Path, entry: dict[str, Any],
                                                       message: str) -> None:
    with pytest.raises(RunConfigError, match=message):
        _load(tmp_path, entry)


def _scenarios() -> list[Scenario]:
    bugs = [b.scenario for b in BUGS if b.scenario is not None]
    return list({s.name: s for s in [*SCENARIOS.values(), *bugs]}.values())


def _mechanisms_of(sc: Scenario) -> list[dict[str, Any]]:
    """Every mechanism list a scenario gives, for the settings it depends on."""
    out: list[dict[str, Any]] = []
    for unclean, version in itertools.product((False, True), ("3.9.1", "4.1.1", "4.3.1")):
        out += sc.mechanism_for(sc.run_config(unclean=unclean), version)
    return out


@pytest.mark.parametrize("sc", _scenarios(), ids=lambda sc: sc.name)
def test_built_in_scenarios_use_only_the_vocabulary(sc: Scenario) -> None:
    for m in _mechanisms_of(sc):
        spec = MECHANISMS[m["kind"]]
        allowed = {"kind", *spec.params, *spec.optional, AFTER}
        assert set(m) <= allowed, m
        assert set(spec.params) <= set(m), m
        assert m.get(AFTER, SITUATION) in AFTER_VALUES, m


def _change(ts: int, leader: int, isr: tuple[int, ...], epoch: int,
            prev: Change | None) -> Change:
    return Change(ts, "chaos", 0, leader, isr, epoch, prev.leader if prev else None,
                  prev.isr if prev else None, prev.leader_epoch if prev else None)


def _history_showing_every_kind() -> tuple[list[Event], PartitionHistory]:
    # leader 1 -> 2 (ISR shrinks to [2], epoch rises) -> offline -> 3, not in the last ISR
    changes: list[Change] = []
    for ts, leader, isr, epoch in [(1, 1, (1, 2, 3), 0), (3, 2, (2,), 1), (5, -1, (2,), 1),
                                   (7, 3, (3,), 2)]:
        changes.append(_change(ts, leader, isr, epoch, changes[-1] if changes else None))
    events = [Event(2, "kill", START, (1,)), Event(4, SITUATION, INSTANT, (1,)),
              *[Event(10 + i, REBALANCE, INSTANT, ("c0",), {"what": "restart"})
                for i in range(2)]]
    return events, PartitionHistory(changes)


def test_the_checker_decides_every_kind_of_the_vocabulary() -> None:
    events, parts = _history_showing_every_kind()
    entries = [_entry(kind) for kind in MECHANISMS]
    shown = mechanism(entries, events, parts)
    assert [d["kind"] for d in shown["details"]] == list(MECHANISMS)
    assert [d for d in shown["details"] if not d["observed"]] == []
    nothing = mechanism(entries, [], PartitionHistory([]))
    assert [d["kind"] for d in nothing["details"] if d["observed"]] == []
    assert all("unknown mechanism kind" not in d["evidence"] for d in nothing["details"])


def test_the_checker_calls_a_kind_outside_the_vocabulary_unknown() -> None:
    events, parts = _history_showing_every_kind()
    out = mechanism([{"kind": "restarted"}], events, parts)
    assert out["observed"] is False
    assert out["details"][0]["evidence"] == "unknown mechanism kind 'restarted'"


def test_after_the_situation_counts_only_a_later_fault_or_restart() -> None:
    """The power-loss scenario cuts power even when its situation never held (its wait timed
    out): that cut is not the scenario's, so its fault mechanism is not observed. A kill at
    ts 2 and two restarts at ts 10-11 against a situation at ts 4: only the restarts count."""
    events, parts = _history_showing_every_kind()
    after = [{"kind": "fault", "fault": "kill", AFTER: SITUATION},
             {"kind": "consumer-restart", "count": 2, AFTER: SITUATION}]
    shown = mechanism(after, events, parts)
    assert [d["observed"] for d in shown["details"]] == [False, True]  # was [True, True]
    assert shown["details"][0]["evidence"] == ("no 'kill' fault event in events.jsonl after "
                                               "the situation at ts_ns=4")
    later = [*events, Event(20, "kill", START, (2,))]
    assert mechanism(after, later, parts)["observed"] is True
    none = mechanism(after, [e for e in later if e.kind != SITUATION], parts)
    assert [d["evidence"] for d in none["details"]][0] == "no situation event to look after"
    assert none["observed"] is False


@pytest.mark.parametrize("sc", [s for s in _scenarios() if s.script is not None],
                         ids=lambda sc: sc.name)
def test_every_script_declares_the_kinds_it_starts(sc: Scenario) -> None:
    # what a run on someone else's cluster is checked against before it starts (the runs
    # of tests/scenarios check that the kinds started are among these)
    assert sc.script_faults and set(sc.script_faults) <= set(FAULTS), sc.script_faults
