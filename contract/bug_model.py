"""What one known bug is: the entry type of the registry (contract/known_bugs.py) and the
version comparison its affected range uses. Kept apart from the registry, which is data and
long; ``contract.known_bugs`` re-exports every name here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

OPEN = "open"
FIXED = "fixed"


def version_tuple(text: str | None) -> tuple[int, ...]:
    """``"2.13.2"`` -> ``(2, 13, 2)``; leading digits of each dotted part; () when unknown."""
    out: list[int] = []
    for part in (text or "").split("."):
        digits = ""
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


@dataclass(frozen=True)
class KnownBug:
    """One known bug: where it is tracked, what it affects, which records it explains."""

    id: str  # "<component>#<issue>" or the KIP / JIRA name
    title: str
    link: str
    status: str  # OPEN or FIXED
    component: str  # "librdkafka" or "kafka": the run.json ``versions`` key compared
    affected_from: str | None  # first affected version; None: not known / all before
    fixed_in: str | None  # first version with the fix; None: not fixed
    kinds: tuple[str, ...]  # the anomaly kinds it explains
    facts: frozenset[str]  # the condition: every fact must hold for the record
    note: str = ""

    def affects(self, version: str | None) -> bool:
        """Whether ``version`` of the component is affected (unknown: cannot be ruled out)."""
        v = version_tuple(version)
        if not v:
            return True
        if self.affected_from and v < version_tuple(self.affected_from):
            return False
        return not (self.fixed_in and v >= version_tuple(self.fixed_in))

    def explains(self, kind: str, facts: Mapping[str, bool]) -> bool:
        """Whether this entry explains a record of ``kind`` with these ``facts``."""
        return kind in self.kinds and all(facts.get(f, False) for f in self.facts)

    def tag(self) -> dict[str, str]:
        """The ``known_bug`` object of a results.json example."""
        return {"id": self.id, "link": self.link, "status": self.status}


__all__ = ["FIXED", "OPEN", "KnownBug", "version_tuple"]
