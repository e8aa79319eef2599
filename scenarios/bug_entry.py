"""One known-bug catalogue entry (scenarios/bugs.py holds the entries): the two sides a
scenario is pinned to, and how a run of a side is judged, summed up and tallied.

On the affected side the bug's anomaly kind must be counted and at least one of its records
must be tagged with the entry's registry id (so the checker explains it by the bug's facts,
not by accident), with the verdict the entry states. On the fixed side that kind must be 0
(and the verdict valid).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from contract.known_bugs import BY_ID, KnownBug
from scenarios.base import Scenario

#: ``unaffected``: a release before the bug's first affected one (its registry entry's
#: ``affected_from``), listed in ``also`` only: a control for a bug nobody fixed yet, judged
#: as the fixed side (the kind must be 0). ``SIDES`` are the entry's own two.
Side = Literal["affected", "fixed", "unaffected"]
SIDES: tuple[Side, ...] = ("affected", "fixed")
NOT_ATTEMPTED = "not yet attempted"


def as_side(text: str | None) -> Side:
    """``"fixed"`` -> "fixed", ``"unaffected"`` -> "unaffected"; anything else (None
    included) -> "affected"."""
    return "fixed" if text == "fixed" else "unaffected" if text == "unaffected" else "affected"


@dataclass(frozen=True)
class Pick:
    """One side of an entry on one of that side's versions: what a bug run pins."""

    side: Side
    version: str


# ---------------------------------------------------------------- the catalogue
@dataclass(frozen=True)
class BugEntry:
    """One runnable (or not yet runnable) known bug.

    ``axis`` is what the two sides vary: ``kafka_version``, ``client_version``
    (confluent-kafka) or ``client`` (the client library, ``KIND[:VERSION]``). ``kind`` is
    the anomaly kind the bug produces; ``affected_valid`` the verdict the affected side must
    have (False: INVALID; True when Kafka's documented guarantee excuses the records and
    only the tag names the bug). ``status``: "reproduces
    (N/M runs)", "not reproduced: <evidence>" or NOT_ATTEMPTED. ``fixed`` is "none" for an
    open bug: only its affected side runs. ``timing``: the bug shows in some runs only (its
    rate is the point); a run without it is no failure of the nightly, one with the kind
    untagged or the wrong verdict is (``run_misses``).
    """

    id: str
    axis: Literal["kafka_version", "client_version", "client"]
    affected: str
    fixed: str
    kind: str
    status: str
    scenario: Scenario | None = None
    affected_valid: bool = False
    overrides: dict[str, Any] = field(default_factory=dict)
    title: str = ""  # for a bug the registry does not hold (yet)
    timing: bool = False
    #: Further versions on which a side holds, as ``(side, version)``: run by naming them
    #: (``--on 4.0.2``); the nightly and ``--on both`` run ``affected`` and ``fixed`` only.
    #: An ``unaffected`` version (before the registry's ``affected_from``) is a control
    #: that an open bug can list too.
    also: tuple[tuple[Side, str], ...] = ()

    @property
    def bug(self) -> KnownBug | None:
        return BY_ID.get(self.id)

    @property
    def runnable(self) -> bool:
        return self.scenario is not None

    @property
    def sides(self) -> tuple[Side, ...]:
        """The sides that can run: both, or the affected one of a bug nobody fixed."""
        return SIDES if self.fixed != "none" else ("affected",)

    def version(self, side: Side) -> str:
        """The side's own version (an ``unaffected`` side has none: its first in ``also``)."""
        if side == "unaffected":
            return self.versions(side)[0]
        return self.affected if side == "affected" else self.fixed

    def versions(self, side: Side) -> tuple[str, ...]:
        """The side's version, then the further ones (``also``); an ``unaffected`` side's
        are its ``also`` ones only."""
        further = tuple(v for s, v in self.also if s == side)
        return further if side == "unaffected" else (self.version(side), *further)

    def picks(self, on: str) -> list[Pick]:
        """What ``--on`` names: ``affected``, ``fixed``, ``both`` (the sides' own versions),
        or versions the entry lists, comma-separated (``4.0.2,4.1.2``); ValueError with a
        one-line reason for anything else."""
        if on == "both":
            return [Pick(side, self.version(side)) for side in self.sides]
        if on in SIDES:
            side = as_side(on)
            if side not in self.sides:
                raise ValueError(f"bug {self.id} is not fixed: it runs on its affected side "
                                 "only")
            return [Pick(side, self.version(side))]
        listed = {v: side for side in (*self.sides, "unaffected")
                  for v in self.versions(side)}
        picks = []
        for version in on.split(","):
            if version not in listed:
                raise ValueError(f"--on {on!r}: say affected, fixed, both or versions of "
                                 f"{self.id} ({', '.join(listed)})")
            picks.append(Pick(listed[version], version))
        return picks

    def pin(self, side: Side, version: str | None = None) -> dict[str, Any]:
        """The run options of one side: the entry's overrides and its version (or
        ``version``, one of the side's ``versions``)."""
        return {**self.overrides, self.axis: version or self.version(side)}

    def label(self, side: Side, version: str | None = None) -> str:
        version = version or self.version(side)
        if self.axis == "client":
            return version.replace(":", " ")
        what = "Kafka" if self.axis == "kafka_version" else "confluent-kafka"
        return f"{what} {version}"

    def labels(self, side: Side) -> str:
        """All the side's versions: ``Kafka 3.9.1, 4.0.2``."""
        return ", ".join([self.label(side), *self.versions(side)[1:]])


def judge(entry: BugEntry, side: Side, results: dict[str, Any] | None) -> list[str]:
    """Why a run of ``side`` does not show what the entry promises (empty: it does)."""
    if results is None:
        return ["no results"]
    anomaly = (results.get("anomalies") or {}).get(entry.kind) or {}
    count = int(anomaly.get("count", 0))
    tagged = int((anomaly.get("known_bugs") or {}).get(entry.id, 0))
    valid = results.get("valid")
    misses: list[str] = []
    if side == "affected":
        if count == 0:
            misses.append(f"{entry.kind} == 0 (expected > 0)")
        elif tagged == 0:
            misses.append(f"{entry.kind} = {count} but none tagged {entry.id}")
        if valid is not entry.affected_valid:
            misses.append(f"verdict {valid} (expected {entry.affected_valid})")
    else:
        if count:
            misses.append(f"{entry.kind} = {count} (expected 0 on the {side} version)")
        if tagged:
            misses.append(f"{tagged} records tagged {entry.id} on the {side} version")
        if valid is not True:
            misses.append(f"verdict {valid} (expected True)")
    return misses


def run_misses(entry: BugEntry, side: Side, results: dict[str, Any] | None) -> list[str]:
    """Why a run of ``side`` (in the nightly, or repeated for a rate) contradicts the entry.
    As ``judge``, except that a timing-dependent bug's affected run need not show it: it must
    only tag every record of the kind it counts and have the stated verdict."""
    if not (entry.timing and side == "affected") or results is None:
        return judge(entry, side, results)
    anomaly = (results.get("anomalies") or {}).get(entry.kind) or {}
    count = int(anomaly.get("count", 0))
    tagged = int((anomaly.get("known_bugs") or {}).get(entry.id, 0))
    misses = []
    if tagged != count:
        misses.append(f"{entry.kind} = {count} but {tagged} tagged {entry.id}")
    if results.get("valid") is not entry.affected_valid:
        misses.append(f"verdict {results.get('valid')} (expected {entry.affected_valid})")
    return misses


def summary(entry: BugEntry, side: Side, results: dict[str, Any] | None,
            version: str | None = None) -> str:
    """One line: what the run showed for the entry (on ``version``: one of the side's)."""
    anomaly = ((results or {}).get("anomalies") or {}).get(entry.kind) or {}
    tagged = int((anomaly.get("known_bugs") or {}).get(entry.id, 0))
    misses = run_misses(entry, side, results)
    if misses:
        state = "NOT as expected: " + "; ".join(misses)
    elif judge(entry, side, results):  # a timing-dependent bug that stayed hidden
        state = "not shown by this run (timing-dependent: counts against its rate only)"
    else:
        state = "as expected"
    return (f"{entry.id} on {side} ({entry.label(side, version)}): {entry.kind} "
            f"{anomaly.get('count', '?')}, {tagged} tagged {entry.id}, valid "
            f"{(results or {}).get('valid')} — {state}")


def rate(entry: BugEntry, side: Side, runs: list[dict[str, Any] | None]
         ) -> tuple[int, int, list[str]]:
    """Over repeated runs of one side: how many showed what the entry promises (for a
    timing-dependent bug: how many showed the bug), how many ran, and the anomaly's count in
    each (``-``: the run has no results)."""
    counts = []
    for results in runs:
        anomaly = ((results or {}).get("anomalies") or {}).get(entry.kind)
        counts.append(str(anomaly.get("count", "?")) if anomaly else "-")
    return sum(not judge(entry, side, r) for r in runs), len(runs), counts


def tally(entry: BugEntry, side: Side, runs: list[dict[str, Any] | None],
          version: str | None = None) -> str:
    """One line over repeated runs of one side (:func:`rate`)."""
    hits, n, counts = rate(entry, side, runs)
    return (f"{entry.id} on {side} ({entry.label(side, version)}): {hits}/{n} runs as "
            f"expected; {entry.kind} per run: {', '.join(counts) or 'none'}")
