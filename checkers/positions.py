"""Position-based checks: one shuffle of the reads by (topic, partition); the aggregation by
offset and both windows reuse that partitioning.

- inconsistent-offset: an offset read with two different records;
- unexpected: an offset read with a value that does not decode;
- poll-skip / nonmonotonic-poll: a consumer's consecutive reads of a partition. An offset
  *exists* when any reader (the drain included) read it; ranking the existing offsets densely
  turns "jumped over an existing offset" into "rank grew by more than one", so gaps nobody
  read (transaction markers, lost records, compaction) are not skips. An offset counts only
  where a witness read it in the step's own log (skip_witness.py), so a step in a history a
  truncation replaced is not judged by the new log's records. A step forward past a
  truncation point (from a record the log no longer holds there) is a skip too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from contract.schemas import DRAIN_READER

from .engines import is_connect
from .history import Event, poll_index, read_order
from .identity import topic_id, topic_name
from .rows import ANOMALY_COLUMNS, anomaly_rows, flag_kinds
from .skip_witness import SPAN, troubled, witnessed

#: The record key of an undecodable value (smaller than every decoded key).
UNDECODABLE = -(1 << 63)
_SEQ_BITS = 40


def _record_key() -> F.Column:
    """What a reader saw at an offset, as one long: producer << 40 | seq, or UNDECODABLE.

    Fixed-width keys keep the two sorts of the reads cheap (seq values are far below 2^40).
    """
    valid = F.coalesce(F.col("valid"), F.lit(False)) & F.col("producer").isNotNull() & F.col(
        "seq"
    ).isNotNull()
    packed = F.shiftleft(F.col("producer").cast("long"), _SEQ_BITS) + F.col("seq")
    return F.when(valid, packed).otherwise(F.lit(UNDECODABLE))


def _producer(key: F.Column) -> F.Column:
    return F.when(key != UNDECODABLE, F.shiftright(key, _SEQ_BITS).cast("int"))


def _seq(key: F.Column) -> F.Column:
    return F.when(key != UNDECODABLE, key.bitwiseAND(F.lit((1 << _SEQ_BITS) - 1)))


#: (reader, topic, partition) -> [(poll, what)] of the reader's recorded rebalances.
Rebalances = dict[tuple[str, str, int], list[tuple[int, str]]]


def rebalance_polls(events: list[Event]) -> Rebalances:
    """The rebalance events of events.jsonl (``kind: "rebalance"``, written by
    workloads/consumer.py: detail ``reader``, ``what`` assigned/revoked/lost, ``poll`` the
    poll number during which the callback ran, ``partitions`` "topic:partition" keys),
    per reader and partition, in poll order. Malformed entries are skipped."""
    out: Rebalances = {}
    for e in events:
        if e.kind != "rebalance":
            continue
        d = e.detail
        try:
            reader, poll = str(d["reader"]), int(d["poll"])
            parts = [str(p).rsplit(":", 1) for p in d.get("partitions") or []]
            keys = [(reader, t, int(p)) for t, p in parts]
        except (KeyError, TypeError, ValueError):
            continue
        for key in keys:
            out.setdefault(key, []).append((poll, str(d.get("what", ""))))
    return {k: sorted(v) for k, v in out.items()}


def across(rebalances: Rebalances, reader: str, topic: str, partition: int, prev_poll: int,
           poll: int) -> list[dict[str, object]]:
    """The reader's rebalances of that partition whose poll lies in ``[prev_poll, poll]``:
    the ones a step between two consecutive reads (at those polls) crossed."""
    return [{"poll": p, "what": w}
            for p, w in rebalances.get((reader, topic, partition), [])
            if prev_poll <= p <= poll]


def _rebalance_map(rebalances: Rebalances, topics: list[str],
                   readers: list[str]) -> F.Column | None:
    """"rid:tid:partition" -> array of rebalance polls, for the readers and topics known."""
    rid = {r: i for i, r in enumerate(readers)}
    tid = {t: i for i, t in enumerate(topics)}
    items: list[F.Column] = []
    for (reader, topic, part), polls in sorted(rebalances.items()):
        if reader in rid and topic in tid:
            items += [F.lit(f"{rid[reader]}:{tid[topic]}:{part}"),
                      F.array(*[F.lit(p).cast("long") for p, _ in polls])]
    return F.create_map(*items) if items else None


def position_anomalies(reads: DataFrame, partitions: int, topics: list[str],
                       readers: list[str], rebalances: Rebalances | None = None,
                       groups: Mapping[str, str | None] | None = None) -> DataFrame:
    """Anomaly rows of inconsistent-offset, reused-offset, unexpected (undecodable) and the
    poll checks.

    An offset read with two different records is ``reused-offset`` (not
    ``inconsistent-offset``) when the drain read exactly one decodable record there, every
    record read there decodes, and the partition was truncated: either every other record
    live readers read there *vanished* (the drain read it nowhere in the partition: the
    truncated tail's record), or it is still in the log at another offset (a duplicate's
    copy cut by the truncation, a write retried after it) and some offset of the partition
    at or below this one shows a vanished record (the proof that the log was truncated
    there: a truncation removes a tail) whose replacement was first read after the old
    record here was (the truncation came between them). Without that proof a record the
    log holds elsewhere stays ``inconsistent-offset``. A reused offset is excused only by the
    per-record power-loss proof (power_proof.py, applied to the collected rows).

    A poll step is excused when the reader is in subscribe mode and one of its recorded
    rebalances of that partition has a poll number in [previous read's poll, this poll];
    a skip forward only when, besides, another subscribe-mode reader of the same consumer
    group (``groups``: reader -> group, Settings.group) read each offset it skipped
    (:func:`group_cover`): the group, not the reader, was handed those records. A
    restart-mode reader is alone in its group, so it resumes at the offset it committed: a
    step back across its recorded rebalance or restart is excused (at least once), a skip
    never is. A step back is also excused when it lands on a reused offset (a reset to the
    truncation point). ``excuse`` says which. A step forward past a truncation
    (:func:`past_truncation`) is a poll-skip though no offset lies between its ends, and
    never excused; its row's ``other_producer``/``other_seq`` is the record the reader had
    read at ``prev_offset``.

    On classic Spark one chain of windows (below); on Sail the same definitions by
    aggregation (positions_by_offset.py).
    """
    if is_connect(reads.sparkSession):
        from .positions_by_offset import position_anomalies_by_offset

        rows = position_anomalies_by_offset(reads, partitions, topics, readers, rebalances)
    else:
        rows = _by_windows(reads, partitions, topics, readers, rebalances)
    return group_cover(rows, reads, groups or {}, rebalances) if rebalances else rows


#: The columns that name one poll step of an anomaly row.
_STEP = ["topic", "partition", "reader", "prev_offset", "offset", "poll"]

#: One reader's reads in order, on position_reads' columns: history.read_order, then rec (a
#: reader's two records at one offset in one poll of a history without ``poll_index`` need
#: an order, or which one a step starts from is the engine's).
READ_ORDER = ("poll", "ix", "read_ns", "offset", "rec")


def group_cover(rows: DataFrame, reads: DataFrame, groups: Mapping[str, str | None],
                rebalances: Rebalances) -> DataFrame:
    """``rows`` with a poll-skip excused across a rebalance kept excused only when another
    reader of the skipping reader's consumer group, in subscribe mode, read every offset
    the step skipped: each offset strictly between ``prev_offset`` and ``offset`` that any
    reader read (the offsets that make it a skip; one nobody read is no record). Without
    that, the records were delivered to nobody in the group: the skip is not excused.

    The rows are not read twice (on classic Spark that would run the windows above twice):
    the wide steps across a rebalance are found again from the reads of the readers that
    have a mate in their group, in partitions they have rebalances of (one window over those
    reads alone), and only the offsets inside them are joined with the reads (broadcast), as
    skip_witness.witnessed does."""
    crossed = F.coalesce((F.col("kind") == "poll-skip") & (F.col("excuse") == "rebalance"),
                         F.lit(False))
    members = {r: g for r, g in groups.items() if g is not None}
    sizes = Counter(members.values())
    mates = {r: g for r, g in members.items() if sizes[g] > 1}
    moved = {f"{r}:{t}:{p}": polls for (r, t, p), polls in sorted(rebalances.items())
             if r in mates}
    if not moved:  # no reader with a rebalance has a mate in its group: nothing is covered
        return _keep_excuse(rows, ~crossed)
    items: list[F.Column] = []
    for reader, group in sorted(mates.items()):
        items += [F.lit(reader), F.lit(group)]
    group_of = F.create_map(*items)
    polls_items: list[F.Column] = []
    for k, at_polls in moved.items():
        polls_items += [F.lit(k), F.array(*[F.lit(p).cast("long") for p, _ in at_polls])]
    where = F.concat_ws(":", "reader", "topic", F.col("partition").cast("string"))
    by_reader = Window.partitionBy("reader", "topic", "partition").orderBy(*read_order())
    steps = reads.where(where.isin(sorted(moved))).select(
        "reader", "topic", "partition", "offset", "poll",
        F.lag("offset").over(by_reader).alias("prev_offset"),
        F.lag("poll").over(by_reader).alias("prev_poll"))
    polls = F.create_map(*polls_items)[where]
    hit = F.exists(polls, lambda p: (p >= F.col("prev_poll")) & (p <= F.col("poll")))
    wide = steps.where((F.col("offset") > F.col("prev_offset") + 1)
                       & F.coalesce(hit, F.lit(False))).select(*_STEP).distinct()
    inside = wide.select(*_STEP, group_of[F.col("reader")].alias("group"), F.explode(
        F.sequence(F.col("prev_offset") + 1, F.col("offset") - 1)).alias("at"))
    there = reads.select("topic", "partition", F.col("offset").alias("at"),
                         F.col("reader").alias("by"), F.col("mode").alias("by_mode"))
    mate = ((F.col("by") != F.col("reader")) & (F.col("by_mode") == "subscribe")
            & (group_of[F.col("by")] == F.col("group")))
    per_offset = (there.join(F.broadcast(inside), ["topic", "partition", "at"])
                  .groupBy(*_STEP, "at")
                  .agg(F.max(F.coalesce(mate, F.lit(False)).cast("int")).alias("mate")))
    covered = (per_offset.groupBy(*_STEP).agg(F.min("mate").alias("mate"))
               .where(F.col("mate") == 1).select(*_STEP, F.lit(True).alias("covered")))
    out = rows.join(F.broadcast(covered), _STEP, "left")
    return _keep_excuse(out, ~crossed | F.coalesce(F.col("covered"), F.lit(False)))


def _keep_excuse(rows: DataFrame, keep: F.Column) -> DataFrame:
    """``rows`` in the anomaly columns, with ``excused``/``excuse`` cleared where not
    ``keep``."""
    cols = {name: F.col(name) for name, _ in ANOMALY_COLUMNS}
    cols["excused"] = F.col("excused") & keep
    cols["excuse"] = F.when(keep, F.col("excuse"))
    return rows.select(*[c.alias(n) for n, c in cols.items()])


def _by_windows(reads: DataFrame, partitions: int, topics: list[str], readers: list[str],
                rebalances: Rebalances | None) -> DataFrame:
    """position_anomalies on classic Spark.

    One chain without branches (a branch would repeat the exchange): windows by offset
    (sharing one sort), then the per-reader window, then one projection that lists each
    row's kinds. Topics and readers travel as ints so that sorted rows are fixed-width.
    """
    r = position_reads(reads, partitions, topics, readers)
    by_offset = Window.partitionBy("tid", "partition").orderBy("offset")
    at_offset = Window.partitionBy("tid", "partition", "offset")
    in_partition = Window.partitionBy("tid", "partition")
    by_rec = Window.partitionBy("tid", "partition", "rec")
    drain_rec = F.when(~F.col("consumer"), F.col("rec"))
    # was this record read by the drain anywhere in the partition (still in the log)?
    r1 = r.select("*", F.max((~F.col("consumer")).cast("int")).over(by_rec).alias("drained"))
    r2a = r1.select(
        "*",
        F.dense_rank().over(by_offset).alias("rank"),
        F.lag("offset").over(by_offset).alias("offset_before"),
        F.min("rec").over(at_offset).alias("lo"),
        F.max("rec").over(at_offset).alias("hi"),
        F.min("read_ns").over(at_offset).alias("first_ns"),
        F.min(drain_rec).over(at_offset).alias("d_lo"),
        F.max(drain_rec).over(at_offset).alias("d_hi"),
    )
    # UNDECODABLE is the least key: lo is it exactly when some read there did not decode
    one_drained = (F.col("d_lo").isNotNull() & (F.col("d_lo") == F.col("d_hi"))
                   & (F.col("lo") != UNDECODABLE))
    # a record at this offset other than the drain's that the log still holds elsewhere
    elsewhere = (F.col("rec") != F.col("d_lo")) & (F.col("drained") == 1)
    r2 = r2a.select(
        "*", F.max(elsewhere.cast("int")).over(at_offset).alias("moved"),
        # when a record other than the drain's was first read here, and the drain's
        F.min(F.when(F.col("rec") != F.col("d_lo"), F.col("read_ns"))).over(at_offset)
        .alias("old_ns"),
        F.min(F.when(F.col("rec") == F.col("d_lo"), F.col("read_ns"))).over(at_offset)
        .alias("new_ns"))
    vanished = one_drained & (F.col("lo") != F.col("hi")) & (F.col("moved") == 0)
    # A truncation explains an offset whose old record the log still holds elsewhere only
    # at or above an offset whose record vanished (where a truncation began), and only if
    # the old record was read before the record that replaced the vanished one was first
    # read (the truncation lies between): ``trunc_ns``, the latest such first read at or
    # below the offset, computed on the flagged rows only (a window over a whole partition
    # of the reads would hold all of it in memory).
    reused = one_drained & ((F.col("moved") == 0)
                            | F.coalesce(F.col("old_ns") <= F.col("trunc_ns"), F.lit(False)))
    by_reader = Window.partitionBy("rid", "tid", "partition").orderBy(*READ_ORDER)
    r3 = r2.select(
        "*",
        F.lag("offset").over(by_reader).alias("prev_offset"),
        F.lag("rank").over(by_reader).alias("prev_rank"),
        F.lag("poll").over(by_reader).alias("prev_poll"),
        F.lag("rec").over(by_reader).alias("prev_rec"),
        F.lag("d_lo").over(by_reader).alias("prev_d_lo"),
        F.lag("d_hi").over(by_reader).alias("prev_d_hi"),
    )
    first_here = F.col("offset_before").isNull() | (F.col("offset_before") != F.col("offset"))
    step = F.col("consumer") & F.col("prev_offset").isNotNull()
    r3 = r3.select("*", F.coalesce(step & past_truncation(), F.lit(False)).alias("past"))
    two = "two-records"  # reused-offset or inconsistent-offset, decided below
    flagged = flag_kinds(r3, [
        (first_here & (F.col("lo") != F.col("hi")), two),
        (first_here & (F.col("lo") == UNDECODABLE), "unexpected"),
        (step & (F.col("offset") <= F.col("prev_offset")), "nonmonotonic-poll"),
        ((step & (F.col("offset") > F.col("prev_offset"))
          & (F.col("rank") - F.col("prev_rank") > 1)) | F.col("past"), "poll-skip"),
    ])
    # every offset read as two records has its flagged row: the partition's truncation proof
    upto = in_partition.orderBy("offset").rangeBetween(Window.unboundedPreceding,
                                                       Window.currentRow)
    flagged = flagged.select("*", F.max(F.when((F.col("kind") == two) & vanished,
                                               F.col("new_ns")))
                             .over(upto).alias("trunc_ns"))
    flagged = flagged.withColumn("kind", F.when(
        F.col("kind") == two,
        F.when(reused, "reused-offset").otherwise("inconsistent-offset")).otherwise(
        F.col("kind")))
    flagged = _held_to_witnesses(r, flagged)
    kind = F.col("kind")
    poll_kind = kind.isin("nonmonotonic-poll", "poll-skip")
    reuse = kind == "reused-offset"
    # A reader's step back onto an offset a truncation reused: the client found the log
    # truncated and reset its position to the truncation point (KIP-320; librdkafka does it
    # silently). The truncation itself is reported, and judged, as reused-offset.
    reset = ((kind == "nonmonotonic-poll") & (F.col("lo") != F.col("hi")) & reused)
    across = (((poll_kind & F.col("subscribe"))
               | ((kind == "nonmonotonic-poll") & F.col("restart")))
              & _crossed(rebalances or {}, topics, readers))
    incons = kind == "inconsistent-offset"
    # reused-offset: the record the log holds now, and one the live readers saw before
    old = F.when(F.col("lo") == F.col("d_lo"), F.col("hi")).otherwise(F.col("lo"))
    key = F.when(poll_kind, F.col("rec")).when(incons, F.col("lo")).when(reuse, F.col("d_lo"))
    # a skip past a truncation: the record the reader read at prev_offset, gone from there
    gone = F.when(poll_kind & F.col("past"), F.col("prev_rec"))
    return anomaly_rows(
        flagged, kind,
        topic=topic_name(topics, F.col("tid")), partition=F.col("partition"),
        offset=F.col("offset"), read_offset=F.col("offset"),
        producer=_producer(key), seq=_seq(key),
        other_producer=F.when(incons, _producer(F.col("hi"))).when(reuse, _producer(old))
        .otherwise(_producer(gone)),
        other_seq=F.when(incons, _seq(F.col("hi"))).when(reuse, _seq(old))
        .otherwise(_seq(gone)),
        reader=F.when(poll_kind, _name(readers, F.col("rid"))),
        poll=F.when(poll_kind, F.col("poll")),
        prev_offset=F.when(poll_kind, F.col("prev_offset")),
        prev_poll=F.when(poll_kind, F.col("prev_poll")),
        event_ns=F.when(poll_kind, F.col("read_ns")).otherwise(F.col("first_ns")),
        excused=across | reset,
        excuse=F.when(across, "rebalance").when(reset, "truncation"),
    )


def _held_to_witnesses(r: DataFrame, flagged: DataFrame) -> DataFrame:
    """``flagged`` without the poll-skips (not past a truncation) whose skipped offsets no
    witness read (skip_witness.py). The rank test above counts an offset anyone read; where
    every record read is the drain's that is the same answer, so only the steps of the
    partitions where it is not (skip_witness.troubled: few, and none in a run without a
    truncation or a disagreement) are found again, by one window over those partitions'
    reads, and judged by their witnesses."""
    bad = troubled(r)
    by_reader = Window.partitionBy("rid", "tid", "partition").orderBy(*READ_ORDER)
    steps = (r.where(F.col("stepping")).join(F.broadcast(bad), ["tid", "partition"], "left_semi")
             .select("rid", "consumer", "tid", "partition", "offset", "rec", "poll", "ix",
                     "read_ns", F.lag("offset").over(by_reader).alias("prev_offset")))
    wide = steps.where(F.col("consumer") & (F.col("offset") > F.col("prev_offset") + 1))
    backs = steps.where(F.col("consumer") & (F.col("offset") <= F.col("prev_offset")))
    out = (flagged.join(F.broadcast(bad.withColumn("troubled", F.lit(True))),
                        ["tid", "partition"], "left")
           .join(witnessed(r, wide, backs), SPAN, "left"))
    unshown = ((F.col("kind") == "poll-skip") & ~F.col("past")
               & F.col("troubled").isNotNull() & F.col("skipped").isNull())
    return out.where(~unshown).drop("troubled", "skipped")


def past_truncation() -> Column:
    """A forward step (``offset`` > ``prev_offset``) of a reader not in subscribe mode from a
    record the log no longer holds at ``prev_offset`` (``prev_rec``; the drain read one
    other record there, ``prev_d_lo`` = ``prev_d_hi``: a truncation reused the offset after
    the reader read it) onto the record the log holds at ``offset`` (``rec`` = ``d_lo`` =
    ``d_hi``). A client that finds the log truncated resumes at the truncation point, at or
    below ``prev_offset`` (KIP-320); this reader went on past it, so the records written at
    the reused offsets up to ``prev_offset`` are skipped: a poll-skip though no offset lies
    between the two. A subscribe-mode reader is left out: another member of its group may
    have read them (positions.group_cover judges only the offsets between a step's ends)."""
    return ((F.col("offset") > F.col("prev_offset")) & ~F.col("subscribe")
            & (F.col("prev_rec") != F.col("prev_d_lo"))
            & (F.col("prev_d_lo") == F.col("prev_d_hi"))
            & (F.col("prev_rec") != UNDECODABLE)
            & (F.col("rec") == F.col("d_lo")) & (F.col("d_lo") == F.col("d_hi")))


def position_reads(reads: DataFrame, partitions: int, topics: list[str],
                   readers: list[str]) -> DataFrame:
    """The reads as the position checks need them, shuffled by (topic, partition): reader and
    topic as ints, the record as one long, whether the reader is a consumer (not the drain
    by name or mode) and whether its reads are steps at all (any reader but the drain)."""
    consumer = ((F.col("reader") != DRAIN_READER)
                & (F.coalesce(F.col("mode"), F.lit("")) != DRAIN_READER))
    r = reads.select(
        _id(readers, F.col("reader")).alias("rid"),
        (F.col("reader") != DRAIN_READER).alias("stepping"),
        consumer.alias("consumer"),
        (F.col("mode") == "subscribe").alias("subscribe"),
        (F.col("mode") == "restart").alias("restart"),
        "poll", poll_index().alias("ix"), "read_ns",
        topic_id(topics, F.col("topic")).alias("tid"), "partition",
        "offset", _record_key().alias("rec"),
    )
    if is_connect(reads.sparkSession):
        return r
    return r.repartition(partitions, "tid", "partition")


def _crossed(rebalances: Rebalances, topics: list[str], readers: list[str]) -> F.Column:
    """True when a rebalance of the row's reader and partition lies between the polls of
    the previous read and this one (both ends included)."""
    m = _rebalance_map(rebalances, topics, readers)
    if m is None:
        return F.lit(False)
    polls = m[F.concat_ws(":", F.col("rid").cast("string"), F.col("tid").cast("string"),
                          F.col("partition").cast("string"))]
    hit = F.exists(polls, lambda p: (p >= F.col("prev_poll")) & (p <= F.col("poll")))
    return F.coalesce(hit, F.lit(False))


def _id(names: list[str], col: F.Column) -> F.Column:
    return topic_id(names, col)


def _name(names: list[str], col: F.Column) -> F.Column:
    return topic_name(names, col)
