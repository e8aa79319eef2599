"""Two owners at once: what a run's history shows of group members holding the same partition.

    python docs/findings/ownership_overlap.py RUN_DIR [RUN_DIR ...]

For docs/findings/coordinator-cut-from-controllers.md (issue 46, class 3). Reads
history/events.jsonl (the subscribe-mode readers' ``rebalance`` events, the fault window) and
history/reads.parquet, and prints per run:

- ``assigned overlap``: pairs of readers whose assignments (from ``assigned`` to the next
  ``revoked``/``lost``/``restart`` of that partition, or the reader's last event) of the same
  partition overlap in time, with the longest overlap;
- ``reading at once``: a partition's reads grouped per reader into episodes (no pause over
  3 s); two readers' episodes of one partition that overlap in time are two readers
  fetching it at once, whatever their assignments say (a clean hand-off ends one episode
  before the next begins);
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


def assignments(evs: list[dict]) -> dict[str, list[tuple[str, int, int]]]:
    """partition -> [(reader, from_ns, to_ns)] from the rebalance events (additive: an eager
    assignment's revoke lists every partition, an incremental one only those it moves)."""
    end_ns = max(e["ts_ns"] for e in evs)
    held: dict[tuple[str, str], int] = {}
    spans: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
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
                spans[p].append((reader, held.pop(key), e["ts_ns"]))
        if what == "restart":
            for key in [k for k in held if k[0] == reader]:
                spans[key[1]].append((reader, held.pop(key), e["ts_ns"]))
    for (reader, p), since in held.items():
        spans[p].append((reader, since, end_ns))
    return spans


def assigned_overlaps(spans: dict[str, list[tuple[str, int, int]]]) -> list[tuple]:
    out = []
    for p, ss in spans.items():
        for i, (r1, a1, b1) in enumerate(ss):
            for r2, a2, b2 in ss[i + 1:]:
                lo, hi = max(a1, a2), min(b1, b2)
                if r1 != r2 and hi > lo:
                    out.append((p, r1, r2, lo, hi))
    return out


def episodes(reads: list[tuple[int, str]], gap_ns: int = 3 * NS) -> list[list]:
    """One partition's reads ``(read_ns, reader)`` as [reader, first_ns, last_ns] episodes:
    a reader's reads with no pause longer than ``gap_ns`` (the workload writes each partition
    many times a second, so an owner reads it every poll)."""
    out: list[list] = []
    last: dict[str, list] = {}
    for ns, reader in sorted(reads):
        ep = last.get(reader)
        if ep is not None and ns - ep[2] <= gap_ns:
            ep[2] = ns
        else:
            last[reader] = [reader, ns, ns]
            out.append(last[reader])
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
        reads = ds.dataset(run / "history" / "reads.parquet").to_table(
            columns=["reader", "mode", "read_ns", "partition", "offset"]).to_pylist()
        reads = [r for r in reads if r["mode"] == "subscribe"]
        by_part: dict[int, list[tuple[int, str]]] = defaultdict(list)
        by_offset: dict[tuple[int, int], dict[str, int]] = defaultdict(dict)
        for r in reads:
            by_part[r["partition"]].append((r["read_ns"], r["reader"]))
            by_offset[(r["partition"], r["offset"])].setdefault(r["reader"], r["read_ns"])
        both = []
        for p, rs in sorted(by_part.items()):
            eps = episodes(rs)
            both += [(p, x, y, max(x[1], y[1]), min(x[2], y[2]))
                     for i, x in enumerate(eps) for y in eps[i + 1:]
                     if x[0] != y[0] and max(x[1], y[1]) < min(x[2], y[2])]
        print(f"   reading at once: {len(both)} pair(s) of read episodes overlap")
        for p, x, y, lo, hi in both[:10]:
            print(f"     p{p}: {x[0]} and {y[0]} both from {(lo - t0) / NS:+.1f}s "
                  f"to {(hi - t0) / NS:+.1f}s")
        dups = {k: v for k, v in by_offset.items() if len(v) > 1}
        near = [k for k, v in dups.items() if (max(v.values()) - min(v.values())) < NS]
        print(f"   dup offsets: {len(dups)} read by 2+ readers, {len(near)} of them within 1 s")


if __name__ == "__main__":
    main(sys.argv[1:])
