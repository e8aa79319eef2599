"""The suite's hang guard (tests/hang_guard.py), in pytest sessions of their own with a 2 s
limit: a test hung in Python fails and the session goes on; a test hung in C (a
condition-variable wait no signal interrupts, as librdkafka's was) ends the session with
status 3, its stacks on stderr, its container and child process removed."""

from __future__ import annotations

import re
import time
from pathlib import Path

import docker
import pytest

from compose.cleanup import LABEL
from tests.hang_guard import EXIT_HUNG

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
_FAST = ["-p", "no:cacheprovider", "-o", "hang_limit_s=2", "-o", "hang_grace_s=2"]


@pytest.fixture
def session(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the inner session imports tests.*
    pytester.makeconftest('pytest_plugins = ["tests.hygiene", "tests.hang_guard"]\n')
    return pytester


def test_a_test_hung_in_python_fails_and_the_session_goes_on(session: pytest.Pytester) -> None:
    session.makepyfile("""
import time

def test_hangs():
    try:
        time.sleep(120)
    except Exception:  # a test's own handler must not swallow the guard's error
        pass

def test_after():
    pass
""")
    t0 = time.monotonic()
    res = session.runpytest_subprocess(*_FAST, timeout=100)
    assert time.monotonic() - t0 < 60
    res.assert_outcomes(passed=1, failed=1)
    res.stdout.fnmatch_lines(["*HangLimit: test_a_test_hung_in_python*test_hangs ran longer "
                              "than hang_limit_s = 2 s*"])
    # the stacks are in the failure's captured stderr
    res.stdout.fnmatch_lines(["*Captured stderr call*",
                              "*hang guard: *test_hangs still running after 2 s*",
                              "*in test_hangs*"])


@pytest.mark.cluster
def test_a_test_hung_in_c_ends_the_session_and_leaves_nothing(
        session: pytest.Pytester, docker_client: docker.DockerClient) -> None:
    image = docker_client.images.list(name="kafka-chaos/base")[0].tags[0]
    session.makepyfile(f"""
import ctypes, os, subprocess

import docker

from compose.cleanup import extra_labels

def test_hangs_in_c():
    labels = {{**extra_labels(), "{LABEL}": "1"}}
    c = docker.from_env().containers.run("{image}", "sleep 600", detach=True, labels=labels)
    child = subprocess.Popen(["sleep", "600"])
    print("STARTED", c.name, child.pid, flush=True)
    libc = ctypes.CDLL("libc.so.6")
    mutex, cond = ctypes.create_string_buffer(64), ctypes.create_string_buffer(64)
    libc.pthread_mutex_lock(mutex)
    libc.pthread_cond_wait(cond, mutex)  # glibc resumes the wait after a signal: for good

def test_never_reached():
    pass
""")
    t0 = time.monotonic()
    res = session.runpytest_subprocess(*_FAST, timeout=120)
    assert time.monotonic() - t0 < 90
    assert res.ret == EXIT_HUNG, res.stdout.str() + res.stderr.str()
    started = re.search(r"STARTED (\S+) (\d+)", res.stdout.str())
    assert started, res.stdout.str()
    name, pid = started.groups()
    res.stderr.fnmatch_lines(["*test_hangs_in_c is stuck where a signal cannot reach it*",
                              "*in test_hangs_in_c*"])
    assert "test_never_reached" not in res.stdout.str()
    try:
        assert not docker_client.containers.list(all=True, filters={"name": name})
    finally:
        for c in docker_client.containers.list(all=True, filters={"name": name}):
            c.remove(force=True)
    assert not _alive(int(pid))


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie is dead (its parent, the inner pytest, is gone)
