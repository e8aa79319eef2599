"""The verdict (valid true/false/"unknown"), scenario mechanisms and expectations
(docs/CONVENTIONS.md)."""

from __future__ import annotations

from typing import Any

from contract.conditions import ConditionError, parse_condition
from contract.events import SITUATION, Event
from contract.mechanisms import MECHANISMS

from .observations import PartitionHistory


def verdict(anomalies: dict[str, dict[str, Any]], unknown_reasons: list[str]) -> bool | str:
    """false when a forbidden anomaly occurred; "unknown" when facts are missing; else true."""
    if any(a["count"] > 0 and not a["allowed"] for a in anomalies.values()):
        return False
    if unknown_reasons:
        return "unknown"
    return True


def _stat(stats: dict[str, Any], path: str) -> Any:
    value: Any = stats
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _met(cond: Any, actual: int, checked: bool = True) -> tuple[bool, str | None]:
    """Whether a count meets a condition, and why not when it cannot be read or proven.
    An unchecked count is only a lower bound: "== 0" proves nothing about it."""
    try:
        c = parse_condition(cond)
    except ConditionError:
        return False, "cannot parse condition"
    if not checked:
        return c.holds_above(actual), None
    return c.holds(actual), None


def expectations(expect: dict[str, Any], valid: bool | str,
                 anomalies: dict[str, dict[str, Any]],
                 stats: dict[str, Any] | None = None) -> dict[str, Any]:
    """Compare a scenario's ``expect`` with the results. ``expect["stats"]`` holds
    conditions on numbers of results.json's stats by dotted path
    (``{"transactions.committed": ">0"}``); an absent number is not met."""
    details: list[dict[str, Any]] = []
    for path, cond in (expect.get("stats") or {}).items():
        value = _stat(stats or {}, str(path))
        ok = _met(cond, int(value))[0] if isinstance(value, int | float) else False
        details.append({"what": f"stats.{path} {cond}", "actual": value, "met": ok})
    if "valid" in expect:
        details.append({"what": f"valid == {expect['valid']!r}", "actual": valid,
                        "met": valid == expect["valid"]})
    for kind, cond in (expect.get("anomalies") or {}).items():
        entry = anomalies.get(kind, {})
        actual = entry.get("count", 0)
        checked = entry.get("checked") is not False
        met, error = _met(cond, actual, checked)
        if not met and error is None and not checked and _met(cond, actual)[0]:
            error = f"{kind} was not checked: {entry.get('reason', 'no reason')}"
        details.append({"what": f"{kind} {cond}", "actual": actual, "met": met,
                        **({"error": error} if error else {})})
    return {"met": all(d["met"] for d in details), "details": details}


def _fault(mech: dict[str, Any], events: list[Event], since: int) -> tuple[bool, str]:
    kind = str(mech.get("fault", ""))
    for e in events:
        if e.kind == kind and e.phase in ("start", "instant") and e.ts_ns > since:
            return True, f"{kind} on {list(e.targets)} at ts_ns={e.ts_ns}"
    if since == 2**63:
        return False, "no situation event to look after"
    after = f" after the situation at ts_ns={since}" if since >= 0 else ""
    return False, f"no {kind!r} fault event in events.jsonl{after}"


def mechanism(mechs: list[dict[str, Any]], events: list[Event],
              parts: PartitionHistory) -> dict[str, Any]:
    """Which of a scenario's mechanisms the history shows, with evidence. A mechanism with
    ``"after": "situation"`` counts only what was observed after the script's last verified
    situation: a consequence of it, not of an earlier attempt or of the machine's load."""
    changes = sorted(parts.all, key=lambda c: c.ts_ns)
    situation = max((e.ts_ns for e in events if e.kind == SITUATION), default=None)
    details = []
    for m in mechs:
        kind = str(m.get("kind", ""))
        seen, evidence = False, "not seen in observations.parquet"
        since = -1  # changes are followed from the start; only those after ``since`` count
        if m.get("after") == SITUATION:
            since = situation if situation is not None else 2**63  # none: nothing counts
            evidence = ("no situation event to look after" if situation is None else
                        f"not seen in observations.parquet after the situation at "
                        f"ts_ns={situation}")
        if kind not in MECHANISMS:
            evidence = f"unknown mechanism kind {kind!r}"
        elif kind == "fault":
            seen, evidence = _fault(m, events, since)
        elif kind == "isr-shrunk-to":
            size = int(m.get("size", 1))
            for c in changes:
                if c.ts_ns > since and c.leader >= 0 and len(c.isr) <= size:
                    seen, evidence = True, (f"{c.topic}-{c.partition} ISR {list(c.isr)} "
                                            f"at ts_ns={c.ts_ns}")
                    break
        elif kind == "leader-changed":
            last_live: dict[str, int] = {}
            for c in changes:
                key = f"{c.topic}:{c.partition}"
                prev = last_live.get(key)
                if c.leader >= 0:
                    if prev is not None and prev != c.leader and c.ts_ns > since:
                        seen, evidence = True, (f"{c.topic}-{c.partition} leader {prev} -> "
                                                f"{c.leader} at ts_ns={c.ts_ns}")
                        break
                    last_live[key] = c.leader
        elif kind == "leader-epoch-increased":
            # Compare with the last *known* epoch: samples where the observer could not learn
            # the epoch (null) sit between known ones and must not hide a rise.
            last_epoch: dict[str, int] = {}
            for c in changes:
                key = f"{c.topic}:{c.partition}"
                if c.leader_epoch is None:
                    continue
                before = last_epoch.get(key)
                if before is not None and c.leader_epoch > before and c.ts_ns > since:
                    seen, evidence = True, (f"{c.topic}-{c.partition} epoch {before} -> "
                                            f"{c.leader_epoch} at ts_ns={c.ts_ns}")
                    break
                last_epoch[key] = c.leader_epoch
        elif kind == "offline":
            for c in changes:
                if c.ts_ns > since and c.leader < 0:
                    seen, evidence = True, f"{c.topic}-{c.partition} offline at ts_ns={c.ts_ns}"
                    break
        elif kind == "stale-leader-elected":
            for c in changes:
                if (c.ts_ns > since and c.leader >= 0 and c.prev_isr is not None
                        and c.leader != c.prev_leader
                        and c.leader not in c.prev_isr):
                    seen, evidence = True, (f"{c.topic}-{c.partition} leader {c.leader} elected,"
                                            f" last ISR {list(c.prev_isr)}, at ts_ns={c.ts_ns}")
                    break
        elif kind == "consumer-restart":
            # restart-mode consumers record each restart as a rebalance ``what: "restart"``
            want = int(m.get("count", 1))
            polls = [e for e in events if e.kind == "rebalance"
                     and e.detail.get("what") == "restart" and e.ts_ns > since]
            seen = len(polls) >= want
            evidence = (f"{len(polls)} consumer restart(s) in events.jsonl"
                        + ("" if seen else f", fewer than {want}"))
        details.append({"kind": kind, **{k: v for k, v in m.items() if k != "kind"},
                        "observed": seen, "evidence": evidence})
    return {"observed": all(d["observed"] for d in details), "details": details}
