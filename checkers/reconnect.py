"""down-after-heal: a producer whose client went on reporting every broker down after the
faults had healed (librdkafka#5088's re-bootstrap loop), judged from the history alone.

A ``client-error`` event (contract.events) is a producer's report of every broker down
(librdkafka's ``_ALL_BROKERS_DOWN``). A report at ``t`` counts when

- a fault had ended before ``t`` and none was in force from ``t - bound`` to ``t``
  (``bound``: the run's liveness bound; a fault from the moment the nemesis began it): the
  last fault had ended at least the bound before, so the client had had the bound to
  reconnect;
- a write of another producer was acknowledged within :data:`WITNESS_NS` of ``t``: the
  brokers served the client host then, so "every broker down" was this client's state, not
  the cluster's. A report past the bound without such a witness proves nothing either way:
  the run cannot tell (an ``unknown`` reason naming the client).

Each producer with a counted report is one anomaly; its example carries the counted reports
(how many, the first and the last) and the end of the fault they follow. Its known-bug fact
``client_cut_from_every_broker`` (contract/bug_facts.py): the last fault that ended before
its first counted report was a partition cutting the client host from every broker, and the
client reported every broker down while that cut was in force.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from contract.anomalies import DOWN_AFTER_HEAL
from contract.clients import CONFLUENT_KAFKA
from contract.events import CLIENT_ERROR
from contract.known_bugs import KnownBug
from contract.settings import Settings
from contract.windows import FaultWindow, fault_windows

from .history import Event
from .known import tag_known

#: How close to a report another producer's acknowledgement must be to show that the
#: brokers served the client host at the report.
WITNESS_NS = 1_000_000_000


@dataclass
class Reconnected:
    """What the check found: one example per producer, the reasons it cannot tell, and
    why it did not check at all (None: it did)."""

    examples: list[dict[str, Any]] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    unchecked: str | None = None


def reports(events: list[Event]) -> dict[str, list[int]]:
    """Producer (``p<i>``) -> the times it reported every broker down."""
    out: dict[str, list[int]] = {}
    for e in events:
        if e.kind == CLIENT_ERROR:
            out.setdefault(str(e.detail.get("client")), []).append(e.ts_ns)
    return {k: sorted(v) for k, v in out.items()}


def judge_reconnects(events: list[Event], writes: DataFrame, settings: Settings,
                     known: Sequence[KnownBug] = ()) -> Reconnected:
    """The down-after-heal facts of one run (see the module)."""
    out = Reconnected()
    bound_s = settings.liveness_s
    if not bound_s or bound_s <= 0:
        out.unchecked = ("liveness is off (or the run was recorded before it was checked): "
                         "no bound to reconnect within")
        return out
    if settings.client != CONFLUENT_KAFKA:
        out.unchecked = (f"{settings.client}'s producers do not record reports of every "
                         "broker down")
        return out
    said = reports(events)
    if not said:
        return out
    windows = fault_windows(events)
    bound = int(bound_s * 1e9)
    late = {c: [t for t in ts if _healed_for(windows, t, bound)] for c, ts in said.items()}
    late = {c: ts for c, ts in late.items() if ts}
    if not late:
        return out
    witnessed = _acked_near(writes, [t for ts in late.values() for t in ts])
    for client, ts in sorted(late.items()):
        shown = [t for t in ts if any(p != client[1:] for p in witnessed.get(t, ()))]
        if not shown:
            out.unknown.append(
                f"{client} reported every broker down {len(ts)} time(s) later than the "
                f"{bound_s:g} s bound after the faults healed, with no other producer "
                "acknowledged within a second of any: whether the brokers served it then is "
                "not shown")
            continue
        ended = max((w.end_ns for w in windows
                     if w.end_ns is not None and w.end_ns <= shown[0]), default=None)
        ex: dict[str, Any] = {
            "client": client, "reports": len(shown), "first_ns": shown[0],
            "last_ns": shown[-1], "faults_ended_ns": ended,
            "summary": f"{client} reported every broker down {len(shown)} time(s) from "
                       f"{(shown[0] - ended) / 1e9 if ended else 0:.1f} s after the last "
                       "fault ended, while another producer was acknowledged",
        }
        tag_known([ex], DOWN_AFTER_HEAL,
                  {"client_cut_from_every_broker": _cut_before(windows, said[client],
                                                               shown[0], settings.brokers)},
                  known)
        out.examples.append(ex)
    return out


def _healed_for(windows: list[FaultWindow], t: int, bound: int) -> bool:
    """A fault had ended before ``t``, and none was in force at any moment from
    ``t - bound`` to ``t``. A fault is in force from the moment the nemesis began it
    (``began_ns``: its start event is written once it has taken effect)."""
    return any(w.end_ns is not None and w.end_ns <= t for w in windows) and not any(
        min(w.start_ns, int(w.detail.get("began_ns") or w.start_ns)) <= t
        and (w.end_ns is None or w.end_ns > t - bound) for w in windows)


def _acked_near(writes: DataFrame, times: list[int]) -> dict[int, set[str]]:
    """Report time -> the producers (ids as text) with a write acknowledged within
    :data:`WITNESS_NS` of it. One job: the acknowledgements in the reports' span, by
    producer and second."""
    lo, hi = min(times) - WITNESS_NS, max(times) + WITNESS_NS
    rows = (writes.where((F.col("outcome") == "ok") & F.col("complete_ns").between(lo, hi))
            .groupBy("producer", (F.col("complete_ns") / 100_000_000).cast("long").alias("d"))
            .agg(F.min("complete_ns").alias("a"), F.max("complete_ns").alias("b")).collect())
    out: dict[int, set[str]] = {}
    for t in times:
        out[t] = {str(r["producer"]) for r in rows
                  if r["a"] - WITNESS_NS <= t <= r["b"] + WITNESS_NS}
    return out


def _cut_before(windows: list[FaultWindow], said: list[int], first: int,
                brokers: int | None) -> bool:
    """The last fault that ended before ``first`` cut the client host from every broker,
    and the client reported every broker down while it was in force."""
    done = [w for w in windows if w.end_ns is not None and w.end_ns <= first]
    if not done or not brokers:
        return False
    last = max(done, key=lambda w: w.end_ns or 0)
    end = last.end_ns or 0
    return (last.kind == "partition" and last.detail.get("shape") == "client"
            and len(set(last.targets)) >= brokers
            and any(last.start_ns <= t <= end for t in said))
