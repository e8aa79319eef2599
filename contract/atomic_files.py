"""Writing a file whole or not at all, without following anything someone else planted;
and reading one only when it is a regular file of a bounded size.

Every file kafka-chaos writes (run.json, results.json, history parts, reports, figures,
JUnit) goes through a fresh temporary file beside it, created exclusively under a random
name, and a rename over the target. A reader never sees half a file; a symlink planted at
a predictable temporary name (``results.json.tmp``) is never written through, and a
symlink at the target itself is replaced, not followed (a rename replaces the directory
entry). Run directories may be someone else's: re-checking or re-rendering one must not
let its files steer where root writes.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO


@contextlib.contextmanager
def atomic_output(path: Path | str) -> Iterator[BinaryIO]:
    """A binary file object that becomes ``path`` when the block ends without an error
    (and is removed when it raises)."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, 0o644)  # as a plain open() would leave it (mkstemp makes it 0600)
        with os.fdopen(fd, "wb") as fh:
            yield fh
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_atomic(path: Path | str, data: str | bytes) -> Path:
    """Writes ``data`` (text as UTF-8) as ``path``, whole or not at all."""
    with atomic_output(path) as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
    return Path(path)


def read_regular(path: Path | str, limit: int) -> str | None:
    """The text of ``path`` when it is a regular file of at most ``limit`` bytes (a FIFO
    would block the reader, ``/dev/zero`` never end); None otherwise or when it cannot be
    read."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(limit + 1)[:limit]
    except (OSError, ValueError):
        return None


__all__ = ["atomic_output", "read_regular", "write_atomic"]
