"""Builds the Kafka broker image locally: no container registry is needed.

Two layers, each tagged by a hash of its inputs so it is rebuilt only when they change:

* ``kafka-chaos/base:<hash>`` — a Debian ``debootstrap --variant=minbase`` root with
  OpenJDK 17, turned into an image with ``docker import``. The mirror is read from this
  machine's apt sources at build time.
* ``kafka-chaos/kafka:<version>-<hash>`` — Kafka's jars resolved from Maven Central by Maven
  (``compose/maven/pom.xml``), laid out like the official ``apache/kafka`` image under
  ``/opt/kafka`` with small launcher scripts of our own.

``python -m compose.image build --kafka-version 4.3.1`` prints progress and the tag.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .rootfs import RootfsError, built_rootfs

if TYPE_CHECKING:  # imported where used: validating a version (the CLI) needs no Docker
    import docker

HERE = Path(__file__).resolve().parent
POM = HERE / "maven" / "pom.xml"
IMAGE_DIR = HERE / "image"
DEFAULT_KAFKA_VERSION = "4.3.1"
SUPPORTED_VERSIONS = re.compile(r"^(3\.9|4\.\d+)\.\d+$")
BASE_PACKAGES = ("openjdk-17-jre-headless", "procps")
LABEL = "io.kafka-chaos"


class ImageError(RuntimeError):
    """The image could not be built; the message says why in one line."""


def log(msg: str) -> None:
    print(f"[image] {msg}", file=sys.stderr, flush=True)


def cache_dir() -> Path:
    root = os.environ.get("KAFKA_CHAOS_CACHE") or Path.home() / ".cache" / "kafka-chaos"
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _sha(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()[:12]


def _image_exists(client: docker.DockerClient, tag: str) -> bool:
    import docker

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


# ---------------------------------------------------------------- base image (debootstrap)


@dataclass(frozen=True)
class AptSource:
    """The Debian mirror and suite this machine installs from."""

    mirror: str
    suite: str


def read_apt_source() -> AptSource:
    """Reads the first Debian mirror from the machine's apt sources (deb822 or one-line)."""
    suite = ""
    for line in Path("/etc/os-release").read_text().splitlines():
        if line.startswith("VERSION_CODENAME="):
            suite = line.split("=", 1)[1].strip().strip('"')
    texts: list[str] = []
    for p in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        if p.is_file():
            texts.append(p.read_text())
    for text in texts:
        for m in re.finditer(r"^URIs:\s*(\S+)", text, re.M):
            if "security" not in m.group(1):
                return AptSource(m.group(1), suite)
        for m in re.finditer(r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)", text, re.M):
            if "security" not in m.group(1):
                return AptSource(m.group(1), suite or m.group(2))
    raise ImageError("no Debian mirror found in /etc/apt/sources*; use --image apache/kafka:<v>")


def ensure_base(client: docker.DockerClient) -> str:
    """Returns the tag of the debootstrap base image, building it when absent."""
    src = read_apt_source()
    tag = f"kafka-chaos/base:{_sha(src.suite, ','.join(BASE_PACKAGES), 'v1')}"
    if _image_exists(client, tag):
        return tag
    if shutil.which("debootstrap") is None:
        raise ImageError("debootstrap is not installed (run compose/setup-host.sh as root)")
    log(f"building base image {tag}: debootstrap {src.suite} (minutes on first run)")
    cmd = ["debootstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}",
           src.suite]
    try:
        with built_rootfs(lambda root: [*cmd, str(root), src.mirror], "debootstrap") as root:
            # Shrink: apt caches and docs are not needed at run time.
            for sub in ("var/cache/apt/archives", "usr/share/doc", "usr/share/man"):
                shutil.rmtree(root / sub, ignore_errors=True)
            log("importing base root filesystem into Docker")
            tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
            imp = subprocess.run(
                ["docker", "import", "-c", f"LABEL {LABEL}=1", "-", tag],
                stdin=tar.stdout, capture_output=True, text=True,
            )
            tar.wait()
            if imp.returncode != 0:
                raise ImageError(f"docker import failed: {imp.stderr.strip()}")
    except RootfsError as e:
        raise ImageError(str(e)) from None
    return tag


# ---------------------------------------------------------------- Kafka jars (Maven)


def maven_profile(version: str) -> str:
    return "kafka3" if version.startswith("3.") else "kafka4"


def ensure_libs(version: str) -> Path:
    """Resolves Kafka's runtime classpath from Maven Central into the cache; returns the dir."""
    out = cache_dir() / "libs" / f"{version}-{_sha(POM.read_bytes())}"
    done = out / ".complete"
    if done.exists():
        return out
    if shutil.which("mvn") is None:
        raise ImageError("Maven (mvn) is not installed (run compose/setup-host.sh as root)")
    log(f"resolving Apache Kafka {version} jars from Maven Central")
    shutil.rmtree(out, ignore_errors=True)
    cmd = [
        "mvn", "-q", "-B", "-f", str(POM), "dependency:copy-dependencies",
        f"-Dkafka.version={version}", f"-P{maven_profile(version)}",
        f"-DoutputDirectory={out}", "-DincludeScope=runtime",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cache_dir())
    if proc.returncode != 0:
        errs = [ln for ln in proc.stdout.splitlines() if "ERROR" in ln][:1]
        raise ImageError(f"Maven could not resolve Kafka {version}: {' '.join(errs)[:300]}")
    done.touch()
    return out


def _find_class(libs: Path, *candidates: str) -> str:
    """The first candidate main class present in the jars (tool classes moved across versions)."""
    names = {c: c.replace(".", "/") + ".class" for c in candidates}
    for jar in sorted(libs.glob("*.jar")):
        with zipfile.ZipFile(jar) as z:
            present = set(z.namelist())
        for c in candidates:
            if names[c] in present:
                return c
    raise ImageError(f"none of {candidates} found in Kafka's jars")


def _render_opt_kafka(libs: Path, version: str, dest: Path) -> None:
    """Writes /opt/kafka (bin, config, libs) for the image's build context."""
    v3 = version.startswith("3.")
    if v3:
        server_log = "-Dlog4j.configuration=file:/opt/kafka/config/log4j.properties"
        tools_log = "-Dlog4j.configuration=file:/opt/kafka/config/tools-log4j.properties"
    else:
        server_log = "-Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties"
        tools_log = "-Dlog4j2.configurationFile=/opt/kafka/config/tools-log4j2.properties"
    subst = {
        "@LOG4J_SERVER_OPTS@": server_log,
        "@LOG4J_TOOLS_OPTS@": tools_log,
        "@STORAGE_TOOL@": _find_class(libs, "kafka.tools.StorageTool",
                                      "org.apache.kafka.tools.StorageTool"),
        "@DUMP_LOG@": _find_class(libs, "kafka.tools.DumpLogSegments",
                                  "org.apache.kafka.tools.DumpLogSegments"),
        "@CONFIG_COMMAND@": _find_class(libs, "kafka.admin.ConfigCommand",
                                        "org.apache.kafka.tools.ConfigCommand"),
    }
    (dest / "bin").mkdir(parents=True)
    for script in sorted((IMAGE_DIR / "bin").glob("*.sh")):
        text = script.read_text()
        for k, v in subst.items():
            text = text.replace(k, v)
        target = dest / "bin" / script.name
        target.write_text(text)
        target.chmod(0o755)
    shutil.copytree(IMAGE_DIR / "config", dest / "config")
    shutil.copytree(libs, dest / "libs", ignore=shutil.ignore_patterns(".complete"))


def _inputs_hash(base_tag: str, version: str) -> str:
    parts: list[bytes | str] = [base_tag, version, POM.read_bytes()]
    for p in sorted(IMAGE_DIR.rglob("*")):
        if p.is_file():
            parts += [str(p.relative_to(IMAGE_DIR)), p.read_bytes()]
    return _sha(*parts)


def image_tag_for(version: str) -> str:
    """The tag the local build of ``version`` has (without building or asking Docker)."""
    src = read_apt_source()
    base_tag = f"kafka-chaos/base:{_sha(src.suite, ','.join(BASE_PACKAGES), 'v1')}"
    return f"kafka-chaos/kafka:{version}-{_inputs_hash(base_tag, version)}"


def build_kafka_image(version: str = DEFAULT_KAFKA_VERSION) -> str:
    """Builds (or finds cached) the local Kafka image for ``version``; returns its tag."""
    if not SUPPORTED_VERSIONS.match(version):
        raise ImageError(f"unsupported Kafka version {version!r}: use 3.9.x or 4.x (KRaft)")
    import docker

    client = docker.from_env()
    base = ensure_base(client)
    tag = f"kafka-chaos/kafka:{version}-{_inputs_hash(base, version)}"
    if _image_exists(client, tag):
        log(f"cached {tag}")
        return tag
    libs = ensure_libs(version)
    log(f"building {tag}")
    with tempfile.TemporaryDirectory(prefix="kc-image-") as tmp:
        ctx = Path(tmp)
        shutil.copy(IMAGE_DIR / "Dockerfile", ctx / "Dockerfile")
        _render_opt_kafka(libs, version, ctx / "opt-kafka")
        try:
            client.images.build(
                path=str(ctx), tag=tag, buildargs={"BASE": base}, pull=False, rm=True,
                labels={LABEL: "1", f"{LABEL}.kafka-version": version},
            )
        except docker.errors.BuildError as e:
            last = [str(x.get("stream", x)).strip() for x in e.build_log][-2:]
            raise ImageError(f"docker build failed: {e.msg} {' '.join(last)}") from e
    log(f"built {tag}")
    return tag


def built_versions() -> list[str]:
    """The Kafka versions whose image is built here from the current inputs (newest first);
    [] when Docker cannot be asked."""
    import docker

    try:
        client = docker.from_env()
        images = client.images.list(filters={"label": LABEL})
    except docker.errors.DockerException:
        return []
    seen = {img.labels.get(f"{LABEL}.kafka-version") for img in images}
    versions = sorted((v for v in seen if v and SUPPORTED_VERSIONS.match(v)),
                      key=lambda v: tuple(int(x) for x in v.split(".")), reverse=True)
    return [v for v in versions if _image_exists(client, image_tag_for(v))]


def resolve_image(kafka_version: str | None, image: str | None) -> str:
    """``--image`` wins (e.g. apache/kafka:4.1.1, used as is); else the local build."""
    if image:
        return image
    return build_kafka_image(kafka_version or DEFAULT_KAFKA_VERSION)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compose.image", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build (or find cached) the Kafka image")
    b.add_argument("--kafka-version", default=DEFAULT_KAFKA_VERSION)
    args = ap.parse_args(argv)
    try:
        print(build_kafka_image(args.kafka_version))
    except ImageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
