"""Pure parts of the plugin: conditions, expectations, matrix cells, progress output, and
that loading the plugin imports nothing heavy."""

from __future__ import annotations

import io
import subprocess
import sys
import time

import pytest

from chaos.plugin_matrix import cell_id, cells
from chaos.plugin_result import ChaosResult, Expectation
from runner.progress import Progress, bar
from tests.plugin.fakes import write_run

pytest_plugins = ["pytester"]


def test_expectation_misses(tmp_path) -> None:
    r = ChaosResult.from_run_dir(write_run(tmp_path, counts={"lost": 3}, allowed={"lost"}))
    assert not Expectation.of({"lost": ">0"}, True).misses(r)
    misses = Expectation.of({"lost": 0, "duplicate": ">0"}, False).misses(r)
    assert [str(m) for m in misses] == ["expected verdict INVALID, got valid",
                                        "expected lost ==0, got 3",
                                        "expected duplicate >0, got 0"]
    with pytest.raises(ValueError):
        Expectation.of(None, "yes")
    assert Expectation.of(None, None).empty


def test_result_without_results_is_unknown(tmp_path) -> None:
    r = ChaosResult(tmp_path, None, error="boom")
    assert r.valid == "unknown" and r.counts == {} and "run error: boom" in r.describe()
    assert [str(m) for m in Expectation.of({"lost": 0}).misses(r)] == [
        "expected lost ==0, got no results"]


def test_matrix_cells_in_order_with_readable_ids() -> None:
    grid = cells(acks=["1", "all"], unclean=[False, True], faults=["kill", "kill,pause"])
    assert len(grid) == 8
    assert grid[0] == {"acks": "1", "unclean": False, "faults": ["kill"]}
    assert [cell_id(c) for c in grid[:4]] == [
        "acks=1-no-unclean-kill", "acks=1-no-unclean-kill+pause",
        "acks=1-unclean-kill", "acks=1-unclean-kill+pause"]
    assert cell_id({"faults": "none", "min_insync": 1}) == "no-faults-min-insync=1"
    assert cells(acks=[1])[0]["acks"] == "1"
    with pytest.raises(ValueError, match="not a matrix field"):
        cells(colour=["red"])
    # any RunConfig field but where the runs go (the one field list, runner.config.RUN_FIELDS)
    assert cells(rate=[10.0], producers=[1])[0] == {"rate": 10.0, "producers": 1}
    with pytest.raises(ValueError, match="'out' is not a matrix field"):
        cells(out=["elsewhere"])
    with pytest.raises(ValueError, match="has no values"):
        cells(acks=[])


def test_progress_plain_has_no_escape_codes() -> None:
    out = io.StringIO()
    p = Progress(stream=out, tick_s=0.02)
    assert not p.live
    p("[   0.0s] starting")
    p.phase("workload", total_s=4.0)
    deadline = time.monotonic() + 10  # a loaded machine may schedule the ticker late
    while "workload 25%" not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.05)
    p.phase("drain")
    p.close()
    text = out.getvalue()
    assert "\033" not in text
    assert "== workload (4.0s)" in text and "workload 25%" in text
    assert "== workload done in" in text and "== drain done in" in text
    assert set(p.timings) == {"workload", "drain"}


def test_progress_live_redraws_with_a_bar() -> None:
    out = io.StringIO()
    p = Progress(stream=out, live=True, tick_s=0.02)
    p.phase("workload", total_s=1.0)
    time.sleep(0.1)
    p("[   1.0s] a step")
    p.close()
    text = out.getvalue()
    assert "\r\033[K" in text and "[" in text and "/1s" in text and "✓" in text
    assert "a step\n" in text
    assert bar(5, 10, width=10) == "[#####.....]" and bar(20, 10, width=4) == "[####]"


def test_loading_the_plugin_imports_nothing_heavy() -> None:
    code = ("import sys, chaos.pytest_plugin; "
            "print([m for m in ('docker', 'pyspark', 'confluent_kafka', 'runner.orchestrator',"
            " 'compose.cluster') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_a_signal_a_test_caught_itself_leaves_the_guard_armed(pytester: pytest.Pytester) -> None:
    # The session's guard lets only its first signal raise. A test that caught that
    # KeyboardInterrupt itself did not end the session, so at the next test the guard is
    # armed again: a later SIGTERM still interrupts (it is not merely counted).
    pytester.makepyfile("""
import os, signal, time
import pytest

def test_catches_it():
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)

def test_is_interrupted():
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(30)
    print("NOT INTERRUPTED")
""")
    res = pytester.runpytest_subprocess("-s", timeout=120)
    out, err = res.stdout.str(), res.stderr.str()
    assert res.ret == pytest.ExitCode.INTERRUPTED, out + err
    assert "NOT INTERRUPTED" not in out and "stopping already" not in err, out + err
    assert "1 passed" in out, out  # the first test caught its signal and went on


def test_a_signal_a_chaos_run_turned_into_its_result_ends_the_session(
        pytester: pytest.Pytester) -> None:
    # A run stopped by a signal cleans up and returns as interrupted; a test calling the
    # orchestrator itself asserts on the result and fails. The session must end there all
    # the same (a lane of our suite went on after a SIGTERM, test after test). The block
    # below is the run's shape: its guard takes the signal, the run's owner returns.
    pytester.makepyfile("""
import os, signal, time
from compose.stop_signals import signals_raise

def run_like_the_orchestrator():
    with signals_raise() as stop:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)
        except (KeyboardInterrupt, SystemExit):
            return "interrupted"
        finally:
            stop.disarm()
    return "completed"

def test_a_run_stopped_by_a_signal():
    assert run_like_the_orchestrator() == "interrupted"
    print("THE TEST WENT ON")

def test_after_it():
    print("NEXT TEST RAN")
""")
    res = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider", timeout=120)
    out, err = res.stdout.str(), res.stderr.str()
    assert res.ret == pytest.ExitCode.INTERRUPTED, out + err
    assert "THE TEST WENT ON" in out, out  # the run's result reached the test ...
    assert "NEXT TEST RAN" not in out, out  # ... and the session ended after it
    assert "a signal stopped a chaos run in" in out + err, out + err
