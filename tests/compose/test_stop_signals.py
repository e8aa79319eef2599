"""The signal guard around a run and its cleanup (compose.stop_signals.signals_raise): the first
signal raises, every later one is counted, so no second Ctrl-C or SIGTERM can land between
two cleanup steps and leave the cluster behind (seen in a suite: a second Ctrl-C raised from
a log call between two teardown steps)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from compose.stop_signals import StopSignals, deferred_signals, install, unguarded_default

ROOT = Path(__file__).resolve().parents[2]

# A cleanup that keeps receiving signals (the same signal twice before its handler runs is
# delivered once, so a storm of both kinds, spaced out) and says whether it got to its end.
_CHILD = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job ignores it
{before}
from compose.stop_signals import signals_raise

def storm():
    for _ in range(100):
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.002)

with signals_raise() as stop:
    try:
        try:
            {body}
        finally:
            stop.disarm()
    except (KeyboardInterrupt, SystemExit) as e:
        print("interrupted by", type(e).__name__, flush=True)
    finally:
        storm()
        print("cleanup finished, caught", stop.caught, flush=True)
print("handlers back:", signal.getsignal(signal.SIGINT) is {after_int},
      signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, flush=True)
"""


def _child(body: str, before: str = "", after_int: str = "signal.default_int_handler",
           ) -> subprocess.CompletedProcess[str]:
    code = _CHILD.format(body=body, before=before, after_int=after_int)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def _caught(out: str) -> int:
    line = next(ln for ln in out.splitlines() if ln.startswith("cleanup finished"))
    return int(line.rsplit(" ", 1)[1])


def test_first_ctrl_c_raises_and_later_signals_cannot_cut_the_cleanup() -> None:
    res = _child("os.kill(os.getpid(), signal.SIGINT); time.sleep(30)")
    assert res.returncode == 0, res.stderr
    assert "interrupted by KeyboardInterrupt" in res.stdout, res.stdout
    assert _caught(res.stdout) >= 2, res.stdout  # both kinds arrived during the cleanup
    assert "stopping already (SIGINT), cleaning up first" in res.stderr, res.stderr
    assert "stopping already (SIGTERM)" in res.stderr, res.stderr
    assert "handlers back: True True" in res.stdout, res.stdout


def test_first_sigterm_exits_with_its_status_after_the_cleanup() -> None:
    res = _child("os.kill(os.getpid(), signal.SIGTERM); time.sleep(30)")
    assert res.returncode == 0, res.stderr
    assert "interrupted by SystemExit" in res.stdout and _caught(res.stdout) >= 2, res.stdout


def test_a_cleanup_after_a_finished_body_is_not_cut_by_the_first_signal() -> None:
    # the body ended by itself: disarm() came before any signal, so none raises
    res = _child("pass")
    assert res.returncode == 0, res.stderr
    assert "interrupted" not in res.stdout and _caught(res.stdout) >= 2, res.stdout


def test_an_ignored_sigint_stays_ignored() -> None:
    # a run started in the background (SIGINT ignored) keeps ignoring it: only SIGTERM counts
    res = _child("os.kill(os.getpid(), signal.SIGINT); time.sleep(0.2); print('body ran on')",
                 before="signal.signal(signal.SIGINT, signal.SIG_IGN)",
                 after_int="signal.SIG_IGN")
    assert res.returncode == 0, res.stderr
    assert "body ran on" in res.stdout and "interrupted" not in res.stdout, res.stdout
    assert "(SIGINT)" not in res.stderr and "(SIGTERM)" in res.stderr, res.stderr
    assert "handlers back: True True" in res.stdout, res.stdout


def test_a_repeating_guard_raises_until_disarmed_and_replaces_only_pythons_own_handlers(
        ) -> None:
    # KafkaCluster's guard in a script: the body may catch a Ctrl-C and go on, so each signal
    # raises until the removal starts; then they are counted
    stop = StopSignals(repeat=True)
    for _ in range(2):
        with pytest.raises(KeyboardInterrupt):
            stop.handle(signal.SIGINT, None)
    with pytest.raises(SystemExit) as ended:
        stop.handle(signal.SIGTERM, None)
    assert ended.value.code == 128 + signal.SIGTERM
    stop.disarm()
    stop.handle(signal.SIGINT, None)
    assert stop.caught == 1
    once = StopSignals()
    with pytest.raises(KeyboardInterrupt):
        once.handle(signal.SIGINT, None)
    once.handle(signal.SIGINT, None)
    assert once.caught == 1
    assert unguarded_default(signal.SIGINT, signal.default_int_handler)
    assert unguarded_default(signal.SIGTERM, signal.SIG_DFL)
    assert not unguarded_default(signal.SIGINT, signal.SIG_IGN)
    assert not unguarded_default(signal.SIGTERM, stop.handle)  # a guard already there


def _deliver(sig: signal.Signals) -> None:
    """Calls the handler installed for ``sig`` as Python would on its arrival."""
    handler = signal.getsignal(sig)
    assert callable(handler)
    handler(sig, None)


def test_a_deferred_step_finishes_and_the_first_signal_raises_at_its_end(
        capfd: pytest.CaptureFixture[str]) -> None:
    # the pytest plugin's guard is armed between two tests, when a module's cluster is
    # removed: a Ctrl-C then must not cut the removal but still end the session after it
    stop = StopSignals(interrupt=True)
    restore = install(stop, lambda sig, handler: True)
    steps = []
    try:
        with pytest.raises(KeyboardInterrupt, match="signal SIGTERM"), \
                deferred_signals("the cluster is removed"):
            _deliver(signal.SIGTERM)  # it returns
            steps.append("removed node 1")
            _deliver(signal.SIGINT)
            steps.append("removed node 2")
        assert steps == ["removed node 1", "removed node 2"]
        assert stop.caught == 1 and not stop.armed
        err = capfd.readouterr().err
        assert "stopping (SIGTERM) once the cluster is removed" in err, err
        assert "stopping already (SIGINT), cleaning up first" in err, err
        # no signal inside: the block ends quietly; a disarmed guard only counts
        with deferred_signals("the cluster is removed"):
            steps.append("removed again")
        stop.disarm()
        with deferred_signals("the cluster is removed"):
            stop.handle(signal.SIGINT, None)
        assert stop.caught == 2
    finally:
        restore()


def test_nested_deferred_steps_raise_once_at_the_outermost_end() -> None:
    stop = StopSignals(repeat=True)
    ended = []
    with pytest.raises(SystemExit) as exit_, stop.deferred("the run is cleaned up"):
        with stop.deferred("the cluster is removed"):
            stop.handle(signal.SIGHUP, None)
        ended.append("inner")
    assert ended == ["inner"] and exit_.value.code == 128 + signal.SIGHUP
    with pytest.raises(KeyboardInterrupt):  # repeat: the guard stays armed
        stop.handle(signal.SIGINT, None)
