"""pytest plugin for kafka-chaos (registered through the ``pytest11`` entry point).

Write a chaos test::

    @pytest.mark.chaos("safe-config-chaos", duration=30, expect_valid=True)
    def test_safe(chaos_result):
        assert chaos_result.acked > 0

    @pytest.mark.chaos(acks="1", faults=["kill"], fault_interval=5, expect={"lost": ">0"})
    def test_acks1(chaos_run):
        chaos_run(targets=["leader"])

    @pytest.mark.chaos_matrix(acks=["1", "all"], unclean=[False, True], faults=["kill", "pause"])
    @pytest.mark.chaos(duration=30, expect_valid=True)
    def test_matrix(chaos_result): ...

Fixtures: ``chaos_options``, ``kafka_cluster_config``, ``kafka_cluster`` (scope from
``--chaos-cluster-scope``), ``chaos_cell``, ``chaos_runner``, ``chaos_run``, ``chaos_result``,
``chaos_check``, and ``chaos`` (faults and recorded clients in the test body's own code)::

    def test_my_producer(chaos, kafka_cluster):
        kafka_cluster.create_topic("orders", partitions=1)
        producer = chaos.producer(acks="all", enable_idempotence=True)
        with chaos.kill("leader", topic="orders", partition=0):
            producer.produce("orders", b"my own value")
            producer.flush(60)
        assert chaos.check("orders").count("lost") == 0

Marker: ``chaos(scenario=None, *, expect=None, expect_valid=None,
scenario_expectations=True, **run_options)`` (``accept_known=["librdkafka#4953"]`` accepts
known bugs, as ``--accept-known`` does) and ``chaos_matrix(**axes)``. Options: see
``pytest --help`` under "kafka-chaos". Every run is listed in a terminal summary; its verdict,
anomaly counts and report path go into failures and into JUnit properties.

Judging: after a passing body, each run must meet the test's ``expect``/``expect_valid`` and,
besides (``expect`` adds to them), its scenario's own expectations
(``scenario_expectations=False`` leaves those out); where neither states a verdict the run
must be valid. ``ChaosResult.count(kind)`` raises ``CountNotEstablished`` (an AssertionError)
on an unknown verdict or an unchecked kind, so ``count("lost") == 0`` never passes on a run
that proved nothing.

Loading this module must stay cheap (it loads in every pytest session of the environment):
Docker, Spark and the orchestrator are imported inside the fixtures that need them.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from chaos.plugin_config import (
    ChaosOptions,
    Options,
    build_run,
    resolve,
    run_options,
    spec_of,
)
from chaos.plugin_matrix import cell_id, cells
from chaos.plugin_result import (
    ChaosResult,
    ChaosRunError,
    Expectation,
    Miss,
    implied_misses,
    scenario_misses,
)

if TYPE_CHECKING:
    from chaos.user_api import ChaosSession
    from compose.cluster import KafkaCluster
    from compose.config import ClusterConfig
    from compose.stop_signals import StopSignals
    from runner.config import RunConfig
    from scenarios.base import Scenario

__all__ = ["ChaosOptions", "ChaosResult", "ChaosRunError", "Expectation"]

Runner = Callable[["RunConfig", "Scenario | None"], ChaosResult]
_MARKERS = (
    "chaos(scenario=None, *, expect=None, expect_valid=None, scenario_expectations=True, "
    "**run_options): a kafka-chaos test: the scenario or run options its chaos_run / "
    "chaos_result use, and what the run must show (expect={'lost': 0}, expect_valid=True)",
    "chaos_matrix(**axes): run the test once per combination, e.g. acks=['1', 'all'], "
    "unclean=[False, True], faults=['kill', 'pause'] (fixture chaos_cell)",
)



@dataclass
class _Record:
    """A run made (or checked) by one test, waiting to be judged and summarised."""

    result: ChaosResult
    expectation: Expectation
    scenario_expectations: bool
    misses: list[Miss] = field(default_factory=list)


_RECORDS = pytest.StashKey[list[_Record]]()
_SUMMARY = pytest.StashKey[list[tuple[str, str, _Record]]]()


# ---------------------------------------------------------------------- options, markers
def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("kafka-chaos", "kafka-chaos: chaos tests of real Apache Kafka")
    g.addoption("--kafka-version", default=None,
                help="Kafka version of every cluster and chaos run (e.g. 4.1.1, 3.9.1)")
    g.addoption("--chaos-image", default=None,
                help="use this Kafka image as is, e.g. apache/kafka:4.1.1")
    g.addoption("--chaos-duration", type=float, default=None,
                help="seconds of workload of every chaos run (wins over markers)")
    g.addoption("--chaos-seed", type=int, default=None,
                help="seed of the fault schedule of every chaos run")
    g.addoption("--chaos-brokers", type=int, default=None,
                help="brokers of kafka_cluster and of every chaos run")
    g.addoption("--chaos-runs-dir", default=None,
                help="where run directories go (default: <rootdir>/runs/pytest)")
    g.addoption("--chaos-accept-known", default=None, metavar="ID[,ID]",
                help="known bugs (e.g. librdkafka#4953) every chaos run accepts")
    g.addoption("--chaos-cluster-scope", default="session",
                choices=["session", "package", "module", "class", "function"],
                help="scope of the kafka_cluster fixture (default: session)")


def pytest_configure(config: pytest.Config) -> None:
    for line in _MARKERS:
        config.addinivalue_line("markers", line)
    config.stash[_SUMMARY] = []
    _terminate_as_interrupt(config)


def _terminate_as_interrupt(config: pytest.Config) -> None:
    """Ctrl-C, SIGTERM and SIGHUP end the session alike, and only the first one does: pytest
    stops, tears every fixture down (clusters, faults, workload processes) and exits 2; a
    signal during that teardown is counted and acknowledged, not raised, so it cannot cut a
    cluster's removal short (``compose.stop_signals.StopSignals``). By default SIGTERM and
    SIGHUP kill the process on the spot, and a second Ctrl-C raises wherever the teardown
    is; both leave the session's clusters running until the next start sweeps them. A
    handler someone else installed is left alone; the old handlers come back when the
    session ends."""
    from compose.stop_signals import StopSignals, install, unguarded_default

    stop = StopSignals(interrupt=True)
    config.add_cleanup(install(stop, unguarded_default))
    config.pluginmanager.register(_SessionGuard(stop), "kafka-chaos-session-guard")


class _SessionGuard:
    """Keeps the session's signal guard in step with pytest (registered as a plugin)."""

    def __init__(self, stop: StopSignals) -> None:
        self.stop = stop

    def pytest_keyboard_interrupt(self) -> None:
        """The session is interrupted and its teardown comes next, whoever raised: this
        guard, a chaos run's own (that stopped the run; ``chaos_run`` then raises
        KeyboardInterrupt) or PySpark's. From now on signals are only counted."""
        self.stop.disarm()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        """A signal that stopped a chaos run in this test ends the session once the test is
        torn down, whatever the test made of the run's interrupted result (one calling
        ``runner.orchestrator.run`` itself may assert on it and fail, and go on): the user
        asked to stop. (A lane of our own suite ran on after a SIGTERM for this reason.)"""
        from compose.stop_signals import stopped_blocks

        before = stopped_blocks()
        result = yield
        if stopped_blocks() > before:
            raise KeyboardInterrupt(f"a signal stopped a chaos run in {item.nodeid}")
        return result

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self) -> None:
        """A test starts: a signal that disarmed the guard did not end the session (the
        test it interrupted caught it), so the next one must raise again."""
        self.stop.rearm()


def _options(config: pytest.Config) -> ChaosOptions:
    runs = config.getoption("--chaos-runs-dir")
    return ChaosOptions(
        kafka_version=config.getoption("--kafka-version"),
        image=config.getoption("--chaos-image"),
        duration=config.getoption("--chaos-duration"),
        seed=config.getoption("--chaos-seed"),
        brokers=config.getoption("--chaos-brokers"),
        accept_known=[x.strip() for x in (config.getoption("--chaos-accept-known") or "")
                      .split(",") if x.strip()] or None,
        runs_dir=Path(runs) if runs else config.rootpath / "runs" / "pytest",
        cluster_scope=config.getoption("--chaos-cluster-scope"))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``@pytest.mark.chaos_matrix(...)`` → one test per cell, parameter ``chaos_cell``."""
    marker = metafunc.definition.get_closest_marker("chaos_matrix")
    if marker is None:
        return
    if "chaos_cell" not in metafunc.fixturenames:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: chaos_matrix needs the "
                                "chaos_run, chaos_result or chaos_cell fixture")
    try:
        grid = cells(**marker.kwargs)
    except ValueError as e:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: {e}") from None
    metafunc.parametrize("chaos_cell", grid, ids=[cell_id(c) for c in grid])



def _record(item: pytest.Item, result: ChaosResult, cfg: RunConfig | None,
            expect: Any, expect_valid: Any) -> None:
    spec = spec_of(item)
    exp = spec.expect if expect is None else expect
    exp_valid = spec.expect_valid if expect_valid is None else expect_valid
    if cfg is not None:
        exp, exp_valid = resolve(exp, cfg), resolve(exp_valid, cfg)
    elif callable(exp) or callable(exp_valid):
        # chaos_check has no RunConfig to call them with: run.json's options stand in.
        opts = (run_options(result.run_dir) or {})
        exp, exp_valid = resolve(exp, Options(opts)), resolve(exp_valid, Options(opts))
    try:
        expectation = Expectation.of(exp, exp_valid)
    except ValueError as e:
        pytest.fail(f"bad chaos expectation: {e}", pytrace=False)
    item.stash.setdefault(_RECORDS, []).append(
        _Record(result, expectation, spec.scenario_expectations))
    item.user_properties.extend(result.properties())


# ---------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def chaos_options(pytestconfig: pytest.Config) -> ChaosOptions:
    """The plugin's command-line options."""
    return _options(pytestconfig)


@pytest.fixture(scope="session")
def kafka_cluster_config(chaos_options: ChaosOptions) -> ClusterConfig:
    """What ``kafka_cluster`` starts: override this fixture to change brokers or settings."""
    from compose.config import FAST_FAULTS, ClusterConfig

    cfg = ClusterConfig(brokers=chaos_options.brokers or 3, image=chaos_options.image,
                        broker_config=dict(FAST_FAULTS))
    if chaos_options.kafka_version:
        cfg.kafka_version = chaos_options.kafka_version
    return cfg


def _cluster_scope(fixture_name: str, config: pytest.Config) -> Any:
    return config.getoption("--chaos-cluster-scope")


@pytest.fixture(scope=_cluster_scope)
def kafka_cluster(kafka_cluster_config: ClusterConfig) -> Iterator[KafkaCluster]:
    """A running KRaft cluster (``.bootstrap_servers``, ``.create_topic``, ``.node(id)``),
    removed afterwards. No Docker engine is a failure of the test, never a skip."""
    from compose.cluster import KafkaCluster

    # A fresh name per cluster: a narrow scope starts several from one config.
    cfg = dataclasses.replace(kafka_cluster_config, name="kc" + secrets.token_hex(3),
                              broker_config=dict(kafka_cluster_config.broker_config))
    with KafkaCluster(cfg) as cluster:
        yield cluster


@pytest.fixture
def chaos_cell() -> dict[str, Any]:
    """This test's cell of a ``chaos_matrix`` (empty when the test has no matrix)."""
    return {}


def _orchestrator_runner(cfg: RunConfig, scenario: Scenario | None) -> ChaosResult:
    from runner.orchestrator import run
    from runner.progress import Progress

    # Built here so it writes to the stream pytest captures now (shown on failure; live
    # on a terminal with -s).
    outcome = run(cfg, scenario, progress=Progress())
    if outcome.interrupted:
        raise KeyboardInterrupt
    return ChaosResult.from_outcome(outcome)


@pytest.fixture(scope="session")
def chaos_runner() -> Runner:
    """Runs one configuration and returns its result: the real orchestrator (cluster,
    workload, faults, drain, PySpark check, report). Override to run elsewhere."""
    return _orchestrator_runner


@pytest.fixture
def chaos_run(request: pytest.FixtureRequest, chaos_options: ChaosOptions,
              chaos_cell: dict[str, Any], chaos_runner: Runner) -> Callable[..., ChaosResult]:
    """``chaos_run(scenario=None, *, expect=None, expect_valid=None, **run_options)``: one
    chaos run, configured by the marker, the command line, the matrix cell and these keywords.
    Its expectations are judged when the test body ends."""
    item = request.node

    def run(scenario: str | None = None, *, expect: Any = None, expect_valid: Any = None,
            **run_options: Any) -> ChaosResult:
        if scenario is not None:
            run_options["scenario"] = scenario
        cfg, sc = build_run(item, chaos_options, chaos_cell, run_options)
        result = chaos_runner(cfg, sc)
        if chaos_cell:
            result.label = f"{cfg.scenario} [{cell_id(chaos_cell)}]"
        else:
            result.label = result.label or cfg.scenario
        _record(item, result, cfg, expect, expect_valid)
        if result.results is None:
            raise ChaosRunError("the chaos run produced no checked result\n" + result.describe())
        return result

    return run


@pytest.fixture
def chaos_result(chaos_run: Callable[..., ChaosResult]) -> ChaosResult:
    """The result of the chaos run the test's marker declares (run before the test body)."""
    return chaos_run()


@pytest.fixture
def chaos_check(request: pytest.FixtureRequest) -> Callable[..., ChaosResult]:
    """``chaos_check(run_dir, *, recheck=False, spark_master=None, expect=None,
    expect_valid=None)``: the checker's result of an existing run directory (checked now
    when it has no results.json, or when ``recheck``), judged like a chaos run."""
    item = request.node

    def check(run_dir: str | Path, *, recheck: bool = False, spark_master: str | None = None,
              expect: Any = None, expect_valid: Any = None) -> ChaosResult:
        run_dir = Path(run_dir)
        if not (run_dir / "history").is_dir() and not (run_dir / "results.json").exists():
            raise ChaosRunError(f"{run_dir} is not a run directory")
        if recheck or not (run_dir / "results.json").exists():
            from checkers import check_run

            check_run(run_dir, spark_master=spark_master)
        result = ChaosResult.from_run_dir(run_dir, label=run_dir.name)
        _record(item, result, None, expect, expect_valid)
        return result

    return check


@pytest.fixture
def chaos(request: pytest.FixtureRequest, kafka_cluster: KafkaCluster,
          chaos_options: ChaosOptions) -> Iterator[ChaosSession]:
    """Faults and recorded clients for the test body's own code, over ``kafka_cluster``
    (``chaos.user_api.ChaosSession``): ``with chaos.kill("leader", topic="orders",
    partition=0): ...``, ``chaos.producer(...)``, ``chaos.check("orders")``. Every fault is
    an event of the session's run directory; teardown heals, also when the body raised.
    A ``check()`` result is judged and summarised like a chaos run's."""
    from chaos.user_api import ChaosSession

    item = request.node
    # the marker's accept_known=[...] and --chaos-accept-known, as for chaos runs
    accept = [*(spec_of(item).config.get("accept_known") or ()),
              *(chaos_options.accept_known or ())]
    session = ChaosSession.open(kafka_cluster, out=chaos_options.runs_dir / "user",
                                name=item.name, seed=chaos_options.seed or 0,
                                accept_known=list(dict.fromkeys(accept)))
    # Recorded when check() returns, so the test's expectations judge it after the body.
    session.on_result = lambda result: _record(item, result, None, None, None)
    try:
        yield session
    finally:
        session.close()


# ---------------------------------------------------------------------- hooks
@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """After a passing test body, judges each of its runs against the expectations."""
    out = yield
    failed: list[str] = []
    for rec in item.stash.get(_RECORDS, []):
        # the test's own expectations, and the scenario's besides (``expect`` adds to
        # them); a verdict neither states is ``valid``
        rec.misses = rec.expectation.misses(rec.result)
        if rec.scenario_expectations:
            rec.misses += [m for m in scenario_misses(rec.result) if m not in rec.misses]
        rec.misses += implied_misses(rec.expectation, rec.result)
        item.user_properties.append(
            ("chaos.expectations", "; ".join(map(str, rec.misses)) or "met"))
        if rec.misses:
            failed.append("\n".join(["chaos expectations not met:",
                                     *(f"  {m}" for m in rec.misses),
                                     rec.result.describe()]))
    if failed:
        pytest.fail("\n\n".join(failed), pytrace=False)
    return out


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None],
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Attaches each run's verdict, counts and report path to the report (shown with
    failures) and lists the test in the terminal summary."""
    report: pytest.TestReport = yield
    records = item.stash.get(_RECORDS, [])
    final = report.when == "call" or (report.when == "setup" and not report.passed)
    if records and final:
        report.sections.append(
            ("kafka-chaos", "\n".join(r.result.describe() for r in records)))
        rows = item.config.stash.get(_SUMMARY, [])
        rows.extend((item.nodeid, report.outcome, r) for r in records)
    return report


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int,
                            config: pytest.Config) -> None:
    rows = config.stash.get(_SUMMARY, [])
    if not rows:
        return
    tr = terminalreporter
    tr.write_sep("=", f"kafka-chaos: {len(rows)} chaos run(s)")
    for nodeid, outcome, rec in rows:
        colour = {"passed": {"green": True}, "failed": {"red": True}}.get(outcome,
                                                                           {"yellow": True})
        tr.write(f"{outcome.upper():<7}", **colour)
        tr.write_line(f" {nodeid}")
        tr.write_line(f"        {rec.result.summary_line()}")
        for miss in rec.misses:
            tr.write_line(f"        {miss}", red=True)
