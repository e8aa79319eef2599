"""The Java client's build cache (runner/java_client.py): one build per version and driver
source, never half-used, pruned once unused for a week; a version Maven cannot fetch is one line and
exit 2 before any cluster starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner.clients import INFO_FILE, STALE_BUILD_S, ClientVenvError
from runner.java_client import ensure_java, java_dir


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg"


def test_built_once_rebuilt_when_the_driver_changes(cache, monkeypatch, tmp_path):  # type: ignore[no-untyped-def]
    calls: list[str] = []

    def build(target: Path, version: str) -> None:
        calls.append(version)
        (target / "classes").mkdir(parents=True)

    first = ensure_java("4.1.1", say=lambda _: None, builder=build)
    again = ensure_java("4.1.1", say=lambda _: None, builder=build)
    assert calls == ["4.1.1"] and first == again and first.folder == java_dir("4.1.1")
    info = json.loads((first.folder / INFO_FILE).read_text())
    assert info["client"] == "java" and info["version"] == "4.1.1"
    # another driver source (an upgrade of kafka-chaos): the cached build is redone
    import runner.java_client as jc

    src = tmp_path / "src"
    src.mkdir()
    for name in ("pom.xml", "KcDriver.java"):
        (src / name).write_text((jc.SOURCE_DIR / name).read_text() + "\n// changed\n")
    monkeypatch.setattr(jc, "SOURCE_DIR", src)
    changed = ensure_java("4.1.1", say=lambda _: None, builder=build)
    assert calls == ["4.1.1", "4.1.1"]
    # into a folder of its own: a driver another checkout runs from the first keeps its files
    assert changed.folder != first.folder and (first.folder / "classes").is_dir()
    # the first build, unused for over a week, goes when that version's driver is next used;
    # one used within the week stays
    ensure_java("4.1.1", say=lambda _: None, builder=build)
    assert first.folder.exists()
    week_ago = time.time() - STALE_BUILD_S - 60
    os.utime(first.folder / INFO_FILE, (week_ago, week_ago))
    ensure_java("4.1.1", say=lambda _: None, builder=build)
    assert calls == ["4.1.1"] * 2 and not first.folder.exists() and changed.folder.exists()


def test_a_failed_build_leaves_nothing_to_use(cache):  # type: ignore[no-untyped-def]
    def broken(target: Path, version: str) -> None:
        (target / "lib").mkdir(parents=True)
        raise ClientVenvError("--client java:4.1.1: Maven could not fetch kafka-clients")

    with pytest.raises(ClientVenvError):
        ensure_java("4.1.1", say=lambda _: None, builder=broken)
    assert not java_dir("4.1.1").exists()
    assert [p.name for p in java_dir("4.1.1").parent.iterdir()
            if not p.name.endswith(".lock")] == []


def test_cli_unknown_java_version_exits_2_before_the_cluster(tmp_path):  # type: ignore[no-untyped-def]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg"),
           "DOCKER_HOST": "unix:///nonexistent.sock"}  # a cluster start would fail loudly
    proc = subprocess.run([sys.executable, "-m", "chaos", "run", "--client", "java:0.0.1",
                           "--out", str(tmp_path / "runs"), "--duration", "5"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "kafka-chaos: error: --client java:0.0.1: Maven could not fetch kafka-clients 0.0.1"), err
    assert "0.0.1" in err[0] and not (tmp_path / "runs").exists()
