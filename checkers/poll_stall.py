"""The facts of a stuck consumer whose poll loop a poll-stall fault stopped (librdkafka#5541,
contract/known_bugs.py): per reader, never per run, and each from the history's own events.

- ``kip848_consumer``: the reader ran with group.protocol=consumer (run.json);
- ``poll_stalled_past_interval``: a poll-stall window on the reader lasted longer than its
  max.poll.interval.ms, counted from the reader's own last consume() before the stall
  (the start event's ``stalled_since_ns``) to the end event (written before the loop is let
  go: a lower bound);
- ``fatal_after_stall``: after such a stall's end and by the liveness window's end, the
  reader recorded a fatal ``consumer-error`` caused by INVALID_REQUEST, and read nothing after
  it (a consumer that read again was not killed by it).

A unit of several readers (a subscribe group) has a fact only when every reader has it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from contract.events import CONSUMER_ERROR, Event
from contract.faults import POLL_STALL
from contract.settings import Settings
from contract.windows import fault_windows

#: The cause a fatal consumer-error must name to be this bug's: the broker's answer to the
#: epoch-0 heartbeat that lacks the full join request.
CAUSE = "INVALID_REQUEST"


@dataclass(frozen=True)
class ReaderEvidence:
    """What the history says of one reader: its stalls past the interval (their end
    times) and its fatal INVALID_REQUEST errors (times, and the librdkafka each names)."""

    stalls_past_ns: tuple[int, ...]
    fatal: tuple[tuple[int, str | None], ...]


def evidence(events: list[Event], settings: Settings) -> dict[str, ReaderEvidence]:
    """reader -> its evidence, for the readers a poll-stall or a fatal error names."""
    past: dict[str, list[int]] = {}
    for w in fault_windows(events):
        if w.kind != POLL_STALL or w.end_ns is None:
            continue
        since = w.detail.get("stalled_since_ns")
        for reader in map(str, w.targets):
            began = since.get(reader) if isinstance(since, dict) else None
            limit_ns = settings.max_poll_interval_ms(reader) * 1_000_000
            if isinstance(began, int) and began > 0 and w.end_ns - began > limit_ns:
                past.setdefault(reader, []).append(w.end_ns)
    fatal: dict[str, list[tuple[int, str | None]]] = {}
    for e in events:
        d = e.detail
        if e.kind == CONSUMER_ERROR and d.get("fatal") is True and d.get("cause") == CAUSE:
            version = d.get("librdkafka")
            fatal.setdefault(str(d.get("client")), []).append(
                (e.ts_ns, str(version) if version else None))
    return {r: ReaderEvidence(tuple(past.get(r, ())), tuple(fatal.get(r, ())))
            for r in set(past) | set(fatal)}


def first_fatal_after_stall(ev: ReaderEvidence | None, hi_ns: int) -> tuple[int, str | None] | None:
    """The reader's first fatal INVALID_REQUEST after a stall past its interval ended, by
    ``hi_ns`` (None: there is none)."""
    if ev is None or not ev.stalls_past_ns:
        return None
    first_end = min(ev.stalls_past_ns)
    after = sorted(f for f in ev.fatal if first_end <= f[0] <= hi_ns)
    return after[0] if after else None


def stall_facts(readers: list[str], settings: Settings, found: Mapping[str, ReaderEvidence],
                last_read_ns: Mapping[str, int], hi_ns: int) -> tuple[dict[str, bool],
                                                                       list[str]]:
    """The three facts of one stuck consumer (its ``readers``), and the librdkafka versions
    its fatal errors name (the entry must affect each of them too)."""
    protocol = all(settings.group_protocol(r) == "consumer" for r in readers)
    stalled = all(bool(found.get(r) and found[r].stalls_past_ns) for r in readers)
    versions: list[str] = []
    fatal = True
    for r in readers:
        first = first_fatal_after_stall(found.get(r), hi_ns)
        if first is None or last_read_ns.get(r, -1) >= first[0]:
            fatal = False
            continue
        if first[1]:
            versions.append(first[1])
    return ({"kip848_consumer": protocol, "poll_stalled_past_interval": stalled,
             "fatal_after_stall": fatal}, versions)
