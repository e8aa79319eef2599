"""The hung-call kind (contract.liveness.HUNG_CALL): one example per ``hung-call`` event the
run wrote while a client call blocked past its timeout plus the slack, and the known bugs a
hung send_offsets_to_transaction's own facts name (librdkafka#5456, #5511): its group's
coordinator taken down while it waited, its transaction's coordinator up."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contract.anomalies import LIVENESS_KINDS
from contract.events import hung_call_pairs
from contract.known_bugs import KnownBug
from contract.windows import FaultWindow, fault_windows

from .history import Event
from .known import tag_known

HUNG = LIVENESS_KINDS[2]


def hung_calls(events: list[Event]) -> list[dict[str, Any]]:
    """One example per hung call, with how long it blocked where the run saw it end."""
    out = []
    for e, end_event in hung_call_pairs(events):
        d = e.detail
        end = end_event.detail if end_event is not None else {}
        blocked, returned = end.get("blocked_s"), end.get("returned")
        timeout = d.get("timeout_s")
        how = ("still blocked when the run ended" if not end else
               f"returned after {blocked} s" if returned else
               f"never returned: the run stopped the client after {blocked} s")
        out.append({"client": d.get("client"), "call": d.get("call"), "timeout_s": timeout,
                    "since_ns": d.get("since_ns"), "seen_ns": e.ts_ns,
                    "blocked_s": blocked, "returned": returned,
                    **{k: d[k] for k in ("group", "transactional_id") if d.get(k)},
                    "summary": f"{d.get('client')}: {d.get('call')}() "
                            f"(timeout {'none' if timeout is None else f'{timeout} s'}) {how}"})
    return out


#: The faults that take a broker's process out of service (its group coordinator with it).
COORDINATOR_FAULTS = ("kill", "stop", "pause")


def coordinator_facts(call: dict[str, Any], windows: list[FaultWindow], session_timeout_s: float,
                      last_ns: int) -> dict[str, bool]:
    """``coordinator_down_in_call`` and ``coordinator_fenced_in_call`` of one hung call
    (contract/known_bugs.py): a send_offsets_to_transaction whose group's coordinator, as
    recorded at a kill, stop or pause fault's start, was that fault's target while the call
    waited (from its start to the end of its own timeout), while its transaction's
    coordinator (recorded there too) was up: no such fault in force then took it down, so
    the wait was for the group's coordinator, not for the transaction's. Fenced when the
    fault held the group's coordinator longer than the broker session timeout (an unended
    fault: until ``last_ns``)."""
    group, since = call.get("group"), call.get("since_ns")
    txn_id = call.get("transactional_id")
    if call.get("call") != "send_offsets_to_transaction" or not group or not txn_id \
            or since is None:
        return {}
    timeout = call.get("timeout_s")
    until = int(since) + int(float(timeout) * 1e9) if isinstance(timeout, int | float) \
        else int(call.get("seen_ns") or since)
    during = [w for w in windows if w.start_ns <= until
              and (w.end_ns is None or w.end_ns >= int(since))]
    down = fenced = txn_down = False
    txn_nodes: set[Any] = set()
    for w in during:
        if w.kind not in COORDINATOR_FAULTS:
            continue
        group_node = (w.detail.get("coordinators") or {}).get(group)
        txn_node = (w.detail.get("txn_coordinators") or {}).get(txn_id)
        txn_down = txn_down or txn_node is None  # unknown there: it may have waited there
        txn_nodes.add(txn_node)
        if group_node is None or group_node not in w.targets:
            continue
        down = True
        held_ns = (w.end_ns if w.end_ns is not None else last_ns) - w.start_ns
        fenced = fenced or held_ns > session_timeout_s * 1e9
    # any fault of any kind on the transaction's coordinator while the call waited (a
    # partition cutting it, a slowed or paused one) leaves the call's wait unexplained
    txn_down = txn_down or any(txn_nodes & set(w.targets) for w in during)
    down = down and not txn_down
    return {"coordinator_down_in_call": down, "coordinator_fenced_in_call": down and fenced}


#: A hung call's facts (:func:`coordinator_facts`) by its (client, since_ns).
CallFacts = dict[tuple[Any, Any], dict[str, bool]]


def tagged_hung_calls(events: list[Event], session_timeout_s: float,
                      known: Sequence[KnownBug]) -> tuple[list[dict[str, Any]], CallFacts]:
    """The hung calls, each carrying the known bug its own facts name (none: untagged),
    and those facts (a producer blocked in one carries them too: checkers/liveness.py)."""
    windows = fault_windows(events)
    last_ns = max((e.ts_ns for e in events), default=0)
    out = hung_calls(events)
    facts: CallFacts = {}
    for ex in out:
        own = coordinator_facts(ex, windows, session_timeout_s, last_ns)
        facts[(ex.get("client"), ex.get("since_ns"))] = own
        tag_known([ex], HUNG, own, known)
    return out, facts
