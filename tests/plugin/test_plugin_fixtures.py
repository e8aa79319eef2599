"""The plugin in a pytest session of its own (pytester), with a fake runner: fixtures,
options, marker expectations that pass and fail, the matrix, the summary, JUnit properties."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

pytest_plugins = ["pytester"]

CONFTEST = """
import pytest
from tests.plugin.fakes import fake_runner

@pytest.fixture(scope="session")
def chaos_runner():
    return fake_runner
"""

# Test files read the configuration the fake runner saw back from run.json.
HEADER = """
import json
import pytest

def options(result):
    return json.loads((result.run_dir / "run.json").read_text())["options"]
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    return pytester


def test_options_are_listed_in_help(pytester: pytest.Pytester) -> None:
    out = pytester.runpytest("--help").stdout.str()
    for opt in ("--kafka-version", "--chaos-duration", "--chaos-runs-dir", "--chaos-seed",
                "--chaos-brokers", "--chaos-cluster-scope", "--chaos-image"):
        assert opt in out


def test_markers_are_registered(pytester: pytest.Pytester) -> None:
    out = pytester.runpytest("--markers").stdout.str()
    assert "@pytest.mark.chaos(" in out and "@pytest.mark.chaos_matrix(" in out


def test_options_reach_the_run(suite: pytest.Pytester) -> None:
    suite.makepyfile(HEADER + """
@pytest.mark.chaos(acks="all", duration=25, seed=1)
def test_a(chaos_run, chaos_options, tmp_path):
    r = chaos_run()
    o = options(r)
    assert chaos_options.duration == 12 and chaos_options.seed == 5
    assert (o["duration"], o["seed"], o["kafka_version"]) == (12, 5, "3.9.1")
    assert o["acks"] == "all" and o["scenario"] == "test_a"
    assert str(r.run_dir).startswith(str(chaos_options.runs_dir))
""")
    runs = suite.path / "elsewhere"
    res = suite.runpytest("--chaos-duration", "12", "--chaos-seed", "5",
                          "--kafka-version", "3.9.1", "--chaos-runs-dir", str(runs))
    res.assert_outcomes(passed=1)
    assert list((runs / "test_a").iterdir())


def test_accept_known_from_marker_and_command_line(suite: pytest.Pytester) -> None:
    suite.makepyfile(HEADER + """
@pytest.mark.chaos(accept_known=["librdkafka#4953"])
def test_marker(chaos_run):
    assert options(chaos_run())["accept_known"] == ["librdkafka#4953"]

def test_command_line(chaos_run):
    assert options(chaos_run())["accept_known"] == ["librdkafka#4844", "KIP-966"]

@pytest.mark.chaos(accept_known=["nope#1"])
def test_unknown_id(chaos_run):
    chaos_run()
""")
    res = suite.runpytest("-k", "test_marker or test_unknown_id")
    res.assert_outcomes(passed=1, failed=1)
    res.stdout.fnmatch_lines(["*bad chaos run options: --accept-known: unknown known-bug "
                              "id 'nope#1'*"])
    res = suite.runpytest("-k", "test_command_line", "--chaos-accept-known",
                          "librdkafka#4844,KIP-966")
    res.assert_outcomes(passed=1)


def test_marker_then_call_keywords_win_and_scenario_by_name(suite: pytest.Pytester) -> None:
    suite.makepyfile(HEADER + """
@pytest.mark.chaos("safe-config-chaos", duration=20)
def test_scenario(chaos_result):
    o = options(chaos_result)
    assert o["scenario"] == "safe-config-chaos"
    assert o["duration"] == 20 and o["min_insync"] == 2 and o["idempotence"] is True

@pytest.mark.chaos(acks="1", duration=20)
def test_call_wins(chaos_run):
    assert options(chaos_run(acks="all", faults=["pause"]))["faults"] == ["pause"]
""")
    suite.runpytest().assert_outcomes(passed=2)


def test_expectations_that_pass(suite: pytest.Pytester) -> None:
    suite.makepyfile("""
import pytest

@pytest.mark.chaos(acks="1", expect={"lost": ">0", "duplicate": 0}, expect_valid=True)
def test_acks1_loses(chaos_result):
    assert chaos_result.count("lost") == 5 and chaos_result.verdict == "valid"

@pytest.mark.chaos(acks="all", expect={"lost": 0})
def test_safe(chaos_run):
    chaos_run()

@pytest.mark.chaos(acks="all", seed=13, expect_valid=False, expect={"divergence": ">=1"})
def test_invalid_expected(chaos_result):
    assert chaos_result.violations == {"divergence": 2}
""")
    suite.runpytest().assert_outcomes(passed=3)


def test_expectations_that_fail_say_why(suite: pytest.Pytester) -> None:
    suite.makepyfile("""
import pytest

@pytest.mark.chaos(acks="1", expect={"lost": 0})
def test_lost(chaos_result):
    pass

@pytest.mark.chaos(acks="all", seed=13, expect_valid=True)
def test_verdict(chaos_run):
    chaos_run()
""")
    res = suite.runpytest()
    res.assert_outcomes(failed=2)
    out = res.stdout.str()
    assert "expected lost ==0, got 5" in out
    assert "expected verdict valid, got INVALID" in out
    assert "forbidden here: divergence=2" in out
    assert "report.html" in out and "kafka-chaos" in out


def test_a_failed_run_fails_the_test(suite: pytest.Pytester) -> None:
    suite.makepyfile("""
import pytest

@pytest.mark.chaos(seed=99)
def test_no_cluster(chaos_result):
    pass

@pytest.mark.chaos("no-such-scenario")
def test_unknown(chaos_result):
    pass

@pytest.mark.chaos(acks="2")
def test_bad_option(chaos_run):
    chaos_run()

@pytest.mark.chaos(transactions=True, idempotence=False)
def test_contradicting_options(chaos_run):
    chaos_run()

@pytest.mark.chaos(expect={"lost": "lots"})
def test_bad_expectation(chaos_run):
    chaos_run()
""")
    res = suite.runpytest()
    outcomes = res.parseoutcomes()
    assert outcomes.get("passed", 0) == 0 and outcomes.get("skipped", 0) == 0
    out = res.stdout.str()
    assert "ClusterError: no Docker engine" in out
    assert "unknown scenario 'no-such-scenario'" in out
    assert "bad chaos run options: acks must be 0, 1 or all (-1 is all), got '2'" in out
    assert ("bad chaos run options: transactions need enable.idempotence=true" in out)
    assert "cannot read anomaly condition 'lots'" in out


def test_matrix_cells_ids_and_expectations_per_cell(suite: pytest.Pytester) -> None:
    suite.makepyfile(HEADER + """
@pytest.mark.chaos_matrix(acks=["1", "all"], unclean=[False, True], faults=["kill", "pause"])
@pytest.mark.chaos(expect=lambda cfg: {"lost": 0 if cfg.acks == "all" and not cfg.unclean
                                       else ">0"})
def test_grid(chaos_result, chaos_cell):
    o = options(chaos_result)
    assert (o["acks"], o["unclean"], o["faults"]) == (
        chaos_cell["acks"], chaos_cell["unclean"], chaos_cell["faults"])
""")
    res = suite.runpytest("-v")
    res.assert_outcomes(passed=8)
    res.stdout.fnmatch_lines(["*test_grid?acks=1-no-unclean-kill?*PASSED*",
                              "*test_grid?acks=all-unclean-pause?*PASSED*"])


def test_matrix_over_clients(suite: pytest.Pytester) -> None:
    suite.makepyfile(HEADER + """
@pytest.mark.chaos_matrix(client=["confluent-kafka", "java:4.1.1"])
def test_clients(chaos_result, chaos_cell):
    assert options(chaos_result)["client"] == chaos_cell["client"]

@pytest.mark.chaos_matrix(client=["java"])
def test_no_version(chaos_run):
    chaos_run()
""")
    res = suite.runpytest("-v")
    res.assert_outcomes(passed=2, failed=1)
    res.stdout.fnmatch_lines(["*test_clients?client=confluent-kafka?*PASSED*",
                              "*test_clients?client=java?4.1.1?*PASSED*"])
    assert "the Java client needs its version" in res.stdout.str()


def test_matrix_refuses_unknown_axes(suite: pytest.Pytester) -> None:
    suite.makepyfile("""
import pytest

@pytest.mark.chaos_matrix(color=["red"])
def test_grid(chaos_result):
    pass
""")
    res = suite.runpytest()
    assert res.ret != 0
    assert "'color' is not a matrix field" in res.stdout.str() + res.stderr.str()


def test_terminal_summary_lists_every_run(suite: pytest.Pytester) -> None:
    suite.makepyfile("""
import pytest

@pytest.mark.chaos(acks="1", expect={"lost": ">0"})
def test_one(chaos_result):
    pass

@pytest.mark.chaos(acks="all", seed=13, expect_valid=True)
def test_two(chaos_result):
    pass

def test_not_chaos():
    pass
""")
    res = suite.runpytest()
    res.stdout.fnmatch_lines([
        "*= kafka-chaos: 2 chaos run(s) =*",
        "PASSED  test_terminal_summary_lists_every_run.py::test_one",
        "*valid   lost=5  *test_one*report.html",
        "FAILED  test_terminal_summary_lists_every_run.py::test_two",
        "*INVALID divergence=2  *report.html",
        "*expected verdict valid, got INVALID",
    ])
    assert "test_not_chaos" not in res.stdout.str().split("kafka-chaos: 2")[1]


def test_no_summary_without_chaos_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain():\n    pass\n")
    res = pytester.runpytest()
    res.assert_outcomes(passed=1)
    assert "chaos run(s)" not in res.stdout.str()


def test_junit_properties(suite: pytest.Pytester) -> None:
    suite.makepyfile("""
import pytest

@pytest.mark.chaos(acks="1", expect={"lost": 0})
def test_fails(chaos_result):
    pass

@pytest.mark.chaos(acks="all")
def test_passes(chaos_result):
    pass
""")
    xml_path = suite.path / "junit.xml"
    suite.runpytest(f"--junitxml={xml_path}").assert_outcomes(passed=1, failed=1)
    cases = {c.get("name"): c for c in ET.parse(xml_path).getroot().iter("testcase")}
    props = {name: {p.get("name"): p.get("value") for p in case.iter("property")}
             for name, case in cases.items()}
    failed = props["test_fails"]
    assert failed["chaos.verdict"] == "valid"
    assert failed["chaos.lost"] == "5"
    assert failed["chaos.anomalies"] == "lost=5"
    assert failed["chaos.report"].endswith("report.html")
    assert failed["chaos.expectations"] == "expected lost ==0, got 5"
    assert props["test_passes"]["chaos.anomalies"] == "no anomalies"
    assert props["test_passes"]["chaos.expectations"] == "met"
    # the failure message itself names the report (not only the properties)
    assert "report.html" in (cases["test_fails"].find("failure").text or "")
