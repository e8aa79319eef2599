"""The single-node baseline for the checker benchmark: the same anomaly definitions
(checkers/README.md) in DuckDB SQL, counts only, on the same run directory.

It reads run.json for nothing: the benchmark's runs use the defaults it assumes (every
reader read_committed, the drain complete).
"""

from __future__ import annotations

import json
import os
import sys
import time

import duckdb

SQL = """
CREATE TEMP TABLE wi AS
SELECT producer, seq,
       max(CASE outcome WHEN 'ok' THEN 2 WHEN 'info' THEN 1 WHEN 'fail' THEN 0 END) AS rank,
       max(topic) AS topic, max("partition") AS part, max("offset") AS off,
       max(txn_outcome) AS txn, count(*) AS nw, min(invoke_ns) AS inv
FROM w WHERE producer IS NOT NULL AND seq IS NOT NULL GROUP BY producer, seq;

CREATE TEMP TABLE rpos AS
SELECT producer, seq, topic, "partition" AS part, "offset" AS off, count(*) AS n,
       min(read_ns) AS rns, max(CASE WHEN reader = 'drain' THEN 1 ELSE 0 END) AS dr
FROM r WHERE valid AND producer IS NOT NULL AND seq IS NOT NULL
GROUP BY producer, seq, topic, "partition", "offset";

CREATE TEMP TABLE ri AS
SELECT producer, seq, count(*) AS n_pos, sum(n) AS n_r, min(rns) AS rns
FROM rpos GROUP BY producer, seq;

CREATE TEMP TABLE home AS
SELECT p.producer, p.seq, max(CASE WHEN p.off = wi.off THEN 1 ELSE 0 END) AS at_acked,
       min(CASE WHEN p.dr = 1 THEN p.off END) AS stored  -- where the (complete) drain read it
FROM rpos p JOIN wi ON p.producer = wi.producer AND p.seq = wi.seq
 AND p.topic = wi.topic AND p.part = wi.part
GROUP BY p.producer, p.seq;

CREATE TEMP TABLE ident AS
SELECT coalesce(wi.producer, ri.producer) AS producer, coalesce(wi.seq, ri.seq) AS seq,
       wi.rank, wi.topic, wi.part, wi.off, wi.txn, coalesce(wi.nw, 0) AS nw, wi.inv,
       coalesce(ri.n_pos, 0) AS n_pos, coalesce(ri.n_r, 0) AS n_r, ri.rns,
       coalesce(home.at_acked, 0) AS at_acked, home.stored
FROM wi FULL OUTER JOIN ri ON wi.producer = ri.producer AND wi.seq = ri.seq
LEFT JOIN home ON home.producer = wi.producer AND home.seq = wi.seq;
"""

COUNTS = """
SELECT
  sum(CASE WHEN rank = 2 AND (txn IS NULL OR txn = 'committed') AND n_r = 0 THEN 1 ELSE 0 END),
  sum(CASE WHEN nw > 0 AND n_pos >= 2 THEN 1 ELSE 0 END),
  sum(CASE WHEN rank = 2 AND off IS NOT NULL AND n_r > 0 AND at_acked = 0 THEN 1 ELSE 0 END),
  sum(CASE WHEN rank = 0 AND n_r > 0 THEN 1 ELSE 0 END),
  sum(CASE WHEN nw = 0 THEN n_pos ELSE 0 END),
  sum(CASE WHEN txn = 'aborted' THEN n_r ELSE 0 END),
  sum(CASE WHEN nw > 0 AND n_r > 0 AND rns < inv - 1000000000 THEN 1 ELSE 0 END)
FROM ident
"""

REORDER = """
SELECT count(*) FROM (
  SELECT seq, max(seq) OVER (PARTITION BY producer, topic, part ORDER BY stored, seq
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev
  FROM ident WHERE rank = 2 AND stored IS NOT NULL
) WHERE prev > seq
"""

# What each read saw as one key (-1: undecodable, below every producer << 40 | seq), and
# whether the drain read it.
POSITIONS = """
CREATE TEMP VIEW rk AS
SELECT topic, "partition" AS part, "offset" AS off,
       CASE WHEN coalesce(valid, false) AND producer IS NOT NULL AND seq IS NOT NULL
            THEN (producer::BIGINT << 40) + seq ELSE -1 END AS rec,
       reader = 'drain' OR coalesce(mode, '') = 'drain' AS dr
FROM r;

CREATE TEMP TABLE offs AS
SELECT topic, part, off, min(rec) AS lo, max(rec) AS hi,
       min(CASE WHEN dr THEN rec END) AS d_lo, max(CASE WHEN dr THEN rec END) AS d_hi
FROM rk GROUP BY topic, part, off;

-- offsets read as two records; each record read there, and whether the drain read it
-- anywhere in the partition
CREATE TEMP TABLE two AS
SELECT *, d_lo IS NOT NULL AND d_lo = d_hi AND lo <> -1 AS one_drained
FROM offs WHERE lo <> hi;

CREATE TEMP TABLE two_recs AS
SELECT DISTINCT t.topic, t.part, t.off, x.rec
FROM two t JOIN rk x ON x.topic = t.topic AND x.part = t.part AND x.off = t.off;

CREATE TEMP TABLE drained AS
SELECT DISTINCT d.topic, d.part, d.rec
FROM rk d JOIN (SELECT DISTINCT topic, part, rec FROM two_recs) x
  ON d.topic = x.topic AND d.part = x.part AND d.rec = x.rec
WHERE d.dr;

CREATE TEMP TABLE flags AS
SELECT t.topic, t.part, t.off, t.one_drained,
       coalesce(max(CASE WHEN x.rec <> t.d_lo AND d.rec IS NOT NULL THEN 1 ELSE 0 END), 0)
         AS moved
FROM two t JOIN two_recs x ON x.topic = t.topic AND x.part = t.part AND x.off = t.off
LEFT JOIN drained d ON d.topic = x.topic AND d.part = x.part AND d.rec = x.rec
GROUP BY t.topic, t.part, t.off, t.one_drained;
"""

# reused-offset: one record drained there, and the others vanished or the partition shows a
# vanished record (its truncation's proof); inconsistent-offset: every other offset read as
# two records
POSITION_COUNTS = """
SELECT sum(CASE WHEN reused THEN 1 ELSE 0 END), sum(CASE WHEN reused THEN 0 ELSE 1 END),
       (SELECT count(*) FROM offs WHERE lo = -1)
FROM (SELECT one_drained AND (moved = 0 OR max(CASE WHEN one_drained AND moved = 0
                                                    THEN 1 ELSE 0 END)
                                              OVER (PARTITION BY topic, part) = 1) AS reused
      FROM flags)
"""

# A consumer's steps (lag by reader and partition, ordered as the checker orders them); a
# step forward over more than one offset skipped one when some reader read an offset
# strictly inside it (the checker's definition by dense rank, without ranking every offset).
# A forward step of a reader not in subscribe mode from a record the log no longer holds at
# its previous offset (the drain read one other record there) onto the drain's record is a
# skip past a truncation (positions.past_truncation), though nothing lies between its ends.
POLLS = """
CREATE TEMP TABLE steps AS
SELECT topic, part, off, prev_off, rec, prev_rec, subscribe FROM (
  SELECT topic, "partition" AS part, "offset" AS off, rec, coalesce(mode, '') = 'subscribe'
           AS subscribe,
         lag("offset") OVER w AS prev_off, lag(rec) OVER w AS prev_rec
  FROM (SELECT *, CASE WHEN coalesce(valid, false) AND producer IS NOT NULL
                        AND seq IS NOT NULL THEN (producer::BIGINT << 40) + seq
                       ELSE -1 END AS rec
        FROM r WHERE reader <> 'drain' AND coalesce(mode, '') <> 'drain')
  WINDOW w AS (PARTITION BY reader, topic, "partition" ORDER BY poll, read_ns, "offset", rec)
);

CREATE TEMP TABLE skipped AS
WITH wide AS (
  SELECT DISTINCT topic, part, prev_off, off FROM steps WHERE off > prev_off + 1
), inside AS (
  SELECT topic, part, prev_off, off, unnest(range(prev_off + 1, off)) AS o FROM wide
)
SELECT DISTINCT i.topic, i.part, i.prev_off, i.off
FROM r JOIN inside i ON r.topic = i.topic AND r."partition" = i.part AND r."offset" = i.o;
"""

POLL_COUNTS = """
SELECT sum(CASE WHEN k.off IS NOT NULL
                  OR (s.off > s.prev_off AND NOT s.subscribe AND s.prev_rec <> -1
                      AND s.prev_rec <> p.d_lo AND p.d_lo = p.d_hi
                      AND s.rec = c.d_lo AND c.d_lo = c.d_hi) THEN 1 ELSE 0 END),
       sum(CASE WHEN s.off <= s.prev_off THEN 1 ELSE 0 END)
FROM steps s
LEFT JOIN skipped k ON s.topic = k.topic AND s.part = k.part AND s.prev_off = k.prev_off
  AND s.off = k.off
LEFT JOIN offs p ON s.topic = p.topic AND s.part = p.part AND s.prev_off = p.off
LEFT JOIN offs c ON s.topic = c.topic AND s.part = c.part AND s.off = c.off
WHERE s.prev_off IS NOT NULL
"""


def check(run_dir: str, threads: int = 2) -> dict[str, int]:
    """Anomaly counts of a run (the drain complete, every reader read_committed)."""
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    hist = os.path.join(run_dir, "history")
    for name, view in (("writes", "w"), ("reads", "r")):
        path = os.path.join(hist, f"{name}.parquet")
        pattern = os.path.join(path, "*.parquet") if os.path.isdir(path) else path
        con.execute(f"CREATE VIEW {view} AS SELECT * FROM read_parquet('{pattern}')")
    con.execute(SQL)
    lost, dup, mismatch, failed, no_attempt, aborted, early = con.execute(  # type: ignore[misc]
        COUNTS).fetchone()
    reorder = con.execute(REORDER).fetchone()[0]  # type: ignore[index]
    con.execute(POSITIONS)
    reused, incons, bad = con.execute(POSITION_COUNTS).fetchone()  # type: ignore[misc]
    con.execute(POLLS)
    skip, back = con.execute(POLL_COUNTS).fetchone()  # type: ignore[misc]
    out = {
        "lost": lost, "duplicate": dup, "offset-mismatch": mismatch, "failed-visible": failed,
        "unexpected": (no_attempt or 0) + (bad or 0), "aborted-read": aborted,
        "reorder": reorder, "inconsistent-offset": incons, "reused-offset": reused,
        "read-before-write": early, "poll-skip": skip, "nonmonotonic-poll": back,
    }
    return {k: int(v or 0) for k, v in out.items()}


if __name__ == "__main__":
    started = time.monotonic()
    counts = check(sys.argv[1])
    print(json.dumps({"counts": counts, "seconds": round(time.monotonic() - started, 3)}))
