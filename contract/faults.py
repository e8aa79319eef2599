"""The fault registry: every fault kind, its parameters, how its window is recorded, its colour
and what it does (DESIGN.md §3: a fault records its start and end as events).

The nemesis and scenarios build faults by these names (``nemesis/faults/factory.py``), the CLI
and TOML files validate against them, the checker and the report pair their events into windows
(:mod:`contract.windows`) and the report colours them. A new fault kind is one entry here plus
its class in ``nemesis/faults/`` and its constructor in the factory.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FaultKind:
    """One kind of fault.

    ``params``: the parameters a scripted step may state (the nemesis draws or defaults
    them). ``random``: drawn by ``--faults`` / the random nemesis. ``closed_by``: the instant
    event kind that ends a window this fault opened as an instant event (older histories and
    synthetic ones record ``kill`` … ``start`` instead of a start/end pair). ``css``,
    ``colour``, ``label_colour``: the report's class, fill and label colour for its windows.
    ``existing``: it can be done to a cluster kafka-chaos did not start, on the nodes its
    nodes.toml lists (over SSH or a container of theirs); the others need our own cluster.
    """

    kind: str
    description: str
    params: tuple[str, ...] = ()
    random: bool = True
    closed_by: str | None = None
    existing: bool = False
    css: str = "f-other"
    colour: str = "#64748b"
    label_colour: str = "#334155"


#: The crash whose events the checker reads for more than a window: the ISR it hit excuses
#: lost writes, the partitions it cut (``lost``) start producer-state heads.
POWER_LOSS = "power-loss"
#: A fault of the run's own group consumers, not of a node: their poll loops stop calling
#: consume() while librdkafka's threads (heartbeats, fetches) go on, as when an application
#: spends too long on a batch, so ``max.poll.interval.ms`` expires and the session does not.
#: Its events' ``targets`` are reader ids (``c0``), not node ids; the start event's
#: ``detail.stalled_since_ns`` says, per reader, when its last consume() returned, and the
#: end event is written before the loops are let go: the window is a lower bound of the
#: time each loop did not poll (contract.known_bugs ``poll_stalled_past_interval``).
POLL_STALL = "poll-stall"
#: A fault of the run's own group consumers too: each closes (committing its offsets, as an
#: application shut down for a deploy) and a new consumer joins the group only when the
#: fault ends, resuming at the committed offsets. Targets are reader ids; the start event's
#: ``detail.stalled_since_ns`` says, per reader, when its close returned.
CONSUMER_DOWN = "consumer-down"

FAULTS: dict[str, FaultKind] = {f.kind: f for f in (
    FaultKind("kill", "kill -9 of a node's container; restarted at the end", (),
              closed_by="start", existing=True, css="f-kill", colour="#dc2626",
              label_colour="#991b1b"),
    FaultKind("stop", "clean stop (SIGTERM) of a node; restarted at the end", (),
              closed_by="start", existing=True, css="f-kill", colour="#dc2626",
              label_colour="#991b1b"),
    FaultKind("pause", "SIGSTOP (freezer) of a node: connections stay open, nothing answers", (),
              closed_by="resume", existing=True, css="f-pause", colour="#7c3aed",
              label_colour="#5b21b6"),
    FaultKind("partition", "network partition of a node (or a shape of nodes)",
              ("shape", "peer"), closed_by="heal", existing=True, css="f-part",
              colour="#ea580c", label_colour="#9a3412"),
    FaultKind("slow", "slow or lossy links of a node (delay, jitter, loss, rate)",
              ("delay_ms", "jitter_ms", "loss", "rate_kbit"), closed_by="heal",
              existing=True, css="f-slow", colour="#0284c7", label_colour="#075985"),
    FaultKind("hold", "requests the clients already have in flight to a node held for a "
              "window (new connections served at once), so a retry overtakes its stale "
              "original", ("hold_s",), random=False, css="f-slow",
              colour="#0284c7", label_colour="#075985"),
    FaultKind(POWER_LOSS, "kill -9 that also loses the node's unflushed page cache", (),
              closed_by="start", existing=True, css="f-power", colour="#111827",
              label_colour="#111827"),
    FaultKind("cpu-throttle", "a node starved of CPU (a cgroup quota, e.g. 5 % of one core): "
              "alive and connected but slow, like a noisy neighbour or a GC-bound JVM",
              ("share",), css="f-cpu", colour="#65a30d",
              label_colour="#3f6212"),
    FaultKind("voter-partition", "a partition of the KRaft controller quorum (3+ dedicated "
              "controllers): the active controller cut from its voters, a minority or a "
              "majority of the voters cut from every node, or the brokers (all, or one) "
              "cut from the controllers", ("shape",), closed_by="heal",
              css="f-quorum", colour="#b45309", label_colour="#78350f"),
    # Not drawn at random (its targets are consumers, the random nemesis aims at nodes);
    # "existing": it touches no node, only our own consumer processes.
    FaultKind(POLL_STALL, "the poll loop of the run's group consumer(s) stopped (no "
              "consume() calls) while the client's background threads keep heartbeating: "
              "max.poll.interval.ms expires, the session does not", (), random=False,
              existing=True, css="f-stall", colour="#db2777", label_colour="#9d174d"),
    FaultKind(CONSUMER_DOWN, "the run's group consumer(s) closed, committing their offsets, "
              "and a new consumer started in the same group when the fault ends: an "
              "application down for a while", (), random=False, existing=True,
              css="f-stall", colour="#db2777", label_colour="#9d174d"),
)}

#: Fault kinds in registry order (``--faults`` names).
FAULT_KINDS: tuple[str, ...] = tuple(FAULTS)
#: The kinds a run may start on a cluster it did not start.
EXISTING_CLUSTER_FAULTS: tuple[str, ...] = tuple(k for k, f in FAULTS.items() if f.existing)
#: The kinds the random nemesis may draw.
RANDOM_FAULT_KINDS: tuple[str, ...] = tuple(k for k, f in FAULTS.items() if f.random)
#: Instant kind that ends a window -> the fault kinds it ends.
CLOSERS: dict[str, tuple[str, ...]] = {}
for _f in FAULTS.values():
    if _f.closed_by:
        CLOSERS[_f.closed_by] = (*CLOSERS.get(_f.closed_by, ()), _f.kind)
del _f

#: How the report draws a kind the registry does not know.
OTHER = FaultKind("other", "a fault kind this registry does not know", random=False)
OTHER_CSS = OTHER.css


def fault_css(kind: str) -> str:
    """The report's CSS class of a fault kind's windows and markers."""
    f = FAULTS.get(kind)
    return f.css if f else OTHER_CSS


def fault_css_rules() -> str:
    """The report's CSS for every fault class (windows, legend swatches, band labels)."""
    rules: dict[str, str] = {}
    for f in (*FAULTS.values(), OTHER):
        rules.setdefault(f.css, (
            f"svg .{f.css} rect, svg .legend.{f.css} rect {{ fill: {f.colour}; }} "
            f"svg .{f.css} .band-label {{ fill: {f.label_colour}; }}"))
    return "\n".join(rules.values()) + "\n"
