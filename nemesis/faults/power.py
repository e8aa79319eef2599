"""Power loss: crash a node and make it lose everything Kafka never fsynced.

What it simulates, precisely: the machine loses power, so the OS page cache is gone. Kafka
fsyncs a partition's log only up to its *recovery point* (on segment roll, on
``flush.messages``/``flush.ms``, on clean shutdown) and records that point in
``recovery-point-offset-checkpoint`` (itself written atomically and fsynced). We kill the JVM
with SIGKILL, then cut every partition log back to the recorded recovery point: whole record
batches at or past it are removed, with their offset/time/transaction index entries (Kafka
rebuilds indexes when it recovers an uncleanly shut-down log), and a segment created past it
goes whole (its directory entry was never fsynced). Checkpoint files, the KRaft
metadata log (which Kafka does fsync) and producer snapshots are kept. This is the worst
case of a power cut: in reality the kernel's writeback may already have put some of the
unflushed tail on disk.

The data volume is edited from the host (a local engine; root), while the container is down;
on a node reached over SSH the same cut is made on the node's log dirs, while its broker is
down. On a cluster we did not start only the run's topic is cut, and no symlink in a log dir
is followed anywhere: whoever can write it (a broker's image, say) could point one at a host
file that root would then truncate.

The start event also records the ISR of every partition of the topic as the cluster reported it
just before the first kill (``isr_before``): the checker excuses a loss only when the power
loss hit the whole ISR, and this reading is milliseconds old where the observer's last sample
can be a whole interval old (or missing, when its request went to the dying broker).
"""

from __future__ import annotations

import errno
import logging
import os
import shlex
import stat
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nemesis.faults import targets as tg
from nemesis.faults.base import FaultContext, FaultError
from nemesis.faults.network import over_ssh
from nemesis.faults.process import Kill

if TYPE_CHECKING:
    from compose.remote import SshNode

log = logging.getLogger("kafka_chaos.nemesis")

BATCH_HEADER = struct.Struct(">qi")  # baseOffset, batchLength
LAST_OFFSET_DELTA_AT = 23  # baseOffset(8) length(4) epoch(4) magic(1) crc(4) attributes(2)
METADATA_DIR = "__cluster_metadata-0"


@dataclass(frozen=True)
class TruncatedPartition:
    """What power loss removed from one partition directory."""

    partition_dir: str
    recovery_point: int
    removed_bytes: int
    removed_batches: int


def parse_checkpoint(text: str) -> dict[str, int]:
    """``topic partition offset`` lines of a Kafka offset checkpoint → {"topic-p": offset}."""
    out: dict[str, int] = {}
    for line in text.splitlines()[2:]:
        parts = line.split()
        if len(parts) == 3:
            out[f"{parts[0]}-{parts[1]}"] = int(parts[2])
    return out


def read_checkpoint(path: Path) -> dict[str, int]:
    """The checkpoint file at ``path`` (empty when absent)."""
    return parse_checkpoint(path.read_text()) if path.exists() else {}


def cut_point(data: bytes, keep_below: int) -> tuple[int, int]:
    """Where a segment's bytes are cut so only batches whose last offset is below
    ``keep_below`` stay (a torn trailing batch goes too): (bytes kept, batches removed)."""
    pos = 0
    batches_kept_end = 0
    while pos + BATCH_HEADER.size <= len(data):
        base, length = BATCH_HEADER.unpack_from(data, pos)
        end = pos + BATCH_HEADER.size + length
        if end > len(data) or pos + LAST_OFFSET_DELTA_AT + 4 > len(data):
            break
        (delta,) = struct.unpack_from(">i", data, pos + LAST_OFFSET_DELTA_AT)
        if base + delta >= keep_below:
            break
        batches_kept_end = end
        pos = end
    if batches_kept_end == len(data):
        return batches_kept_end, 0
    return batches_kept_end, _count_batches(data[batches_kept_end:])


def _read_own(path: Path) -> tuple[int, bytes] | None:
    """Opens a regular file without following a symlink (whoever can write the data volume,
    a broker's image for one, could plant one pointing at a host file): (fd, its bytes), or
    None when ``path`` is a symlink or no regular file. The caller closes the fd."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return fd, b"".join(chunks)


def truncate_segment(path: Path, keep_below: int) -> tuple[int, int] | None:
    """Cuts a ``.log`` segment at the first batch whose last offset is >= ``keep_below``.

    Returns (bytes removed, batches removed), a torn trailing batch removed as well; None,
    touching nothing, when ``path`` is a symlink."""
    opened = _read_own(path)
    if opened is None:
        return None
    fd, data = opened
    try:
        keep, n_removed = cut_point(data, keep_below)
        if keep < len(data):
            os.ftruncate(fd, keep)
    finally:
        os.close(fd)
    return len(data) - keep, n_removed


def _count_batches(data: bytes) -> int:
    pos, n = 0, 0
    while pos + BATCH_HEADER.size <= len(data):
        _, length = BATCH_HEADER.unpack_from(data, pos)
        pos += BATCH_HEADER.size + length
        n += 1
    return n


def born_after_flush(segment_name: str, recovery_point: int) -> bool:
    """Whether a ``<base offset>.log`` segment was created after the partition's last flush.

    Kafka fsyncs a partition's directory only when it flushes a segment created since the
    previous recovery point, so a segment whose base offset lies past the recovery point may
    not exist on disk at all after a power loss: it goes, not just its bytes. Kept empty, it
    would leave Kafka a log end at its base offset over a gap of offsets it never holds
    (seen: a replica came back claiming 503 offsets it had lost, never fetched them, and a
    reader of it skipped them)."""
    stem = segment_name.removesuffix(".log")
    return stem.isdigit() and int(stem) > recovery_point


def of_topic(partition_dir: str, topic: str | None) -> bool:
    """Whether a log dir entry is a partition of ``topic`` (None: of any topic but the
    metadata log)."""
    name, _, part = partition_dir.rpartition("-")
    if not name or not part.isdigit() or partition_dir == METADATA_DIR:
        return False
    return topic is None or name == topic


def drop_unflushed(log_dir: Path, topic: str | None = None) -> list[TruncatedPartition]:
    """Cuts every partition of a Kafka log dir (of ``topic`` only, when given) back to its
    recovery point: the batches at or past it go, and so do the segments created after it.
    Symlinks are never followed: a symlinked partition dir or segment is left alone and
    logged, a symlinked checkpoint is an error."""
    checkpoint = log_dir / "recovery-point-offset-checkpoint"
    if checkpoint.is_symlink():
        raise FaultError(f"power loss: {checkpoint} is a symlink; not followed")
    points = read_checkpoint(checkpoint)
    out: list[TruncatedPartition] = []
    for pdir in sorted(log_dir.iterdir()):
        if not of_topic(pdir.name, topic) or not pdir.is_dir():
            continue
        if pdir.is_symlink():
            log.warning("power loss: %s is a symlink; left alone", pdir)
            continue
        rp = points.get(pdir.name, 0)
        removed_bytes = removed_batches = 0
        for seg in sorted(pdir.glob("*.log")):
            cut = _drop_segment(seg, rp)
            if cut is None:
                log.warning("power loss: %s is a symlink or no regular file; left alone", seg)
                continue
            rb, nb, gone = cut
            if rb or gone:
                removed_bytes += rb
                removed_batches += nb
                # Indexes may point past the cut; Kafka rebuilds missing ones on recovery.
                # (unlink removes a symlink itself, never what it points at)
                for ext in (".index", ".timeindex", ".txnindex"):
                    seg.with_suffix(ext).unlink(missing_ok=True)
        out.append(TruncatedPartition(pdir.name, rp, removed_bytes, removed_batches))
    # Kafka writes this marker on clean shutdown only; a power cut never leaves one.
    (log_dir / ".kafka_cleanshutdown").unlink(missing_ok=True)
    return out


def _drop_segment(seg: Path, rp: int) -> tuple[int, int, bool] | None:
    """One segment's cut: (bytes removed, batches removed, whether the file went); None
    when it is a symlink or no regular file (untouched)."""
    if not born_after_flush(seg.name, rp):
        cut = truncate_segment(seg, rp)
        return None if cut is None else (*cut, False)
    opened = _read_own(seg)
    if opened is None:
        return None
    fd, data = opened
    os.close(fd)
    seg.unlink()
    return len(data), _count_batches(data), True


def drop_unflushed_remote(node: SshNode, topic: str | None) -> list[TruncatedPartition]:
    """:func:`drop_unflushed` on a node reached over SSH (the broker is down), of ``topic``'s
    partitions only when given: the segments that may hold offsets at or past the recovery
    point are read over SSH, the cut is computed here, and ``truncate`` applies it there, so
    the node needs no Python. Only regular files in real directories are listed (``find``
    follows no symlink), and each is checked again right before it is cut."""
    out: list[TruncatedPartition] = []
    for log_dir in node.spec.log_dirs:
        q = shlex.quote(log_dir)
        checkpoint = f"{q}/recovery-point-offset-checkpoint"
        points = parse_checkpoint(node.ssh.run(f"test -L {checkpoint} || cat {checkpoint}",
                                               check=False).stdout)
        listing = node.ssh.run(f"cd {q} && find . -mindepth 2 -maxdepth 2 -type f "
                               "-name '*.log'", check=False).stdout
        segments: dict[str, list[tuple[int, str]]] = {}
        for rel in listing.split():
            pdir, _, name = rel.removeprefix("./").partition("/")
            if of_topic(pdir, topic) and name[:-4].isdigit():
                segments.setdefault(pdir, []).append((int(name[:-4]), f"{pdir}/{name}"))
        cmds = [f"rm -f {q}/.kafka_cleanshutdown"]
        for pdir, segs in sorted(segments.items()):
            rp = points.get(pdir, 0)
            segs.sort()
            removed_bytes = removed_batches = 0
            for i, (_, rel) in enumerate(segs):
                if i + 1 < len(segs) and segs[i + 1][0] <= rp:
                    continue  # every offset of this segment is below the recovery point
                data = node.ssh.run(["cat", f"{log_dir}/{rel}"], binary=True, timeout=300).stdout
                path = shlex.quote(f"{log_dir}/{rel}")
                stem = shlex.quote(f"{log_dir}/{rel[:-4]}")
                indexes = f"rm -f {stem}.index {stem}.timeindex {stem}.txnindex"
                if born_after_flush(rel.split("/", 1)[1], rp):
                    removed_bytes += len(data)
                    removed_batches += _count_batches(data)
                    cmds.append(f"rm -f {path} && {indexes}")
                    continue
                keep, batches = cut_point(data, rp)
                if keep < len(data):
                    removed_bytes += len(data) - keep
                    removed_batches += batches
                    cmds.append(f"test ! -L {path} && truncate -s {keep} {path} && {indexes}")
            out.append(TruncatedPartition(pdir, rp, removed_bytes, removed_batches))
        node.ssh.run(" && ".join(cmds), timeout=60)
    return out


def isr_now(ctx: FaultContext) -> dict[str, list[int]]:
    """``{"topic:partition": ISR}`` from the cluster's metadata now; empty when it cannot be
    read within 2 s (the checker then falls back to the observer's samples)."""
    from confluent_kafka import KafkaException

    from compose.admin import ClusterError

    try:
        parts = ctx.cluster.describe(ctx.topic, ctx.cluster.admin(timeout_ms=2000), timeout_s=2)
    except (KafkaException, ClusterError):
        return {}
    return {f"{p.topic}:{p.partition}": sorted(p.isr) for p in parts if p.isr}


class PowerLoss(Kill):
    """Kill -9 plus the loss of unflushed data; ``stop`` restarts the node."""

    kind = "power-loss"

    def __init__(self, target: str = "random", wait_ready: bool = True) -> None:
        super().__init__(target, wait_ready)
        self.lost: dict[int, list[TruncatedPartition]] = {}
        self.isr_before: dict[str, list[int]] = {}

    def start(self, ctx: FaultContext) -> None:
        self.isr_before = isr_now(ctx)
        self.targets = tg.resolve(self.target, ctx)
        # Every JVM dies before any log is cut: cutting takes a while (segments are read),
        # and a broker still up meanwhile checkpoints a recovery point its dead peers never
        # reached, so a cut one node at a time was not one power loss but a rolling one
        # (a loaded machine's run left one replica a whole segment behind the others).
        for nid in self.targets:
            self._apply(ctx, nid)  # Kill's: SIGKILL
        for nid in self.targets:
            self._cut(ctx, nid)
        self._started(ctx, target=self.target, **self._start_detail())

    def _cut(self, ctx: FaultContext, nid: int) -> None:
        """What the lost page cache takes: the node's logs back to its recovery points."""
        node = ctx.cluster.node(nid)
        # On a cluster we did not start, only the run's own topic loses its tail: the other
        # topics, __consumer_offsets included, are someone else's data.
        topic = ctx.topic if ctx.not_ours else None
        if over_ssh(node):
            self.lost[nid] = drop_unflushed_remote(node, topic)
            return
        try:
            log_dir = node.data_mountpoint()
            self.lost[nid] = drop_unflushed(log_dir, topic)
        except (OSError, KeyError) as e:
            raise FaultError(f"power loss needs the data volume on this host: {e}") from e

    def _start_detail(self) -> dict[str, Any]:
        detail: dict[str, Any] = {"lost": self._lost_summary()}
        if self.isr_before:
            detail["isr_before"] = self.isr_before
        return detail

    def _lost_summary(self) -> dict[str, Any]:
        return {str(nid): {t.partition_dir: {"recovery_point": t.recovery_point,
                                             "removed_batches": t.removed_batches,
                                             "removed_bytes": t.removed_bytes}
                           for t in parts if t.removed_bytes}
                for nid, parts in self.lost.items()}
