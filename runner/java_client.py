"""The Java client per run: kafka-clients of a version, fetched and the driver compiled once.

``--client java:4.1.1`` runs the workload's producers and consumers as Java processes of
workloads/java/KcDriver.java. Each version gets one folder under the client cache
(runner/clients.py's ``cache_root()``, then ``java-<version>-<source digest>``), made on
first use: Maven copies kafka-clients and its dependencies (and slf4j-simple, for its logs)
into ``lib/``, javac compiles the driver into ``classes/``. Built in a temporary folder and
renamed into place under a file lock, like the confluent-kafka venvs; the info file,
written last, says the folder is complete. A version Maven cannot fetch is one line
(ClientVenvError: exit 2 before the cluster starts).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from runner.clients import ClientVenvError, build_cached, build_dir, built_from, keep_used

SOURCE_DIR = Path(__file__).resolve().parent.parent / "workloads" / "java"
DRIVER = "KcDriver"


@dataclass(frozen=True)
class JavaClient:
    """A built Java driver: the command that starts it (add the spec's path) and the
    kafka-clients version it was built against."""

    folder: Path
    version: str

    def command(self) -> list[str]:
        cp = os.pathsep.join([str(self.folder / "classes"), str(self.folder / "lib" / "*")])
        # Serial GC: one driver per producer or consumer, two cores for everything. A young
        # generation of 160 MB from the start: every young collection copies the records
        # in flight (the client's futures and callbacks, tens of MB at flat-out rates), so
        # their number is the GC's cost; growing from -Xms32m it collected ~50 times per
        # million records (1.1 s of CPU), with 160 MB 6 times (0.3 s; JFR, issue 48).
        return ["java", "-Xms256m", "-Xmn160m", "-Xmx384m", "-XX:+UseSerialGC",
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSSZ",
                "-cp", cp, DRIVER]


def java_dir(version: str) -> Path:
    """Where the Java driver for kafka-clients ``version``, built from this checkout's
    sources, lives."""
    return build_dir(f"java-{version}", _source_digest())


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NOT_FOUND = re.compile(r"(Could not find artifact \S+|\S+ was not found) in (\S+)")


def _tool(cmd: list[str], what: str, cwd: Path) -> None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=cwd)
    except FileNotFoundError:
        raise ClientVenvError(f"{what}: {cmd[0]} is not installed") from None
    if proc.returncode != 0:
        lines = [_ANSI.sub("", ln).strip() for ln in (proc.stdout + proc.stderr).splitlines()]
        lines = [ln for ln in lines if ln and ln != "[ERROR]"]
        # Maven's first [ERROR] line is the reason; the later ones are its help text.
        errors = [ln.split("[ERROR]", 1)[1].strip() for ln in lines if "[ERROR]" in ln]
        reason = errors[0] if errors else lines[-1] if lines else f"exit {proc.returncode}"
        found = _NOT_FOUND.search(reason)
        reason = (f"{found.group(1)} in {found.group(2)}" if found
                  else reason.split(" -> [Help")[0])
        raise ClientVenvError(f"{what}: {reason[:300]}")


def build_java(target: Path, version: str) -> None:
    """Fetches kafka-clients ``version`` with Maven into ``target/lib`` and compiles the
    driver into ``target/classes``."""
    target.mkdir(parents=True)
    shutil.copy(SOURCE_DIR / "pom.xml", target / "pom.xml")
    # -U: a version not found once is asked for again (Maven caches the miss for a day)
    _tool(["mvn", "-q", "-B", "-U", "-Dstyle.color=never", f"-Dkafka.clients.version={version}",
           "dependency:copy-dependencies", "-DoutputDirectory=lib"],
          f"--client java:{version}: Maven could not fetch kafka-clients {version}", target)
    _tool(["javac", "--release", "17", "-nowarn", "-d", str(target / "classes"),
           "-cp", str(target / "lib" / "*"), str(SOURCE_DIR / f"{DRIVER}.java")],
          f"--client java:{version}: the driver does not compile", target)


def ensure_java(version: str, say: Callable[[str], None] = print,
                builder: Callable[[Path, str], None] = build_java) -> JavaClient:
    """The Java driver for kafka-clients ``version``: the cached build of this checkout's
    driver source (a folder per source digest), made first if absent."""
    digest = _source_digest()  # read once: it names the folder and goes into its info
    final = build_dir(f"java-{version}", digest)

    def build(tmp: Path) -> dict[str, str]:
        builder(tmp, version)
        return {"client": "java", "version": version, "source": digest}

    build_cached(final, f"the Java client {version} driver",
                 lambda f: built_from(f, digest), build, say)
    keep_used(final, f"java-{version}")
    return JavaClient(final, version)


def _source_digest() -> str:
    h = hashlib.sha256()
    for name in ("pom.xml", f"{DRIVER}.java"):
        h.update((SOURCE_DIR / name).read_bytes())
    return h.hexdigest()[:16]
