"""The pipeline check (checkers/pipeline.py) on literal histories: an upstream producer 0
writes input records to ``in``; the application's producer 1 writes outputs to ``out``, each
stamped with its source; the drain reads both topics."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.literal import History


def _pipeline(outputs: list[tuple[int, int | None]], inputs: int = 4,
              delivery: str = "exactly-once") -> History:
    """``outputs``: (output seq, source seq or None for no header), in log order."""
    h = History(topic="in")
    h.run["pipeline"] = {"input": "in", "output": "out", "delivery": delivery}
    for s in range(inputs):
        h.write(0, s, offset=s).drain(0, s, 0, s)
    for off, (seq, src) in enumerate(outputs):
        h.write(1, seq, offset=off, topic="out")
        h.drain(0, off, 1, seq, topic="out", src=(0, src) if src is not None else None)
    return h.drain_end(end_offsets={"in:0": inputs, "out:0": len(outputs)})


def _counts(r: dict[str, Any]) -> dict[str, int]:
    return r["pipeline"]["counts"]


def test_one_output_per_input_is_valid(check) -> None:  # type: ignore[no-untyped-def]
    r = check(_pipeline([(0, 0), (1, 1), (2, 2), (3, 3)]))
    assert r["pipeline"]["valid"] is True and r["valid"] is True
    assert _counts(r) == {"inputs": 4, "missing": 0, "duplicated": 0, "orphaned": 0,
                          "outputs": 4, "unsourced": 0}


def test_missing_duplicated_and_orphaned_are_named(check) -> None:  # type: ignore[no-untyped-def]
    # input 2 processed twice (outputs 2 and 4), input 3 never, output 5 from input 9
    r = check(_pipeline([(0, 0), (1, 1), (2, 2), (4, 2), (5, 9)]))
    p = r["pipeline"]
    assert p["valid"] is False and r["valid"] is False
    assert _counts(r) == {"inputs": 4, "missing": 1, "duplicated": 1, "orphaned": 1,
                          "outputs": 5, "unsourced": 0}
    assert [e["seq"] for e in p["examples"]["missing"]] == [3]
    dup = p["examples"]["duplicated"][0]
    assert dup["seq"] == 2 and [o["seq"] for o in dup["output_records"]] == [2, 4]
    assert [e["seq"] for e in p["examples"]["orphaned"]] == [9]
    assert sorted(p["violated"]) == ["duplicated", "missing", "orphaned"]
    assert any("pipeline" in v for v in r["violations"])


@pytest.mark.parametrize(("delivery", "valid"), [("at-least-once", True),
                                                  ("exactly-once", False)])
def test_duplicates_only_break_exactly_once(check, delivery: str, valid: bool) -> None:  # type: ignore[no-untyped-def]
    r = check(_pipeline([(0, 0), (1, 1), (2, 1), (3, 2), (4, 3)], delivery=delivery))
    assert _counts(r)["duplicated"] == 1 and _counts(r)["missing"] == 0
    assert r["pipeline"]["valid"] is valid and r["valid"] is valid


def test_unsourced_output_is_unknown(check) -> None:  # type: ignore[no-untyped-def]
    r = check(_pipeline([(0, 0), (1, 1), (2, 2), (3, 3), (4, None)]))
    assert _counts(r)["unsourced"] == 1
    assert r["pipeline"]["valid"] == "unknown" and r["valid"] == "unknown"
    assert any("kc-src" in u for u in r["unknown_reasons"])


def test_incomplete_drain_of_the_output_is_unknown(check) -> None:  # type: ignore[no-untyped-def]
    h = _pipeline([(0, 0), (1, 1), (2, 2)])
    h.events[-1]["detail"].update(complete=False, end_offsets={"in:0": 4, "out:0": 9})
    r = check(h)
    assert _counts(r)["missing"] == 1  # input 3: not provably missing, the drain stopped early
    assert r["pipeline"]["valid"] == "unknown" and r["pipeline"]["violated"] == []
    assert any("to their end" in u for u in r["unknown_reasons"])


def test_report_shows_the_pipeline_and_why_it_is_invalid(spark: object, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from checkers import check_run
    from reports import render_run

    run = _pipeline([(0, 0), (1, 1), (2, 2), (4, 2), (5, 3)]).save(tmp_path / "run")
    check_run(run)
    html = render_run(run).read_text()
    assert "Pipeline in → out (exactly-once): INVALID" in html
    assert "duplicated: 1 (forbidden)" in html and "missing: 0<" in html
    assert "pipeline (exactly-once): 1 duplicated" in html  # the verdict's sentence
    assert "source 0|2 (input 0:2) → 0:2 (1|2), 0:3 (1|4)" in html
