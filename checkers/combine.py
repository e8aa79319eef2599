"""One interface for every check, and how their results combine (after Jepsen's
``checker/compose``): validity merges as false beats unknown beats true, unknown reasons
concatenate in check order, anomaly entries and stats entries are united by key.

A check is a small object with a ``name`` and ``run(ctx) -> CheckResult``; ``ctx`` is the
one shared :class:`checkers.context.CheckContext`, so no check recomputes another's data.
Checks that find anomaly *rows* return them lazily in ``rows``: every check's rows are
collected together in one pass (``ctx.findings()``), never one Spark job per check.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from .context import CheckContext

Validity = bool | str  # True, False or "unknown" (results.json's ``valid``)
UNKNOWN = "unknown"


def merge_valid(a: Validity, b: Validity) -> Validity:
    """false beats unknown beats true."""
    if a is False or b is False:
        return False
    if a == UNKNOWN or b == UNKNOWN:
        return UNKNOWN
    return True


@dataclass
class CheckResult:
    """What one check found.

    ``anomalies``: kind -> results.json anomaly entry (count, allowed, why, examples …);
    ``unknown``: reasons the verdict cannot be proved; ``stats``: results.json stats entries;
    ``extra``: other top-level results.json keys (``mechanism``, ``timeseries``);
    ``rows``: lazy anomaly-row frames (checkers/rows.py shape) for the shared collection.
    """

    anomalies: dict[str, dict[str, Any]] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    rows: list[DataFrame] = field(default_factory=list)
    #: Reasons the run is invalid that are not anomaly kinds (the pipeline check's).
    violations: list[str] = field(default_factory=list)

    @property
    def valid(self) -> Validity:
        """false when one of its anomalies is forbidden or it names a violation; unknown
        with reasons; else true."""
        if self.violations or any(a["count"] > 0 and not a["allowed"]
                                  for a in self.anomalies.values()):
            return False
        return UNKNOWN if self.unknown else True


class Check(Protocol):
    """One check: a name (its phase in results.checker.phases) and ``run``."""

    name: str

    def run(self, ctx: CheckContext) -> CheckResult:
        """Look at the shared context and report what this check found."""
        ...


@dataclass
class Combined:
    """The checks' results united: merged validity, entries and reasons."""

    valid: Validity = True
    anomalies: dict[str, dict[str, Any]] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)

    def add(self, result: CheckResult) -> None:
        """Unite one more check's result into this one."""
        self.valid = merge_valid(self.valid, result.valid)
        for kind, entry in result.anomalies.items():
            if kind in self.anomalies:
                raise ValueError(f"two checks report the anomaly kind {kind!r}")
            self.anomalies[kind] = entry
        self.unknown.extend(result.unknown)
        self.violations.extend(result.violations)
        self.stats.update(result.stats)
        self.extra.update(result.extra)


def combine(results: Iterable[CheckResult]) -> Combined:
    """All results united, in order."""
    out = Combined()
    for r in results:
        out.add(r)
    return out
