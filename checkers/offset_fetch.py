"""librdkafka#5586's evidence for one stuck consumer: the committed offsets of its assignment
were asked of a broker that no longer coordinated the group, the answer was NOT_COORDINATOR
for the request as a whole, and the partitions it never read again are that assignment's.

librdkafka asks the group's coordinator for the committed offsets of a new assignment
(OffsetFetch) before it fetches. Answered NOT_COORDINATOR for the whole request (no
partition in it), it re-queries the coordinator but neither retries the request nor puts
the partitions back to be asked again: they wait for an answer that never comes. With
``debug=cgrp`` it logs ``Offset fetch error for 0 partition(s): Broker: Not coordinator``
(contract.known_bugs.LOG_SIGNATURES; ``0 partition(s)``: the error is the request's, not a
partition's), which the workload turns into a ``client-log`` event of the reader.

Pure Python over the events and the readers' last reads: the liveness check
(checkers/liveness.py) asks it for each stuck consumer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contract.events import CLIENT_LOG, REBALANCE
from contract.known_bugs import OFFSET_FETCH_NOT_COORDINATOR

from .history import Event


@dataclass
class FetchEvidence:
    """Per reader: its rebalance events naming each partition (time, what), and when it
    logged a request-level NOT_COORDINATOR answer to an OffsetFetch."""

    rebalances: dict[str, dict[str, list[tuple[int, str]]]] = field(default_factory=dict)
    failed: dict[str, list[int]] = field(default_factory=dict)


def fetch_evidence(events: Sequence[Event]) -> FetchEvidence:
    """The rebalances and librdkafka#5586 log lines of every reader."""
    out = FetchEvidence()
    for e in events:
        if e.kind == REBALANCE:
            reader = str(e.detail.get("reader"))
            for tp in e.detail.get("partitions") or []:
                out.rebalances.setdefault(reader, {}).setdefault(str(tp), []).append(
                    (e.ts_ns, str(e.detail.get("what"))))
        elif e.kind == CLIENT_LOG and e.detail.get("bug") == OFFSET_FETCH_NOT_COORDINATOR:
            out.failed.setdefault(str(e.detail.get("client")), []).append(e.ts_ns)
    return out


def stranded(ev: FetchEvidence, reader: str, tp: str, hi: int,
             last_read: Mapping[tuple[str, str], int]) -> bool:
    """Whether ``reader`` holds ``tp`` from an assignment whose committed offsets were
    answered NOT_COORDINATOR as a whole: its last rebalance event naming ``tp`` by ``hi``
    assigned it, it logged the failed OffsetFetch after that and by ``hi``, and it read
    nothing of ``tp`` after that line (``last_read``: (reader, tp) -> its last read)."""
    named = [r for r in ev.rebalances.get(reader, {}).get(tp, []) if r[0] <= hi]
    if not named:
        return False
    at, what = max(named)
    if what != "assigned":
        return False
    failed = [t for t in ev.failed.get(reader, []) if at <= t <= hi]
    return bool(failed) and last_read.get((reader, tp), -1) < min(failed)


def offset_fetch_fact(ev: FetchEvidence, ex: Mapping[str, Any], hi: int,
                      last_read: Mapping[tuple[str, str], int]) -> bool:
    """``offset_fetch_not_coordinator`` for one stuck consumer: every partition it is
    behind on was stranded so (:func:`stranded`) in one of its readers."""
    behind = list(ex.get("behind") or {})
    readers = [str(r) for r in ex.get("readers") or []]
    return bool(behind) and all(any(stranded(ev, r, tp, hi, last_read) for r in readers)
                                for tp in behind)
