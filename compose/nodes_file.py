"""``nodes.toml``: the nodes of an existing cluster that faults may touch, and how to reach them.

Top-level keys are defaults for every ``[[node]]``; a node may override any of them::

    user = "root"
    key = "~/.ssh/id_ed25519"
    kafka_home = "/opt/kafka"
    log_dirs = ["/var/lib/kafka/data"]
    start = "/opt/kafka/bin/kafka-server-start.sh -daemon /opt/kafka/config/server.properties"

    [[node]]
    id = 1                     # the broker's node.id
    host = "10.0.0.11"         # SSH address (also its Kafka address unless ``ip`` is given)
    roles = "broker,controller"

A node that is a container on this machine's Docker engine (e.g. started from the
``docker-compose.yml`` that ``kafka-chaos cluster compose-file`` writes) is named by its
container instead of a host: ``container = "kc-compose-node-1"``; its faults then go through
the engine, as for a cluster kafka-chaos starts.

Only the nodes listed are ever faulted.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compose.ssh import SshTarget

#: Keys a node (or the defaults) may set, with their defaults.
DEFAULTS: dict[str, Any] = {
    "user": "root",
    "ssh_port": 22,
    "key": None,
    "known_hosts": None,
    "kafka_home": "/opt/kafka",
    "log_dirs": ["/var/lib/kafka/data"],
    "server_log": None,  # default: <kafka_home>/logs/server.log
    "start": None,  # default: kafka-server-start.sh -daemon <kafka_home>/config/server.properties
    "process": "kafka.Kafka",  # pgrep -f pattern of the broker's JVM
    "client_port": 9092,
    "controller_port": 9093,
    "roles": "broker,controller",
}
NODE_KEYS = {"id", "host", "ip", "container", *DEFAULTS}
_TYPES: dict[str, type | tuple[type, ...]] = {
    "user": str, "ssh_port": int, "key": str, "known_hosts": str, "kafka_home": str,
    "log_dirs": list, "server_log": str, "start": str, "process": str, "client_port": int,
    "controller_port": int, "roles": str, "id": int, "host": str, "ip": str, "container": str,
}


class NodesFileError(ValueError):
    """nodes.toml is missing, unreadable or wrong; the message says where, in one line."""


@dataclass(frozen=True)
class RemoteNodeSpec:
    """One node of an existing cluster, as nodes.toml describes it."""

    node_id: int
    ip: str  # "" for a container: read from the engine when the run starts
    roles: str
    ssh: SshTarget | None  # None: a local container, reached through the engine
    kafka_home: str
    log_dirs: tuple[str, ...]
    server_log: str
    start: str
    process: str
    client_port: int
    controller_port: int
    container: str | None = None


def _resolve(host: str) -> str:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    try:
        return socket.gethostbyname(host)
    except OSError as e:
        raise NodesFileError(f"cannot resolve node host {host!r}: {e}") from None


#: What the values that reach a command line may look like: none may start with "-" (an
#: option to ssh or pgrep) or carry a space or a shell character.
_SHAPES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("user", re.compile(r"[a-z_][a-z0-9_.-]{0,31}"), "a user name ([a-z_][a-z0-9_.-]*)"),
    ("host", re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]*|[0-9A-Fa-f:]+"),
     "a host name or an IP address"),
    ("container", re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*"), "a container name"),
    ("process", re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.]*"),
     "a Java main class name (kafka.Kafka)"),
)


def _node(raw: dict[str, Any], defaults: dict[str, Any], where: str) -> RemoteNodeSpec:
    unknown = sorted(set(raw) - NODE_KEYS)
    if unknown:
        raise NodesFileError(f"{where}: unknown key(s) {', '.join(unknown)} "
                             f"(known: {', '.join(sorted(NODE_KEYS))})")
    v = {**defaults, **raw}
    for key, typ in _TYPES.items():
        if v.get(key) is not None and not isinstance(v[key], typ):
            raise NodesFileError(f"{where}: {key} must be a {getattr(typ, '__name__', typ)}, "
                                 f"got {v[key]!r}")
    if "id" not in v or ("host" in v) == ("container" in v):
        raise NodesFileError(f"{where}: every [[node]] needs an id and either a host (SSH) "
                             "or a container (this machine's Docker engine)")
    for key, pattern, what in _SHAPES:
        if v.get(key) is not None and not pattern.fullmatch(str(v[key])):
            raise NodesFileError(f"{where}: {key} must be {what}, got {v[key]!r}")
    if not all(isinstance(d, str) and d.startswith("/") and ".." not in d.split("/")
               for d in v["log_dirs"]):
        raise NodesFileError(f"{where}: log_dirs must be absolute paths without '..', "
                             f"got {v['log_dirs']!r}")
    roles = v["roles"]
    if not set(roles.split(",")) <= {"broker", "controller"}:
        raise NodesFileError(f"{where}: roles must be broker, controller or both, got {roles!r}")
    home = v["kafka_home"].rstrip("/")
    key = v["key"]
    if key is not None and not Path(key).expanduser().is_file():
        raise NodesFileError(f"{where}: key file {key} does not exist")
    container = v.get("container")
    return RemoteNodeSpec(
        node_id=v["id"], roles=roles, container=container,
        ip=_resolve(v["ip"]) if v.get("ip") else "" if container else _resolve(v["host"]),
        ssh=None if container else SshTarget(v["host"], v["user"], v["ssh_port"], key,
                                             v["known_hosts"]),
        kafka_home=home, log_dirs=tuple(v["log_dirs"]),
        server_log=v["server_log"] or f"{home}/logs/server.log",
        start=v["start"] or (f"{home}/bin/kafka-server-start.sh -daemon "
                             f"{home}/config/server.properties"),
        process=v["process"], client_port=v["client_port"],
        controller_port=v["controller_port"])


def load_nodes(path: str | Path) -> list[RemoteNodeSpec]:
    """The nodes of ``path``; raises :class:`NodesFileError` with a one-line reason."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except OSError as e:
        raise NodesFileError(f"cannot read {p}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise NodesFileError(f"{p}: not valid TOML: {e}") from None
    nodes = data.pop("node", None)
    if not isinstance(nodes, list) or not nodes:
        raise NodesFileError(f"{p}: no [[node]] tables")
    stray = sorted(set(data) - set(DEFAULTS))
    if stray:
        raise NodesFileError(f"{p}: unknown top-level key(s) {', '.join(stray)}")
    defaults = {**DEFAULTS, **data}
    specs = [_node(raw, defaults, f"{p} node #{i + 1}") for i, raw in enumerate(nodes)]
    ids = [s.node_id for s in specs]
    if len(set(ids)) != len(ids):
        raise NodesFileError(f"{p}: node ids repeat: {ids}")
    return specs
