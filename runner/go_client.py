"""The Go clients per run: franz-go or sarama of a version, the driver built once with ``go``.

``--client franz-go:1.22.3`` (or ``sarama:1.61.1``) runs the workload's producers and
consumers as processes of workloads/go: the client's ``main.go`` beside the shared
``common/driver.go``, one Go program. Each kind and version gets one folder under the client
cache (runner/clients.py's ``cache_root()``, then ``<kind>-<version>-<source digest>``),
made on first use: a generated ``go.mod`` requiring that module version, the sources in
``src/``, and
``go build`` (``-mod=mod``: the module and its dependencies come from the Go module proxy
into the default module cache) of the binary ``kc-driver``. Built in a temporary folder and
renamed into place under a file lock, like the Java driver; the info file, written last,
says the folder is complete; a changed driver is built into a folder of its own. A
version the proxy does not have is one line (ClientVenvError: exit 2 before the cluster
starts).
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

from contract.clients import FRANZ_GO, SARAMA
from contract.known_bugs import version_tuple
from runner.clients import ClientVenvError, build_cached, build_dir, built_from, keep_used

SOURCE_DIR = Path(__file__).resolve().parent.parent / "workloads" / "go"
BINARY = "kc-driver"
#: kind -> (the Go module, the driver's folder under workloads/go)
MODULES: dict[str, tuple[str, str]] = {
    FRANZ_GO: ("github.com/twmb/franz-go", "franz"),
    SARAMA: ("github.com/IBM/sarama", "sarama"),
}
#: A version of each, for messages.
EXAMPLES = {FRANZ_GO: "1.22.3", SARAMA: "1.61.1"}
#: The oldest Go language version the drivers are written for (the modules may raise it).
GO_LANGUAGE = "1.22"
#: franz-go's public KIP-848 opt-in (ServerSideBalancer) came in this release.
FRANZ_SERVER_SIDE_BALANCER = (1, 22, 0)
_SEMVER = re.compile(r"^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$")
_POSITION = re.compile(r"^\S+\.go:\d+:\d+: ")


@dataclass(frozen=True)
class GoClient:
    """A built Go driver: the command that starts it (add the spec's path), its client kind
    and the module version it was built against."""

    folder: Path
    kind: str
    version: str

    def command(self) -> list[str]:
        return [str(self.folder / BINARY)]


def go_dir(kind: str, version: str) -> Path:
    """Where the Go driver of client ``kind`` at ``version``, built from this checkout's
    sources, lives."""
    return build_dir(f"{kind}-{version}", _source_digest(kind, version))


def go_mod(kind: str, version: str) -> str:
    """The build's go.mod: the driver's module, requiring the client at ``version``."""
    module, _ = MODULES[kind]
    return (f"module kafka-chaos/drivers/{kind}\n\ngo {GO_LANGUAGE}\n\n"
            f"require {module} v{version}\n")


def build_tags(kind: str, version: str) -> list[str]:
    """The driver's build tags for this version (what its API has)."""
    if kind == FRANZ_GO and version_tuple(version) >= FRANZ_SERVER_SIDE_BALANCER:
        return ["kc_server_side_balancer"]
    return []


def _sources(kind: str) -> list[Path]:
    _, folder = MODULES[kind]
    return [SOURCE_DIR / "common" / "driver.go", *sorted((SOURCE_DIR / folder).glob("*.go"))]


def _reason(output: str, module: str) -> str:
    """What go's output says, on one line: its first message that names the module, else its
    first (not the progress lines nor a package's ``#`` header), with its indented lines."""
    messages: list[str] = []
    for raw in output.splitlines():
        if raw[:1].isspace() and messages:  # go indents a message's further lines
            messages[-1] += " " + " ".join(raw.split())
        elif raw.strip() and not raw.startswith(("go: downloading", "go: finding", "#")):
            messages.append(raw.strip())
    mine = [m for m in messages if module in m]
    return (mine or messages or ["no output"])[0]


def build_go(target: Path, kind: str, version: str) -> None:
    """Writes the go.mod, copies the driver's sources into ``target/src`` and builds
    ``target/kc-driver``."""
    module, _ = MODULES[kind]
    src = target / "src"
    src.mkdir(parents=True)
    (src / "go.mod").write_text(go_mod(kind, version))
    for path in _sources(kind):
        shutil.copy(path, src / path.name)
    env = dict(os.environ)
    # -mod=mod: go resolves the dependencies and writes go.sum itself. GOTOOLCHAIN=local: a
    # module asking for a newer Go fails here instead of downloading a toolchain. No cgo:
    # the drivers need no C, and a static binary outlives the system's libraries.
    env["GOFLAGS"] = " ".join([*env.get("GOFLAGS", "").split(), "-mod=mod"])
    env["GOTOOLCHAIN"] = "local"
    env["CGO_ENABLED"] = "0"
    tags = build_tags(kind, version)
    cmd = ["go", "build", "-trimpath", *(["-tags", ",".join(tags)] if tags else []),
           "-o", str(target / BINARY), "."]
    what = f"--client {kind}:{version}"
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=src,
                              env=env)
    except FileNotFoundError:
        raise ClientVenvError(f"{what}: go is not installed") from None
    if proc.returncode != 0:
        reason = _reason(proc.stderr + proc.stdout, module)
        if f"{module}@v{version}" in reason or "go.mod" in reason:
            # "main.go:2:8: github.com/x@v0.0.1: reading ...": our source's position and
            # the module's name say nothing more here
            why = _POSITION.sub("", reason).replace(f"{module}@v{version}: ", "")
            raise ClientVenvError(f"{what}: go could not fetch {module} v{version}: "
                                  f"{why[:300]}")
        raise ClientVenvError(f"{what}: the driver does not build: {reason[:300]}")


def ensure_go(kind: str, version: str, say: Callable[[str], None] = print,
              builder: Callable[[Path, str, str], None] = build_go) -> GoClient:
    """The Go driver of client ``kind`` (franz-go, sarama) at ``version``: the cached build of
    this checkout's driver source (a folder per source digest), made first if absent.
    Raises ClientVenvError (one line) when it cannot be built."""
    if kind not in MODULES:
        raise ClientVenvError(f"--client {kind}: not a Go client ({', '.join(MODULES)})")
    if not _SEMVER.match(version):
        # go would take 1.22 for the query "latest 1.22.x", not for a version
        raise ClientVenvError(f"--client {kind}:{version}: a Go module's version has three "
                              f"parts, e.g. {kind}:{EXAMPLES[kind]}")
    digest = _source_digest(kind, version)  # read once: it names the folder and its info
    final = build_dir(f"{kind}-{version}", digest)

    def build(tmp: Path) -> dict[str, str]:
        builder(tmp, kind, version)
        return {"client": kind, "version": version, "module": MODULES[kind][0],
                "source": digest}

    build_cached(final, f"the {kind} {version} driver", lambda f: _complete(f, digest),
                 build, say)
    keep_used(final, f"{kind}-{version}")
    return GoClient(final, kind, version)


def _source_digest(kind: str, version: str) -> str:
    h = hashlib.sha256()
    h.update(go_mod(kind, version).encode())
    h.update(",".join(build_tags(kind, version)).encode())
    for path in _sources(kind):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _complete(folder: Path, digest: str) -> bool:
    return built_from(folder, digest) and (folder / BINARY).is_file()
