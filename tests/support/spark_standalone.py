"""A Spark standalone cluster on this machine for tests: one master and N workers, each its
own JVM started with the installed PySpark's ``spark-class`` (no download, no daemon
scripts), all stopped and their scratch removed when the context ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyspark
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

HOST = "127.0.0.1"


@dataclass(frozen=True)
class Standalone:
    """A running standalone cluster."""

    master_url: str  # spark://127.0.0.1:PORT, for --spark-master
    ui_url: str  # the master's web UI; /json/ lists the workers
    env: dict[str, str]  # environment for a driver that should use it (SPARK_HOME, local IP)


def spark_home() -> Path:
    """The installed PySpark's directory, laid out like a Spark distribution."""
    return Path(pyspark.__file__).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def alive_workers(ui_url: str) -> int:
    """How many workers the master lists as ALIVE."""
    with urllib.request.urlopen(f"{ui_url}/json/", timeout=5) as resp:  # noqa: S310 - loopback
        state = json.load(resp)
    return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


class _NotYet(Exception):
    pass


def _wait(what: str, ok: object, timeout_s: float) -> None:
    def probe() -> None:
        try:
            good = ok() if callable(ok) else bool(ok)
        except OSError as e:
            raise _NotYet(f"{what}: {e}") from e
        if not good:
            raise _NotYet(what)

    for attempt in Retrying(stop=stop_after_delay(timeout_s), wait=wait_fixed(0.5),
                            retry=retry_if_exception_type(_NotYet), reraise=True):
        with attempt:
            probe()


@contextlib.contextmanager
def standalone_cluster(workdir: Path, workers: int = 2, cores: int = 1,
                       memory: str = "1g", timeout_s: float = 120.0) -> Iterator[Standalone]:
    """Start a master and ``workers`` workers (each ``cores`` cores, ``memory``), wait until
    every worker is registered, yield, then stop every JVM (process group) and remove
    ``workdir``'s scratch."""
    home = spark_home()
    workdir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": HOST,
           "SPARK_WORKER_DIR": str(workdir / "work"), "SPARK_LOCAL_DIRS": str(workdir / "local"),
           "SPARK_LOG_DIR": str(workdir / "logs"), "SPARK_NO_DAEMONIZE": "1"}
    port, ui = _free_port(), _free_port()
    master_url, ui_url = f"spark://{HOST}:{port}", f"http://{HOST}:{ui}"
    spark_class = str(home / "bin" / "spark-class")
    procs: list[subprocess.Popen[bytes]] = []

    def start(args: list[str], name: str) -> None:
        log = open(workdir / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        procs.append(subprocess.Popen([spark_class, *args], env=env, stdout=log,
                                      stderr=subprocess.STDOUT, start_new_session=True))
        log.close()

    try:
        start(["org.apache.spark.deploy.master.Master", "--host", HOST, "--port", str(port),
               "--webui-port", str(ui)], "master")
        _wait("master web UI", lambda: alive_workers(ui_url) >= 0, timeout_s)
        for i in range(workers):
            start(["org.apache.spark.deploy.worker.Worker", master_url, "--host", HOST,
                   "--cores", str(cores), "--memory", memory, "--webui-port",
                   str(_free_port())], f"worker-{i}")
        _wait(f"{workers} workers registered", lambda: alive_workers(ui_url) == workers,
              timeout_s)
        yield Standalone(master_url, ui_url, {**env, "PYSPARK_PYTHON": sys.executable})
    finally:
        for p in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)
        for scratch in ("work", "local"):
            shutil.rmtree(workdir / scratch, ignore_errors=True)
