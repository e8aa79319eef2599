"""Two owners at once: what a run's history shows of group members holding the same partition.

    python docs/findings/ownership_overlap.py RUN_DIR [RUN_DIR ...]

For docs/findings/coordinator-cut-from-controllers.md (issue 46, class 3). Reads
history/events.jsonl (the subscribe-mode readers' ``rebalance`` events, the fault window) and
history/reads.parquet, and prints per run:

- ``assigned overlap``: pairs of readers whose assignments (from ``assigned`` to the next
  ``revoked``/``lost``/``restart`` of that partition, or the reader's last event) of the same
  partition overlap in time, with the longest overlap;
- ``reads outside the reader's assignment``: reads of a partition in a poll outside every
  span (in the reader's poll numbers) its rebalance events gave it that partition — a
  reader still fetching what it gave up, or fetching before it was given it; with the
  assigned overlap, the two ways two owners could show;
- ``dup offsets``: offsets of a partition read by two or more readers (a re-read after a
  hand-off is at-least-once; one read by both within the same second is the overlap above).

Not a checker rule: a measured fact for the write-up (the checker has no anomaly kind for
overlapping ownership).
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import pyarrow.dataset as ds

NS = 1_000_000_000


def events(run: Path) -> list[dict]:
    out = []
    for line in (run / "history" / "events.jsonl").read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a torn last line
    return sorted(out, key=lambda e: e["ts_ns"])


def assignments(evs: list[dict]) -> dict[str, list[tuple[str, int, int, str]]]:
    """partition -> [(reader, from_ns, to_ns, how it ended)] from the rebalance events
    (additive: an eager assignment's revoke lists every partition, an incremental one only
    those it moves)."""
    end_ns = max(e["ts_ns"] for e in evs)
    held: dict[tuple[str, str], int] = {}
    spans: dict[str, list[tuple[str, int, int, str]]] = defaultdict(list)
    for e in evs:
        if e["kind"] != "rebalance":
            continue
        d = e["detail"]
        reader, what = d["reader"], d["what"]
        for p in d["partitions"]:
            key = (reader, p)
            if what == "assigned":
                held.setdefault(key, e["ts_ns"])
            elif key in held:
                spans[p].append((reader, held.pop(key), e["ts_ns"], what))
        if what == "restart":
            for key in [k for k in held if k[0] == reader]:
                spans[key[1]].append((reader, held.pop(key), e["ts_ns"], what))
    for (reader, p), since in held.items():
        spans[p].append((reader, since, end_ns, "end"))
    return spans


def assigned_overlaps(spans: dict[str, list[tuple[str, int, int, str]]]) -> list[tuple]:
    out = []
    for p, ss in spans.items():
        for i, (r1, a1, b1, _) in enumerate(ss):
            for r2, a2, b2, _ in ss[i + 1:]:
                lo, hi = max(a1, a2), min(b1, b2)
                if r1 != r2 and hi > lo:
                    out.append((p, r1, r2, lo, hi))
    return out


def handoffs(spans: dict[str, list[tuple[str, int, int, str]]]) -> list[tuple]:
    """(gap_ns, partition, from, to, at_ns) of each move of a partition to another reader
    after the last owner *lost* it (its client gave it up on its own, e.g. its session timed
    out, rather than being told to revoke it): how long after that the next owner's
    assignment began (negative: an overlap)."""
    out = []
    for p, ss in spans.items():
        ss = sorted(ss, key=lambda s: s[1])
        out += [(b[1] - a[2], p, a[0], b[0], a[2]) for a, b in zip(ss, ss[1:], strict=False)
                if a[0] != b[0] and a[3] == "lost"]
    return out


def poll_spans(evs: list[dict]) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """(reader, partition) -> [(first poll, last poll)] it held the partition, in the
    reader's own poll numbers (a rebalance callback runs inside a consume() call: the reads
    that call returned count as inside on both ends)."""
    held: dict[tuple[str, int], int] = {}
    out: dict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)
    for e in evs:
        if e["kind"] != "rebalance":
            continue
        d = e["detail"]
        parts = [int(x.split(":")[1]) for x in d["partitions"]]
        if d["what"] == "restart":
            parts = [p for (r, p) in held if r == d["reader"]]
        for p in parts:
            key = (d["reader"], p)
            if d["what"] == "assigned":
                held.setdefault(key, d["poll"])
            elif key in held:
                out[key].append((held.pop(key), d["poll"]))
    for key, since in held.items():
        out[key].append((since, 1 << 62))
    return out


def main(runs: list[str]) -> None:
    for arg in runs:
        run = Path(arg)
        evs = events(run)
        cut = [e for e in evs if e["kind"] == "voter-partition"]
        t0 = next((e["ts_ns"] for e in cut if e["phase"] == "start"), evs[0]["ts_ns"])
        t1 = next((e["ts_ns"] for e in cut if e["phase"] == "end"), t0)
        print(f"== {run}  cut {[e['targets'] for e in cut[:1]]} "
              f"{(t1 - t0) / NS:.1f} s")
        for e in evs:
            if e["kind"] == "rebalance":
                d = e["detail"]
                print(f"   {(e['ts_ns'] - t0) / NS:+7.1f}s {d['reader']} {d['what']:8} "
                      f"{','.join(x.split(':')[1] for x in d['partitions'])}")
        ov = assigned_overlaps(assignments(evs))
        longest = max(((hi - lo) / NS for *_, lo, hi in ov), default=0.0)
        print(f"   assigned overlap: {len(ov)} pair(s), longest {longest:.1f} s")
        for p, r1, r2, lo, hi in ov:
            print(f"     {p} {r1}+{r2} from {(lo - t0) / NS:+.1f}s to {(hi - t0) / NS:+.1f}s")
        gaps = handoffs(assignments(evs))
        if gaps:
            g, p, r1, r2, at = min(gaps)
            print(f"   closest hand-off after a loss: {p} {r1} -> {r2} {g / NS:.2f} s after "
                  f"{r1} lost it "
                  f"(at {(at - t0) / NS:+.1f}s)")
        else:
            print("   closest hand-off after a loss: none (no partition was lost and moved)")
        reads = ds.dataset(run / "history" / "reads.parquet").to_table(
            columns=["reader", "mode", "poll", "read_ns", "partition", "offset"]).to_pylist()
        reads = [r for r in reads if r["mode"] == "subscribe"]
        spans = poll_spans(evs)
        by_offset: dict[tuple[int, int], dict[str, int]] = defaultdict(dict)
        outside: list[dict] = []
        for r in reads:
            by_offset[(r["partition"], r["offset"])].setdefault(r["reader"], r["read_ns"])
            if not any(a <= r["poll"] <= b for a, b in spans[(r["reader"], r["partition"])]):
                outside.append(r)
        print(f"   reads outside the reader's assignment: {len(outside)}")
        for r in outside[:5]:
            print(f"     {r['reader']} p{r['partition']} offset {r['offset']} poll {r['poll']} "
                  f"at {(r['read_ns'] - t0) / NS:+.1f}s")
        dups = {k: v for k, v in by_offset.items() if len(v) > 1}
        near = [k for k, v in dups.items() if (max(v.values()) - min(v.values())) < NS]
        print(f"   dup offsets: {len(dups)} read by 2+ readers, {len(near)} of them within 1 s")


if __name__ == "__main__":
    main(sys.argv[1:])
