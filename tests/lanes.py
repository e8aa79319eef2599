"""Cluster tests in lanes (a pytest plugin, loaded by the root conftest.py): several pytest
sessions collect the same tests and share them out file by file while they run.

``make test`` starts two sessions of ``pytest -m cluster --lane-claims=DIR`` on one empty
directory. Each session runs a file only after claiming it there (an exclusive create of a
file named after it), in collection order, and claims its next file as the last test of the
current one starts (pytest tears a test's module and session fixtures down by what the next
test needs, so the next one has to be known). A lane that finds everything claimed ends.
Whole files go to one lane, so a module's cluster stays in one session; each lane is an
ordinary pytest session (its own shared cluster, signal guard and hygiene checks), so a
Ctrl-C or SIGTERM is handled as without lanes.

Why lanes rather than pytest-xdist: a Ctrl-C ends xdist's workers after a short timeout,
which can cut a cluster's removal short; two plain sessions remove their own.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

_CLAIMED = pytest.StashKey[list[str]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--lane-claims", metavar="DIR", default=None,
        help="--lane-claims=DIR (the \"=\" form: a separate DIR would be taken for the tests' "
             "root): share the collected tests, file by file, with the other pytest sessions given "
             "the same (empty, existing) directory (tests/lanes.py)")


def _claim(claims: Path, file: str) -> bool:
    """True if this session is the first to claim ``file``."""
    name = hashlib.sha256(file.encode()).hexdigest()[:32]
    try:
        fd = os.open(claims / name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    except FileNotFoundError:  # the lanes cannot tell who ran what any more
        raise pytest.UsageError(f"--lane-claims {claims}: the directory was removed while the "
                                f"tests ran; this session stops before {file}") from None
    with os.fdopen(fd, "w") as fh:
        fh.write(f"{file} {os.getpid()}\n")
    return True


def _files(items: list[pytest.Item]) -> dict[str, list[pytest.Item]]:
    """The items by file, in collection order."""
    groups: dict[str, list[pytest.Item]] = {}
    for item in items:
        groups.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    return groups


def _claimed_items(session: pytest.Session, claims: Path) -> Iterator[pytest.Item]:
    """The items of the files this session claims, claiming each file only when its first
    item is asked for (the caller asks one item ahead)."""
    ran = session.config.stash[_CLAIMED]
    for file, group in _files(session.items).items():
        if _claim(claims, file):
            ran.append(file)
            yield from group


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    claims = session.config.getoption("--lane-claims")
    if claims is None or session.config.option.collectonly:
        return None
    path = Path(claims)
    if not path.is_dir():
        raise pytest.UsageError(f"--lane-claims {claims}: no such directory")
    session.config.stash[_CLAIMED] = []
    items = _claimed_items(session, path)
    item = next(items, None)
    while item is not None:
        nextitem = next(items, None)  # claims the next file before this test's teardown
        item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        if session.shouldfail:
            raise session.Failed(session.shouldfail)
        if session.shouldstop:
            raise session.Interrupted(session.shouldstop)
        item = nextitem
    return True


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter,
                            config: pytest.Config) -> None:
    ran = config.stash.get(_CLAIMED, None)
    if ran is not None:
        terminalreporter.write_line(
            f"lane {os.getpid()}: ran the tests of {len(ran)} file(s); the other lanes sharing "
            f"{config.getoption('--lane-claims')} ran the rest: {' '.join(ran)}")
