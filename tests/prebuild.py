"""Builds the client drivers the session's tests use, in the background, as it starts.

A driver's first build on a fresh machine (Maven's or the Go proxy's downloads, then the
compile) takes minutes; built by the first test that needs it, it would hold that test's
cluster lane the while (runner/clients.build_cached lets only one process build, the others
wait). Started when the collected tests include a driver's, the build runs beside the
session's first tests; a test that needs the driver then finds it, or waits for the same
build, and a build that fails is built again, and reported, by that test.
"""

from __future__ import annotations

import contextlib
import threading

import pytest

from tests.support.clients import DRIVEN

#: Test files whose tests drive the clients of DRIVEN.
USERS = ("test_java_driver.py", "test_go_drivers.py", "test_client_runs.py")
_thread: threading.Thread | None = None


def _build() -> None:
    from contract.clients import parse_client
    from runner.clients import ensure_driver

    for client in DRIVEN:
        # a failed build: the test that needs the driver builds it again, and fails
        with contextlib.suppress(Exception):
            ensure_driver(parse_client(client), say=lambda _: None)


@pytest.hookimpl(trylast=True)  # after -m and the lanes have chosen the session's tests
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    global _thread
    if config.option.collectonly or _thread is not None:
        return
    if any(item.path.name in USERS for item in items):
        _thread = threading.Thread(target=_build, name="kc-prebuild-drivers", daemon=True)
        _thread.start()


def pytest_sessionfinish(session: pytest.Session) -> None:
    # A build still running (a session shorter than a build) ends before the session's
    # checks for leftovers: its Maven or go process is a child of this one.
    if _thread is not None:
        _thread.join()
