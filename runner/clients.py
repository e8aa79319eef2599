"""Client versions per run: a cached virtualenv per confluent-kafka release.

``--client-version 2.12.0`` runs the workload processes (producers, consumers) with that
release. Each version gets one venv under the user's cache directory
(``$XDG_CACHE_HOME`` or ``~/.cache``, then ``kafka-chaos/clients/confluent-kafka-<v>``), made
on first use: ``python -m venv`` from this interpreter (the children unpickle what the
orchestrator sends, so the Python version must be the same), then ``pip install`` of
confluent-kafka and the other packages the workload processes import, pinned to the versions
installed here. The venv is built in a temporary folder and renamed into place, under a file
lock, so two runs never build the same one at once and a half-built one is never used.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

from contract.clients import FRANZ_GO, JAVA, SARAMA, ClientSpec
from contract.known_bugs import version_tuple
from runner.config import CLIENT_VERSION, RunConfigError
from workloads import ChildInterpreter
from workloads.drivers import ClientDriver, ForeignDriver, LibrdkafkaDriver

#: The packages the workload processes import besides confluent-kafka (workloads/, contract/).
WORKLOAD_DEPS = ("pyarrow", "numpy", "tenacity")
INFO_FILE = "kafka-chaos-client.json"  # written last: its presence means "complete"
# version()/libversion() are (str, int) pairs, but plain strings in some releases (2.12.0).
_PROBE = ("import json, sys, confluent_kafka as c\n"
          "s = lambda v: v if isinstance(v, str) else v[0]\n"
          "print(json.dumps({'sys_path': sys.path, "
          "'confluent_kafka': s(c.version()), 'librdkafka': s(c.libversion())}))")


class ClientVenvError(RunConfigError):
    """A client venv could not be made (bad input: exit 2 before the cluster starts); the
    message is the one line shown to the user."""


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/kafka-chaos/clients`` (``~/.cache`` when the variable is unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kafka-chaos" / "clients"


def venv_dir(version: str) -> Path:
    """Where the venv of confluent-kafka ``version`` lives."""
    return cache_root() / f"confluent-kafka-{version}"


def requirements(version: str) -> list[str]:
    """confluent-kafka at ``version`` plus the workload's other imports at this venv's versions
    (the same pyarrow writes the history either way)."""
    reqs = [f"confluent-kafka=={version}"]
    for dist in WORKLOAD_DEPS:
        try:
            reqs.append(f"{dist}=={metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            reqs.append(dist)
    return reqs


def run_tool(cmd: list[str], what: str) -> str:
    """Runs a build step; its last error line (``what: reason``) is a ClientVenvError."""
    # Our PYTHONPATH (a checkout, another site-packages) must not leak into the venv's pip
    # ("already installed") nor into its recorded sys.path.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0:
        lines = [ln.strip() for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("ERROR")]
        reason = (errors or lines or [f"exit {proc.returncode}"])[-1]
        raise ClientVenvError(f"{what}: {reason}")
    return proc.stdout


def _has_pip() -> bool:
    """Whether this environment's pip can install into another interpreter (``--python``
    came in pip 22.3)."""
    try:
        return version_tuple(metadata.version("pip")) >= (22, 3)
    except metadata.PackageNotFoundError:
        return False


def build_venv(target: Path, version: str) -> None:
    """Makes a venv at ``target`` with confluent-kafka ``version`` (pip from PyPI; only wheels,
    so a missing release fails in seconds instead of compiling librdkafka)."""
    # With a pip of our own, the venv gets none (``ensurepip`` costs ~4 s of CPU) and ours
    # installs into it (``pip --python``, pip >= 22.3). Asked of the installed distributions:
    # ``find_spec("pip")`` would make setuptools' distutils shim step aside for the process.
    own_pip = _has_pip()
    run_tool([sys.executable, "-m", "venv", *(["--without-pip"] if own_pip else []), str(target)],
         "python -m venv")
    pip = ([sys.executable, "-m", "pip", "--python", str(target / "bin" / "python")] if own_pip
           else [str(target / "bin" / "python"), "-m", "pip"])
    run_tool([*pip, "install", "--quiet", "--disable-pip-version-check", "--only-binary", ":all:",
          *requirements(version)],
         f"--client-version {version}: pip could not install confluent-kafka=={version}")


def _probe(python: Path) -> dict[str, object]:
    out = run_tool([str(python), "-I", "-c", _PROBE], f"{python}: confluent_kafka does not import")
    info: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return info


@contextmanager
def build_lock(path: Path) -> Iterator[None]:
    """Holds an exclusive lock on ``path`` (one build of a client at a time, across runs)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # released when the file closes (or the process dies)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _interpreter(final: Path) -> ChildInterpreter:
    info = json.loads((final / INFO_FILE).read_text())
    paths = [str(p) for p in info["sys_path"]]
    return ChildInterpreter(python=final / "bin" / "python", sys_path=paths,
                            confluent_kafka=str(info["confluent_kafka"]),
                            librdkafka=str(info["librdkafka"]), venv=final)


def built_from(folder: Path, digest: str) -> bool:
    """Whether ``folder`` holds a complete build (its info file) from sources of ``digest``."""
    try:
        info = json.loads((folder / INFO_FILE).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(info, dict) and info.get("source") == digest


#: A driver build no run has used for this long goes when its client version is next used.
STALE_BUILD_S = 7 * 86400


def build_dir(name: str, digest: str) -> Path:
    """Where the driver build ``name`` (``java-4.1.1``, ``franz-go-1.22.3``) from sources of
    ``digest`` lives: a folder per digest, so two checkouts of kafka-chaos with different
    drivers on one machine never rebuild the folder the other's running drivers use."""
    return cache_root() / f"{name}-{digest}"


def keep_used(final: Path, name: str) -> None:
    """Marks the build ``final`` used now and removes the other builds of ``name`` no run
    used for STALE_BUILD_S (older kafka-chaos versions' drivers; the folder without a
    digest is the layout before one)."""
    info = final / INFO_FILE
    try:
        os.utime(info)
    except OSError:
        return
    for other in [cache_root() / name, *cache_root().glob(f"{name}-*")]:
        if other == final or not re.fullmatch(rf"{re.escape(name)}(-[0-9a-f]{{16}})?",
                                              other.name):
            continue
        try:
            unused_s = time.time() - (other / INFO_FILE).stat().st_mtime
        except OSError:
            continue  # no build of ours
        if unused_s > STALE_BUILD_S:
            shutil.rmtree(other, ignore_errors=True)
            (other.parent / f".{other.name}.lock").unlink(missing_ok=True)


def build_cached(final: Path, what: str, ready: Callable[[Path], bool],
                 build: Callable[[Path], dict[str, Any]],
                 say: Callable[[str], None] = print) -> None:
    """Makes the client folder ``final`` unless ``ready(final)`` already: ``build(tmp)`` fills
    a temporary folder beside it and returns the info written last into it (INFO_FILE, whose
    presence means complete), then the folder is renamed into place. Under a file lock
    named after ``final``, so two runs never build it at once and a half-built folder is
    never used; a failed build leaves nothing."""
    if ready(final):
        return
    with build_lock(final.parent / f".{final.name}.lock"):
        if ready(final):  # another run built it while we waited
            return
        tmp = final.parent / f".tmp-{final.name}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        t0 = time.monotonic()
        say(f"building {what} in {final} (first use)")
        try:
            info = build(tmp)
            (tmp / INFO_FILE).write_text(json.dumps(info))
            shutil.rmtree(final, ignore_errors=True)  # incomplete, or of an older driver
            os.replace(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        say(f"{what} ready in {time.monotonic() - t0:.0f}s")


def ensure_client(version: str, say: Callable[[str], None] = print,
                  builder: Callable[[Path, str], None] = build_venv) -> ChildInterpreter:
    """The interpreter for confluent-kafka ``version``: the cached venv, built first if absent.

    Raises ClientVenvError (one line) when the version is malformed or pip cannot install it.
    """
    if not CLIENT_VERSION.match(version):
        raise ClientVenvError(f"--client-version must be a release such as 2.12.0, "
                              f"got {version!r}")
    final = venv_dir(version)

    def build(tmp: Path) -> dict[str, Any]:
        builder(tmp, version)
        info = _probe(tmp / "bin" / "python")
        if info["confluent_kafka"] != version:
            raise ClientVenvError(f"--client-version {version}: the venv imports "
                                  f"confluent-kafka {info['confluent_kafka']}")
        # The probe ran in the temporary folder: its paths move with the rename.
        info["sys_path"] = [str(p).replace(str(tmp), str(final))
                            for p in info["sys_path"]]  # type: ignore[attr-defined]
        return info

    build_cached(final, f"the confluent-kafka {version} venv",
                 lambda f: (f / INFO_FILE).exists(), build, say)
    return _interpreter(final)


def ensure_driver(spec: ClientSpec, say: Callable[[str], None] = print) -> ClientDriver:
    """The workload's driver for client ``spec``, its build made first where absent (a
    confluent-kafka venv, a Java driver). Raises ClientVenvError (one line) when it cannot
    be had."""
    if spec.kind == JAVA:
        from runner.java_client import ensure_java

        assert spec.version is not None  # parse_client requires it
        return ForeignDriver(spec, tuple(ensure_java(spec.version, say).command()))
    if spec.kind in (FRANZ_GO, SARAMA):
        from runner.go_client import ensure_go

        assert spec.version is not None  # parse_client requires it
        return ForeignDriver(spec, tuple(ensure_go(spec.kind, spec.version, say).command()))
    return LibrdkafkaDriver(ensure_client(spec.version, say=say) if spec.version else None)
