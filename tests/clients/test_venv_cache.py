"""The client venv cache (runner/clients.py) without PyPI: where it lives, reuse, the atomic
build under a lock, pip failures as one-line bad input, and workload processes spawned with
the venv's interpreter really running there and reporting the client they loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import confluent_kafka
import pytest

from runner.clients import INFO_FILE, ClientVenvError, cache_root, ensure_client, venv_dir
from runner.config import RunConfig, RunConfigError
from runner.rundir import record_client_versions
from workloads import ProducerConfig, start_producers
from workloads.client_info import version_string

SHARED_VENV = Path(sys.prefix)  # the venv running these tests (has confluent-kafka)
INSTALLED = version_string(confluent_kafka.version())


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "kafka-chaos" / "clients"


def clone_builder(calls: list[str], delay_s: float = 0.0):
    """A builder without PyPI: a venv that reuses this test venv's site-packages (its
    pyvenv.cfg and a python link), so the probe and the children really run from it."""
    def build(target: Path, version: str) -> None:
        calls.append(version)
        time.sleep(delay_s)
        (target / "bin").mkdir(parents=True)
        cfg = (SHARED_VENV / "pyvenv.cfg").read_text()
        (target / "pyvenv.cfg").write_text(cfg)
        os.symlink(os.path.realpath(sys.executable), target / "bin" / "python")
        site = SHARED_VENV / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
        (target / "lib").mkdir()
        os.symlink(site, target / "lib" / site.name)
    return build


def test_cache_root_follows_xdg_cache_home_then_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert venv_dir("2.12.0") == (tmp_path / "x" / "kafka-chaos" / "clients"
                                  / "confluent-kafka-2.12.0")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "kafka-chaos" / "clients"


def test_first_use_builds_then_reuses_without_building(cache):
    calls: list[str] = []
    interp = ensure_client(INSTALLED, say=lambda _: None, builder=clone_builder(calls))
    assert calls == [INSTALLED]
    assert interp.venv == cache / f"confluent-kafka-{INSTALLED}"
    assert interp.python == interp.venv / "bin" / "python" and interp.python.exists()
    assert interp.confluent_kafka == INSTALLED
    assert interp.librdkafka == version_string(confluent_kafka.libversion())
    # The recorded path has no temporary folder left in it, and no PYTHONPATH entries.
    assert not any(".tmp-" in p for p in interp.sys_path)
    assert os.getcwd() not in interp.sys_path and "" not in interp.sys_path
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".lock")] == [
        f"confluent-kafka-{INSTALLED}"]
    again = ensure_client(INSTALLED, say=lambda _: None, builder=clone_builder(calls))
    assert calls == [INSTALLED] and again == interp


def test_a_failed_build_leaves_nothing_behind_and_is_retried(cache):
    def broken(target: Path, version: str) -> None:
        (target / "bin").mkdir(parents=True)
        (target / "half-built").write_text("x")
        raise ClientVenvError("--client-version 2.12.0: pip could not install it")

    with pytest.raises(ClientVenvError):
        ensure_client("2.12.0", say=lambda _: None, builder=broken)
    assert not venv_dir("2.12.0").exists()
    assert [p.name for p in cache.iterdir()] == [".confluent-kafka-2.12.0.lock"]
    # A folder without the info file (a crash mid-rename elsewhere) is not used: rebuilt.
    venv_dir(INSTALLED).mkdir(parents=True)
    calls: list[str] = []
    ensure_client(INSTALLED, say=lambda _: None, builder=clone_builder(calls))
    assert calls == [INSTALLED] and (venv_dir(INSTALLED) / INFO_FILE).exists()


def test_the_version_the_venv_imports_must_be_the_one_asked_for(cache):
    with pytest.raises(ClientVenvError, match="imports confluent-kafka"):
        ensure_client("2.0.0", say=lambda _: None, builder=clone_builder([]))
    assert not venv_dir("2.0.0").exists()


def test_two_runs_at_once_build_the_venv_once(cache):
    calls: list[str] = []
    results: list[object] = []
    builder = clone_builder(calls, delay_s=1.0)
    threads = [threading.Thread(target=lambda: results.append(
        ensure_client(INSTALLED, say=lambda _: None, builder=builder))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert calls == [INSTALLED]
    assert len(results) == 3 and len(set(map(repr, results))) == 1


def test_a_release_pip_cannot_install_is_a_one_line_error(cache, monkeypatch):
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # pip really runs, offline: nothing to find
    with pytest.raises(ClientVenvError) as e:
        ensure_client("0.0.1", say=lambda _: None)
    msg = str(e.value)
    assert "\n" not in msg and "confluent-kafka==0.0.1" in msg and "ERROR" in msg
    assert not venv_dir("0.0.1").exists()


def test_malformed_versions_are_refused_before_anything(cache):
    for bad in ("latest", "../x", "2.12.0 --index-url http://x", "2.12.0;rm"):
        with pytest.raises(RunConfigError, match="--client-version"):
            RunConfig(client_version=bad).validate()
        with pytest.raises(ClientVenvError):
            ensure_client(bad, say=lambda _: None, builder=clone_builder([]))
    RunConfig(client_version="2.12.0").validate()
    assert not cache.exists()


def test_cli_bad_client_version_exits_2_before_the_cluster(tmp_path, cache):
    env = {**os.environ, "PIP_NO_INDEX": "1", "XDG_CACHE_HOME": str(tmp_path / "xdg"),
           "DOCKER_HOST": "unix:///nonexistent.sock"}  # a cluster start would fail loudly
    proc = subprocess.run([sys.executable, "-m", "chaos", "run", "--client-version", "0.0.1",
                           "--out", str(tmp_path / "runs"), "--duration", "5"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kafka-chaos: error: --client-version 0.0.1")
    assert not (tmp_path / "runs").exists()


def test_producers_run_with_the_venv_interpreter_and_report_its_client(cache, tmp_path):
    interp = ensure_client(INSTALLED, say=lambda _: None, builder=clone_builder([]))
    (tmp_path / "run" / "history").mkdir(parents=True)
    (tmp_path / "run" / "logs").mkdir()
    cfg = ProducerConfig(rate=5, duration_s=2, extra={"message.timeout.ms": "1000"})
    group = start_producers(tmp_path / "run", "127.0.0.1:1", "t", 1, cfg, 1,
                            interpreter=interp)
    stats = group.stop(timeout_s=30)
    assert stats["p0"]["exitcode"] == 0, stats
    client = stats["p0"]["client"]
    assert client["python"] == str(interp.python)  # the venv's, not this interpreter
    assert client["confluent_kafka"] == INSTALLED
    # ...and the parent's spawn settings are back to normal afterwards.
    import multiprocessing.spawn as mp_spawn
    assert os.fsdecode(mp_spawn.get_executable()) == sys.executable
    # run.json's versions take what the children reported.
    run_json = tmp_path / "run" / "run.json"
    run_json.write_text(json.dumps({"versions": {"confluent_kafka": "x", "librdkafka": "y",
                                                 "client_reported_by": []}}))
    record_client_versions(tmp_path / "run", stats)
    v = json.loads(run_json.read_text())["versions"]
    assert v["confluent_kafka"] == INSTALLED and v["client_reported_by"] == ["p0"]
    assert v["librdkafka"] == version_string(confluent_kafka.libversion())
