"""Suite hygiene (a pytest plugin, loaded by the root conftest.py): which tests start
clusters, and proof that nothing of theirs is left behind.

- A test that requests a fixture starting a cluster (:data:`CLUSTER_FIXTURES`) is marked
  ``cluster`` at collection, so ``-m "not cluster"`` never starts one; tests that start one
  some other way (a ``kafka-chaos run`` subprocess) carry the marker in their file.
- A test that requests the ``spark`` fixture (the session's shared SparkSession) is marked
  ``spark``, so ``make unit`` can run those beside the rest.
- Every test runs with ``$KAFKA_CHAOS_EXTRA_LABELS`` naming this session and the test, so
  every container, network and volume it starts (in process, or in a subprocess) carries
  both labels (``compose.cleanup.extra_labels``).
- After each ``cluster`` test (the ``no_leaks`` fixture, autouse): nothing labelled with the
  test is left except the session's shared clusters; those hold no iptables rule, qdisc or
  delayer of ours; no delayer or dead-man watchdog process the test started still runs.
- No librdkafka client a ``cluster`` test made in this process is still alive once the test
  is wholly done (one left open reconnects for the rest of the session to addresses a later
  cluster reuses). Looked at when the next test starts, and at session end, not in the
  test's own teardown: until then pytest keeps the test's log records, whose exceptions
  hold the frames (and clients) they were raised in. Fails the session, naming the test.
- Tests marked ``nightly`` (long repetitions: a scenario again on another Kafka version, the
  examples/ suite, which repeats catalogue scenarios tests/scenarios already runs) are
  deselected from a plain ``pytest`` / ``make test`` (no paths given); ``--nightly`` (``make
  nightly``) or naming them (``pytest examples/``) runs them.
- At session end, after the shared clusters closed: nothing labelled with the session is
  left, and no test that is not marked ``cluster`` created a kafka-chaos container (Docker's
  event log says what was created, even if it was removed again). Either fails the session.

Whatever is found leaked is reported, then removed, so one leak does not outlive the run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from compose.cleanup import ENV_EXTRA_LABELS, LABEL, LABEL_CLUSTER

LABEL_SESSION = f"{LABEL}.session"
LABEL_TEST = f"{LABEL}.test"

# Fixtures whose setup starts a Kafka cluster (ours in tests/ and the pytest plugin's).
CLUSTER_FIXTURES = frozenset({"cluster", "fault_cluster", "kafka_cluster", "chaos_run",
                              "chaos_result"})
DELAYER_EXIT_S = 10.0  # a delayer notices its parent's death through a pidfd, not at once


@dataclass
class _State:
    session: str
    started: float
    tests: dict[str, tuple[str, bool]] = field(default_factory=dict)  # tid -> (nodeid, marked)
    shared: set[str] = field(default_factory=set)  # names of session-wide clusters
    problems: list[str] = field(default_factory=list)
    # librdkafka main threads a cluster test left running, looked at again once the test
    # is wholly done (nodeid, thread ids)
    clients: tuple[str, set[str]] | None = None


_STATE = pytest.StashKey[_State]()
_ACTIVE: list[_State] = []  # the running session's state, for share()


def share(cluster_name: str) -> None:
    """Declares a cluster that outlives single tests (checked when the session ends)."""
    if _ACTIVE:
        _ACTIVE[-1].shared.add(cluster_name)


def label_of(nodeid: str) -> str:
    """The label value naming one test (short, stable, any characters in the nodeid)."""
    return hashlib.sha1(nodeid.encode()).hexdigest()[:12]


def _set_labels(state: _State, tid: str | None) -> None:
    parts = [f"{LABEL_SESSION}={state.session}"]
    if tid:
        parts.append(f"{LABEL_TEST}={tid}")
    os.environ[ENV_EXTRA_LABELS] = ",".join(parts)


# ------------------------------------------------------------------ hooks
def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--nightly", action="store_true", default=False,
                     help="also run the tests marked nightly (long repetitions; make nightly)")


def pytest_configure(config: pytest.Config) -> None:
    state = _State(session="s" + secrets.token_hex(5), started=time.time())
    config.stash[_STATE] = state
    _ACTIVE.append(state)
    before = os.environ.get(ENV_EXTRA_LABELS)

    def restore() -> None:  # a session run inside another (pytester) gives the labels back
        _ACTIVE.remove(state)
        if before is None:
            os.environ.pop(ENV_EXTRA_LABELS, None)
        else:
            os.environ[ENV_EXTRA_LABELS] = before

    config.add_cleanup(restore)
    _set_labels(state, None)


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    examples = config.rootpath / "examples"
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if CLUSTER_FIXTURES & fixtures:
            item.add_marker(pytest.mark.cluster)
        if "spark" in fixtures:  # the shared SparkSession (make unit runs these apart)
            item.add_marker(pytest.mark.spark)
        if item.path.is_relative_to(examples):
            item.add_marker(pytest.mark.nightly)  # not in the file: it is there to be copied
    if config.getoption("--nightly") or config.args_source == pytest.Config.ArgsSource.ARGS:
        return  # asked for, or named on the command line
    nightly = [i for i in items if i.get_closest_marker("nightly") is not None]
    if nightly:
        config.hook.pytest_deselected(items=nightly)
        items[:] = [i for i in items if i.get_closest_marker("nightly") is None]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    state = item.config.stash[_STATE]
    tid = label_of(item.nodeid)
    state.tests[tid] = (item.nodeid, item.get_closest_marker("cluster") is not None)
    _set_labels(state, tid)
    try:
        return (yield)
    finally:
        _set_labels(state, None)


@pytest.hookimpl(trylast=True)  # after the runner tore the session's fixtures down
def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session.config.stash.get(_STATE, None)
    if state is None:
        return
    clients_still_open(state)
    client = _docker_or_none()
    if client is None:
        return  # no engine: nothing can have been started
    state.problems += left_behind(client, {LABEL_SESSION: state.session}, set())
    for tid in created_by_unmarked(client, state):
        state.problems.append(f"{state.tests[tid][0]}: started a kafka-chaos container but is "
                              "not marked cluster (add @pytest.mark.cluster)")
    if state.problems:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        remove(client, {LABEL_SESSION: state.session}, set())


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:  # noqa: ANN001
    state = config.stash.get(_STATE, None)
    if state is None or not state.problems:
        return
    terminalreporter.write_sep("=", "kafka-chaos: left behind or unmarked", red=True)
    for line in state.problems:
        terminalreporter.write_line(line, red=True)


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="session")
def docker_client():  # noqa: ANN201 - docker.DockerClient, imported lazily
    """The Docker engine. A test that needs one and finds none fails, never skips."""
    import docker

    try:
        client = docker.from_env()
        client.ping()
    except Exception as e:  # noqa: BLE001 - any failure to reach the engine is fatal here
        pytest.fail(f"a Docker engine is required (run compose/setup-host.sh): {e}")
    return client


@pytest.fixture(autouse=True)
def no_leaks(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a ``cluster`` test: nothing of its own left (see the module docstring)."""
    state = request.config.stash[_STATE]
    clients_still_open(state)
    if request.node.get_closest_marker("cluster") is None:
        yield
        return
    client = request.getfixturevalue("docker_client")
    tid = label_of(request.node.nodeid)
    clients_before = librdkafka_clients()
    yield
    state.clients = (request.node.nodeid, librdkafka_clients() - clients_before)
    problems = left_behind(client, {LABEL_TEST: tid}, state.shared)
    problems += net_state_left(client, state)
    problems += processes_left(tid)
    if problems:
        remove(client, {LABEL_TEST: tid}, state.shared)
        sweep_shared(client, state)
        pytest.fail("left behind by this test:\n  " + "\n  ".join(problems), pytrace=False)


# ------------------------------------------------------------------ checks
def _docker_or_none():  # noqa: ANN202 - docker.DockerClient, imported lazily
    try:
        import docker

        client = docker.from_env(timeout=10)
        client.ping()
    except Exception:  # noqa: BLE001 - no engine means nothing was started
        return None
    return client


def _filters(labels: dict[str, str]) -> dict[str, list[str]]:
    return {"label": [f"{k}={v}" for k, v in labels.items()]}


def _resources(client, labels: dict[str, str]):  # noqa: ANN001, ANN202
    f = _filters(labels)
    for c in client.containers.list(all=True, filters=f, ignore_removed=True):
        yield "container", c.name, c.labels, c
    for n in client.networks.list(filters=f):
        yield "network", n.name, n.attrs.get("Labels") or {}, n
    for v in client.volumes.list(filters=f):
        yield "volume", v.name, v.attrs.get("Labels") or {}, v


def left_behind(client, labels: dict[str, str], shared: set[str]) -> list[str]:  # noqa: ANN001
    """Containers, networks and volumes carrying ``labels``, outside the shared clusters."""
    return [f"{kind} {name} (cluster {lab.get(LABEL_CLUSTER)})"
            for kind, name, lab, _ in _resources(client, labels)
            if lab.get(LABEL_CLUSTER) not in shared]


def remove(client, labels: dict[str, str], shared: set[str]) -> None:  # noqa: ANN001
    """Removes what :func:`left_behind` found."""
    import docker

    for kind, _, lab, obj in list(_resources(client, labels)):
        if lab.get(LABEL_CLUSTER) in shared:
            continue
        with contextlib.suppress(docker.errors.APIError):
            obj.remove(force=True, v=True) if kind == "container" else (
                obj.remove(force=True) if kind == "volume" else obj.remove())


def net_state_left(client, state: _State) -> list[str]:  # noqa: ANN001
    """Our iptables rules, qdiscs and delayers inside the shared clusters' running nodes."""
    from nemesis.net import iptables, tc
    from nemesis.net.netns import NamespaceGone, NetNS
    from nemesis.net.sweep import delayer_pids

    out: list[str] = []
    running = client.containers.list(filters=_filters({LABEL_SESSION: state.session}),
                                     ignore_removed=True)
    for c in running:
        if c.labels.get(LABEL_CLUSTER) not in state.shared:
            continue
        pid = int((c.attrs.get("State") or {}).get("Pid") or 0)
        if not pid:
            continue
        try:
            ns = NetNS.from_pid(pid)
            out += [f"{c.name}: iptables {line}" for line in iptables.ours_in_save(ns)]
            qdiscs = json.loads(ns.run(["tc", "-j", "qdisc", "show"], check=False).stdout
                                or "[]")
            out += [f"{c.name}: qdisc {q.get('handle')} on {q.get('dev')}" for q in qdiscs
                    if q.get("handle") == tc.ROOT_HANDLE]
            out += [f"{c.name}: delayer pid {p}" for p in delayer_pids(ns)]
        except NamespaceGone:
            continue  # stopped meanwhile: its rules went with it
    return out


def sweep_shared(client, state: _State) -> None:  # noqa: ANN001
    """Removes our rules, qdiscs and delayers from the shared clusters' running nodes."""
    from nemesis.net.netns import NamespaceGone, NetNS
    from nemesis.net.sweep import sweep

    for c in client.containers.list(filters=_filters({LABEL_SESSION: state.session}),
                                    ignore_removed=True):
        pid = int((c.attrs.get("State") or {}).get("Pid") or 0)
        if c.labels.get(LABEL_CLUSTER) in state.shared and pid:
            with contextlib.suppress(NamespaceGone):
                sweep(NetNS.from_pid(pid))


def _environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""


def processes_left(tid: str) -> list[str]:
    """Processes started during the test (they inherit its labels) still running: delayers,
    and dead-man watchdogs (a switch not disarmed, or one that has not fired yet)."""
    from nemesis.dead_man_watchdog import MARK
    from nemesis.net.sweep import DELAYER_MARK, pids_marked

    label = f"{LABEL_TEST}={tid}".encode()
    deadline = time.monotonic() + DELAYER_EXIT_S
    while True:
        found = [f"{what} process {p}"
                 for what, mark in (("delayer", DELAYER_MARK), ("dead-man watchdog", MARK))
                 for p in pids_marked(mark) if label in _environ(p)]
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)  # polling foreign processes' exit: there is no handle to wait on


def librdkafka_clients() -> set[str]:
    """Thread ids of this process's librdkafka main threads: one per live client handle."""
    out = set()
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError):
            if (task / "comm").read_text().strip() == "rdk:main":
                out.add(task.name)
    return out


def clients_still_open(state: _State) -> None:
    """The last cluster test's librdkafka clients that are still alive after a garbage
    collection (a handle is destroyed, and its threads joined, when its Python object goes)
    become a problem of the session."""
    import gc

    if state.clients is None:
        return
    nodeid, made = state.clients
    state.clients = None
    if not made:
        return
    gc.collect()
    left = made & librdkafka_clients()
    if left:
        state.problems.append(f"{nodeid}: left {len(left)} librdkafka client(s) open (close "
                              "or drop them): " + "; ".join(_who_holds_clients()))


def _who_holds_clients() -> list[str]:
    """Each live confluent-kafka client object and what refers to it (type, or the frame
    of the function whose local it is): where to look for the one left open."""
    import gc

    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient

    out: list[str] = []
    clients = [o for o in gc.get_objects() if isinstance(o, (Producer, Consumer, AdminClient))]
    for obj in clients:
        held = [f"frame {r.f_code.co_name} ({Path(r.f_code.co_filename).name})"
                if hasattr(r, "f_code") else type(r).__name__ for r in gc.get_referrers(obj)
                if r is not clients]
        out.append(f"{type(obj).__name__} held by {', '.join(held[:4]) or 'nothing'}")
    return out


def created_by_unmarked(client, state: _State) -> list[str]:  # noqa: ANN001
    """Test ids of tests not marked ``cluster`` that created a kafka-chaos container."""
    events = client.events(since=int(state.started) - 1, until=int(time.time()) + 1,
                           decode=True, filters={"type": "container", "event": "create",
                                                 "label": f"{LABEL_SESSION}={state.session}"})
    found: list[str] = []
    for ev in events:
        tid = ((ev.get("Actor") or {}).get("Attributes") or {}).get(LABEL_TEST)
        known = state.tests.get(tid or "")
        if (known is None or not known[1]) and tid not in found:
            found.append(tid or "")
            state.tests.setdefault(tid or "", ("(outside any test)", False))
    return found
