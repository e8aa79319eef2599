"""tests/lanes.py: two pytest sessions given one claims directory run every test exactly
once between them, whole files per session, and tear fixtures down only when due."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = 6

CONFTEST = """
import os, time
import pytest

pytest_plugins = ["tests.lanes"]

def _log(line):
    with open(os.environ["LANES_LOG"], "a") as fh:
        fh.write(line + "\\n")

def pytest_sessionstart(session):
    _log(f"start {os.getpid()}")

def _owners():  # the pids that claimed a file (a claim reads "file pid" once written)
    d = os.environ["LANES_CLAIMS"]
    owners = set()
    for name in os.listdir(d):
        with open(os.path.join(d, name)) as fh:
            owners.update(fh.read().split()[1:])
    return owners

@pytest.fixture(scope="session")
def shared():
    _log(f"session-setup {os.getpid()}")
    yield
    _log(f"session-teardown {os.getpid()}")

@pytest.fixture(scope="module")
def per_file(request):
    _log(f"module-setup {request.module.__name__} {os.getpid()}")
    # Both lanes hold a file before any file ends: each then runs at least one.
    deadline = time.monotonic() + 60
    while len(_owners()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    yield
    _log(f"module-teardown {request.module.__name__} {os.getpid()}")
"""

TEST_FILE = """
import os
def _log(line):
    with open(os.environ["LANES_LOG"], "a") as fh:
        fh.write(line + "\\n")
def test_a(shared, per_file):
    _log(f"test {{__name__}}::test_a {{os.getpid()}}")
def test_b(shared, per_file):
    _log(f"test {{__name__}}::test_b {{os.getpid()}}")
"""


def _lane(cwd: Path, claims: Path, log: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "LANES_LOG": str(log), "LANES_CLAIMS": str(claims),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--lane-claims={claims}",
         "-q"],
        cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_two_lanes_run_every_test_once_with_whole_files(tmp_path: Path) -> None:
    # as make test runs them: the plugin named by the project's conftest, the claims
    # directory outside the project, the option in its "=" form (given as two arguments,
    # pytest takes the directory for the tests' root and never loads the conftest)
    project = tmp_path / "project"
    project.mkdir()
    (project / "conftest.py").write_text(CONFTEST)
    for i in range(FILES):
        (project / f"test_f{i}.py").write_text(TEST_FILE.format())
    claims = tmp_path / "claims"
    claims.mkdir()
    log = tmp_path / "lanes.log"
    log.touch()
    lanes = [_lane(project, claims, log) for _ in range(2)]
    outs = [lane.communicate(timeout=120)[0] for lane in lanes]
    assert [lane.returncode for lane in lanes] == [0, 0], outs
    rows = [line.split() for line in log.read_text().splitlines()]
    pids = {str(lane.pid) for lane in lanes}
    tests = Counter(r[1] for r in rows if r[0] == "test")
    assert tests == Counter({f"test_f{i}::test_{t}": 1 for i in range(FILES) for t in "ab"})
    file_pid = {r[1]: r[2] for r in rows if r[0] == "module-setup"}
    assert len(file_pid) == FILES and set(file_pid.values()) == pids, rows
    for r in rows:
        if r[0] == "test":  # a file's tests run where its module fixture was set up
            assert r[2] == file_pid[r[1].split("::")[0]], rows
    # one session fixture per lane, torn down once, after that lane's last test
    for pid in pids:
        mine = [r[0] for r in rows if r[-1] == pid]
        assert mine.count("session-setup") == 1 and mine[-1] == "session-teardown", mine
        assert mine.count("module-setup") == mine.count("module-teardown") >= 1, mine
    assert len(list(claims.iterdir())) == FILES
    assert all("ran the tests of" in out for out in outs), outs


def test_a_missing_claims_directory_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.lanes", "-p", "no:cacheprovider",
         "--lane-claims", str(tmp_path / "absent")],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 4, res.stdout + res.stderr
    assert "no such directory" in res.stdout + res.stderr


def test_a_claims_directory_removed_mid_run_stops_the_session_with_a_usage_error(
        tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "conftest.py").write_text('pytest_plugins = ["tests.lanes"]\n')
    claims = tmp_path / "claims"
    claims.mkdir()
    # the first test removes the directory; the second file was claimed before it ran (one
    # ahead), the third cannot be
    (project / "test_f0.py").write_text(
        "import shutil\n"
        f"def test_remove():\n    shutil.rmtree({str(claims)!r})\n")
    for i in (1, 2):
        (project / f"test_f{i}.py").write_text("def test_one():\n    pass\n")
    log = tmp_path / "lanes.log"
    lane = _lane(project, claims, log)
    out = lane.communicate(timeout=120)[0]
    assert lane.returncode == 4, out
    assert "the directory was removed while the tests ran" in out, out
    assert "test_f2.py" in out and "INTERNALERROR" not in out, out
