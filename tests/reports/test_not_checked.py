"""A count the checker did not establish is shown as such: "divergence: not checked", with
the reason, never as a plain 0 (issue 11)."""

from __future__ import annotations

from reports.summary import anomaly_rows, verdict


def _results(divergence: dict) -> dict:  # type: ignore[type-arg]
    anomalies = {k: {"count": 0, "allowed": False, "examples": []}
                 for k in ("lost", "duplicate")}
    anomalies["divergence"] = {"count": 0, "allowed": False, "examples": [], **divergence}
    return {"valid": True, "anomalies": anomalies, "stats": {"writes": {"ok": 10}}}


def test_unchecked_divergence_is_not_a_zero() -> None:
    res = _results({"checked": False, "reason": "not checked"})
    rows = {r.kind: r for r in anomaly_rows(res)}
    assert rows["divergence"].status == "unchecked" and rows["divergence"].why == "not checked"
    assert rows["lost"].status == "none"
    assert "divergence: not checked" in verdict(res, list(rows.values())).notes


def test_failed_copy_names_its_reason_and_checked_is_plain() -> None:
    res = _results({"checked": False, "reason": "the copy of the replicas' data failed (2: x)"})
    row = next(r for r in anomaly_rows(res) if r.kind == "divergence")
    assert row.why == "not checked: the copy of the replicas' data failed (2: x)"
    done = _results({"checked": True})
    row = next(r for r in anomaly_rows(done) if r.kind == "divergence")
    assert row.status == "none" and not verdict(done, anomaly_rows(done)).notes


def test_a_producer_killed_in_its_call_is_named_beside_the_verdict() -> None:
    """A verdict that holds although a producer process was killed says so (results.json
    stats.killed_in_call), so a reader of the box alone learns it."""
    res = _results({"checked": True})
    killed = ("p0 (exit code -9) ended inside send_offsets_to_transaction(), entered with "
              "its rows written, which never returned")
    res["stats"]["killed_in_call"] = [killed]
    notes = verdict(res, anomaly_rows(res)).notes
    assert [n for n in notes if n.startswith(f"Judged although {killed}:")], notes
