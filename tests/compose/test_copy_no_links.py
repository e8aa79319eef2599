"""Collecting a broker's log dir follows no symlink (issue 47): the volume is the broker's to
write, so a link planted there must not make root copy a host file into a run directory
(which the nightly workflow uploads)."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

from compose.node import _copy_log_dir
from compose.remote import no_links

KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\n"


def _volume(tmp_path: Path) -> tuple[Path, Path]:
    secret = tmp_path / "root" / "id_ed25519"
    secret.parent.mkdir()
    secret.write_text(KEY)
    vol = tmp_path / "volume"
    (vol / "chaos-0").mkdir(parents=True)
    (vol / "chaos-0" / "00000000000000000000.log").write_bytes(b"segment")
    (vol / "chaos-0" / "00000000000000000042.log").symlink_to(secret)
    (vol / "chaos-1").symlink_to(secret.parent, target_is_directory=True)
    (vol / "meta.properties").symlink_to(secret)
    os.mkfifo(vol / "chaos-0" / "00000000000000000099.log")  # would block an open for reading
    return vol, secret


def test_a_local_copy_skips_every_symlink(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Old copy: the planted segment and meta.properties held the key, and chaos-1 was the
    key's whole directory. A planted FIFO is skipped, not waited on."""
    vol, _ = _volume(tmp_path)
    dest = tmp_path / "run" / "data"
    dest.mkdir(parents=True)
    _copy_log_dir(vol, dest, None)
    copied = sorted(str(p.relative_to(dest)) for p in dest.rglob("*"))
    assert copied == ["chaos-0", "chaos-0/00000000000000000000.log"]
    assert all(KEY not in p.read_text() for p in dest.rglob("*") if p.is_file())


def test_a_node_archive_loses_its_links(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Over SSH the log dir comes as a tar; a symlink member (relative, inside the
    destination, which tarfile's data filter lets through) is dropped."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        seg = tarfile.TarInfo("chaos-0/00000000000000000000.log")
        seg.size = 7
        tar.addfile(seg, io.BytesIO(b"segment"))
        link = tarfile.TarInfo("chaos-0/leader-epoch-checkpoint")
        link.type, link.linkname = tarfile.SYMTYPE, "00000000000000000000.log"
        tar.addfile(link)
    buf.seek(0)
    with tarfile.open(fileobj=buf) as tar:
        tar.extractall(tmp_path / "d", filter=no_links)
    assert sorted(p.name for p in (tmp_path / "d" / "chaos-0").iterdir()) == [
        "00000000000000000000.log"]
