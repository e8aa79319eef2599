"""Assertions on results.json that several real-cluster tests share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contract.known_bugs import EPOCH_BUMP_RESEND


def assert_only_accepted_bug(res: Mapping[str, Any], kinds: tuple[str, ...] = (
        "duplicate", "reorder"), bug: str = EPOCH_BUMP_RESEND) -> None:
    """Every record of ``kinds`` is explained by the accepted known bug ``bug`` and named
    with it: the only way such records may leave a verdict valid. A count of 0 passes, and
    then says nothing more than that the kind was not seen."""
    assert bug in res["accepted_known"], res["accepted_known"]
    for kind in kinds:
        entry = res["anomalies"][kind]
        n = entry["count"]
        assert entry.get("known_bugs", {}).get(bug, 0) == n, (kind, entry)
        assert entry.get("accepted", 0) == n, (kind, entry)
        assert n == 0 or entry["allowed"], (kind, entry)
        for e in entry["examples"]:
            tag = e.get("known_bug") or {}
            assert tag.get("id") == bug and tag.get("accepted"), (kind, e)
