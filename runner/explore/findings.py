"""What makes a run a finding, and whether another run reproduces it: pure functions of
results.json.

A run's *violations* are what keeps its verdict from VALID: each anomaly kind its guarantee
model forbids that it found (with the count of records neither excused nor accepted), each
expectation it stated and missed, and ``unknown`` (the run could not tell). Explore runs
accept every known bug, so a known bug's own records never make a finding there. A run
reproduces a finding when it shows at least one of the finding's violations again (counts
vary with timing; the tally shows them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

UNKNOWN = "unknown"
#: The prefix of a missed expectation's violation name.
EXPECTATION = "expectation: "
#: What a missed expectation is called when no detail says which (as contract.exit_codes
#: words it).
UNNAMED_EXPECTATION = "the expectations (not met)"
#: The counts of an anomaly besides ``count`` (which contract.results.shape_problem checks)
#: that a violation's records are reckoned from.
COUNT_KEYS = ("excused", "accepted")


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def reading_problem(results: Mapping[str, Any]) -> str | None:
    """What :func:`violations` could not read in a results.json that passed
    ``contract.results.shape_problem`` (one phrase), or None."""
    for kind, a in (results.get("anomalies") or {}).items():
        for key in COUNT_KEYS:
            if isinstance(a, Mapping) and key in a and not _is_count(a[key]):
                return f"anomalies.{kind}.{key} is {a[key]!r}"
    details = (results.get("expectations") or {}).get("details", [])
    if not isinstance(details, list) or not all(isinstance(d, Mapping) for d in details):
        return "expectations.details is not a list of objects"
    return None


def violations(results: Mapping[str, Any] | None) -> dict[str, int]:
    """Violation -> how many records (a missed expectation: the count it got, or 1; unknown:
    1); {} for VALID."""
    if results is None:
        return {UNKNOWN: 1}
    out: dict[str, int] = {}
    for kind, a in sorted((results.get("anomalies") or {}).items()):
        if not isinstance(a, Mapping) or a.get("allowed", True) or not a.get("count"):
            continue
        rest = int(a["count"]) - int(a.get("excused", 0)) - int(a.get("accepted", 0))
        out[kind] = max(rest, 1)
    out.update(_missed(results.get("expectations")))
    if results.get("valid") not in (True, False):
        out[UNKNOWN] = 1
    return out


def _missed(block: Any) -> dict[str, int]:
    """Each missed expectation (results.json ``expectations.details``: ``what``, ``actual``)
    -> the count it got (lost ==0 got 901), else 1."""
    if not isinstance(block, Mapping) or block.get("met") is not False:
        return {}
    details = block.get("details")
    missed = [d for d in (details if isinstance(details, list) else [])
              if isinstance(d, Mapping) and not d.get("met")]
    if not missed:
        return {EXPECTATION + UNNAMED_EXPECTATION: 1}
    return {EXPECTATION + str(d.get("what")):
            d["actual"] if _is_count(d.get("actual")) and d["actual"] > 0 else 1
            for d in missed}


def reproduces(finding: Sequence[str], results: Mapping[str, Any] | None) -> bool:
    """Whether a run's results show one of ``finding``'s violations (an empty finding: the
    run is VALID as well)."""
    seen = violations(results)
    if not finding:
        return not seen
    return any(v in seen for v in finding)


def tally(finding: Sequence[str], runs: Sequence[Mapping[str, Any] | None]) -> str:
    """``reproduced 3/10: lost 12, 0, 7, …`` (one count list per violation of the finding)."""
    hits = sum(reproduces(finding, r) for r in runs)
    head = f"reproduced {hits}/{len(runs)}" if hits else f"not reproduced (0/{len(runs)})"
    if not finding:
        return f"{head}: valid"
    parts = []
    for v in finding:
        counts = [violations(r).get(v, 0) for r in runs]
        parts.append(f"{v} {', '.join(str(n) for n in counts)}")
    return f"{head}: {'; '.join(parts)}"


def label(finding: Sequence[str]) -> str:
    """A finding's name in one line (``valid`` for none)."""
    return ", ".join(finding) if finding else "valid"
