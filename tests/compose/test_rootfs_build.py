"""The base image's root filesystem build (compose/rootfs.py) leaves nothing behind: not
the builder's processes, not its mounts, not its directory — when it fails, when it is
interrupted, and when the process building it is SIGKILLed (the next start's sweep removes
the directory, never deleting through a mount). The builder here is a shell standing in for
debootstrap: it mounts a directory into the new root (as debootstrap binds /dev on some
hosts) and waits; the process management under test is real."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tenacity import Retrying, stop_after_delay, wait_fixed

from compose.rootfs import RootfsError, built_rootfs, sweep_rootfs
from compose.rootfs_guard import mounts_under
from contract.owners import pid_alive

REPO = Path(__file__).resolve().parents[2]

# The stand-in builder: bind the canary directory into the new root, say its pid (kept
# by `exec sleep`), wait.
BUILDER = ('mkdir -p "$0/dev" && mount --bind "$1" "$0/dev" && echo $$ > "$0/../ready.tmp" '
           '&& mv "$0/../ready.tmp" "$0/../ready" && exec sleep 300')

CHILD = """
import signal, sys
from compose.rootfs import built_rootfs
signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job ignores it
builder, canary = sys.argv[1], sys.argv[2]
try:
    with built_rootfs(lambda root: ["sh", "-c", builder, str(root), canary], "builder"):
        print("built", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def _bounded(check, seconds: float = 60) -> None:  # type: ignore[no-untyped-def]
    for attempt in Retrying(stop=stop_after_delay(seconds), wait=wait_fixed(0.2),
                            reraise=True):
        with attempt:
            check()


@pytest.fixture
def canary(tmp_path: Path) -> Path:
    d = tmp_path / "canary"
    d.mkdir()
    (d / "keep").write_text("the host's files, bound into the new root")
    return d


def _start(tmp_path: Path, canary: Path) -> tuple[subprocess.Popen[str], Path, int]:
    """A process building a root filesystem with the stand-in; its scratch directory and
    the builder's pid once the builder waits."""
    scratch_root = tmp_path / "tmp"
    scratch_root.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, BUILDER, str(canary)], cwd=REPO,
                            env={**os.environ, "TMPDIR": str(scratch_root)},
                            stdout=subprocess.PIPE, text=True)
    found: list[Path] = []

    def ready() -> None:
        found[:] = [p for p in scratch_root.glob(f"kafka-chaos-rootfs-{proc.pid}-*")
                    if (p / "ready").exists()]
        assert found, "the builder did not start"

    try:
        _bounded(ready)
    except BaseException:
        proc.kill()
        raise
    scratch = found[0]
    assert mounts_under(scratch) == [str((scratch / "root" / "dev").resolve())]
    return proc, scratch, int((scratch / "ready").read_text())


def test_a_failing_builder_is_named_with_its_output_and_leaves_nothing(tmp_path: Path,
                                                                       monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with (pytest.raises(RootfsError, match=r"^builder failed \(exit 3\): no mirror$"),
          built_rootfs(lambda root: ["sh", "-c", "echo no mirror; exit 3"], "builder")):
        pass
    assert not list(tmp_path.glob("kafka-chaos-rootfs-*"))
    with built_rootfs(lambda root: ["sh", "-c", f'mkdir -p "{root}/etc"'], "builder") as root:
        assert (root / "etc").is_dir()
    assert not list(tmp_path.glob("kafka-chaos-rootfs-*"))


def test_an_interrupted_build_ends_its_builder_and_removes_everything(tmp_path: Path,
                                                                      canary: Path) -> None:
    proc, scratch, builder = _start(tmp_path, canary)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert (proc.returncode, out.strip()) == (0, "interrupted")
    assert not pid_alive(builder)
    assert not scratch.exists()
    assert (canary / "keep").exists()  # not deleted through the mount


def test_a_sigkilled_build_leaves_what_its_guard_and_the_next_sweep_remove(
        tmp_path: Path, canary: Path) -> None:
    proc, scratch, builder = _start(tmp_path, canary)
    proc.kill()
    proc.wait(timeout=10)
    # the guard saw its caller go: it ends the builder and detaches the mount
    def ended() -> None:
        assert not pid_alive(builder), "the builder outlived it"
        assert not mounts_under(scratch), "still mounted"

    _bounded(ended)
    # then, once the guard itself is gone (it holds the directory's lock), a sweep removes it
    def swept() -> None:
        assert sweep_rootfs(str(tmp_path / "tmp")) == [scratch]

    _bounded(swept)
    assert not scratch.exists()
    assert (canary / "keep").exists()
