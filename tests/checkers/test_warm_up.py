"""The checker's warm-up (checkers/warmup.py) checks a tiny history whose answer is known:
if that check failed or found nothing, the warm-up would compile little of what a run's
check needs."""

from __future__ import annotations

from pathlib import Path

from checkers import check_run
from checkers.warmup import warm_check, warm_up, write_tiny_history
from tests.support.spark_child import short_lived_spark_env


def test_tiny_history_has_known_answer(spark: object, tmp_path: Path) -> None:
    run = tmp_path / "tiny"
    write_tiny_history(run)
    r = check_run(run)
    assert "error" not in r, r.get("traceback")
    found = {k: v["count"] for k, v in r["anomalies"].items() if v["count"]}
    # write 17 never read; the first read repeated past the end of its partition's log
    assert found == {"lost": 1, "duplicate": 1, "inconsistent-offset": 1}
    assert r["anomalies"]["lost"]["examples"][0]["seq"] == 8
    assert r["stats"]["writes"] == {"ok": 36, "fail": 2, "info": 2}
    assert r["valid"] is False


def test_warm_check_leaves_no_directory(spark: object, tmp_path: Path,
                                        monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    r = warm_check(None, {"producer_config": {"acks": "1"}})
    assert "error" not in r and r["anomalies"]["lost"]["count"] == 1
    assert not list(tmp_path.glob("kafka-chaos-warm-up-*"))


def test_warm_up_skips_the_check_in_a_warm_process(spark: object) -> None:
    # pytest's session is running (the fixture): a run's warm-up only makes sure of it
    t = warm_up(None)
    t.join(timeout=60)
    assert not t.is_alive() and t.results is None


def test_a_process_ending_mid_warm_up_leaves_no_directory(tmp_path: Path) -> None:
    # a CLI run that fails early exits while its daemon warm-up thread is still checking
    import subprocess
    import sys

    code = """
import sys, time
from pathlib import Path
from checkers.warmup import warm_up
t = warm_up(None)
deadline = time.monotonic() + 120
while not list(Path(sys.argv[1]).glob("kafka-chaos-warm-up-*")):
    assert time.monotonic() < deadline, "the warm-up never made its directory"
    time.sleep(0.05)
assert t.is_alive()
print("MID-WARM-UP", flush=True)
"""
    res = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                         text=True, timeout=180, env=short_lived_spark_env(TMPDIR=str(tmp_path)))
    assert res.returncode == 0 and "MID-WARM-UP" in res.stdout, res.stderr[-2000:]
    assert not list(tmp_path.glob("kafka-chaos-warm-up-*"))
    # nothing of the JVM's or the context's end is printed (a Java stack trace, an EOFError)
    assert "Error" not in res.stderr and "Exception" not in res.stderr, res.stderr[-2000:]


def _group_alive(pgid: int) -> bool:
    import os

    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.getpgid(int(pid)) == pgid:
                return True
        except ProcessLookupError:
            continue
    return False


def test_a_killed_process_leaves_scratch_the_next_start_removes(tmp_path: Path) -> None:
    # SIGKILL to the process and its JVM runs no exit handler: the warm-up's history and
    # the JVM's scratch (shuffle files, native libraries, Spark's temp files) stay until
    # the next kafka-chaos process starts a session or a warm-up
    import os
    import signal
    import subprocess
    import sys

    from tenacity import retry, retry_if_result, stop_after_delay, wait_fixed

    code = "import time; from checkers.warmup import warm_up; warm_up(None); time.sleep(600)"
    env = short_lived_spark_env(TMPDIR=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True,
                            stderr=subprocess.DEVNULL)
    poll = retry(stop=stop_after_delay(120), wait=wait_fixed(0.1),
                 retry=retry_if_result(lambda ok: not ok))
    try:
        # mid warm-up: its history written, the JVM's block manager up
        poll(lambda: bool(list(tmp_path.glob(f"kafka-chaos-warm-up-{proc.pid}-*/run.json"))
                          and list(tmp_path.glob(f"kafka-chaos-spark-{proc.pid}-*/blockmgr-*"))
                          ))()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        poll(lambda: not _group_alive(proc.pid))()  # the JVM too: nothing writes any more
    def left() -> list[str]:
        return sorted(p.name for p in tmp_path.glob("kafka-chaos-*") if p.is_dir())

    assert [n.rsplit("-", 1)[0] for n in left()] == [
        f"kafka-chaos-spark-{proc.pid}", f"kafka-chaos-warm-up-{proc.pid}"]
    mine = tmp_path / f"kafka-chaos-spark-{os.getpid()}-live"
    mine.mkdir()  # a live owner's directory is never touched
    sweep = ("from contract.owners import sweep_owned_dirs; "
             "print(len(sweep_owned_dirs('spark')) + len(sweep_owned_dirs('warm-up')))")
    res = subprocess.run([sys.executable, "-c", sweep], env=env, capture_output=True,
                         text=True, timeout=60)
    assert res.stdout.strip() == "2", res.stderr[-2000:]
    assert left() == [mine.name]


def test_a_running_session_gets_no_second_scratch_directory(spark: object) -> None:
    # another thread (a run's warm-up, a driver thread of together()) asking for the session
    # gets the running one; its JVM already has its scratch directory
    import os
    import tempfile
    import threading

    from checkers.session import build_session

    def mine() -> list[str]:
        return sorted(p.name for p in Path(tempfile.gettempdir()).glob(
            f"kafka-chaos-spark-{os.getpid()}-*"))

    before = mine()
    assert before, "the running session has its scratch directory"
    got: list[object] = []
    t = threading.Thread(target=lambda: got.append(build_session()))
    t.start()
    t.join(timeout=60)
    assert got and got[0].sparkContext is spark.sparkContext  # type: ignore[attr-defined]
    assert mine() == before
