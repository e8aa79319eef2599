"""A ``docker-compose.yml`` for the same KRaft cluster kafka-chaos starts, and its ``nodes.toml``.

For people who want the cluster to poke at with their own tools (``docker-compose up -d``),
and then to run kafka-chaos against it: ``kafka-chaos run --bootstrap-servers ... --nodes
nodes.toml`` faults its containers through this machine's Docker engine.

The file is generated, not shipped: the image is built locally (its tag carries a hash of
its inputs) and the network needs a /24 no other Docker network on this engine uses.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker

from compose.cleanup import extra_labels
from compose.cluster import free_subnets, new_cluster_id
from compose.config import CLIENT_PORT, DATA_DIR, ClusterConfig
from compose.image import resolve_image
from compose.node import server_properties, start_script

#: The label that marks a compose cluster (kafka-chaos's own sweeps leave it alone: it is
#: the user's, removed with ``docker-compose down -v``). A caller that tags everything its
#: process tree starts (``$KAFKA_CHAOS_EXTRA_LABELS``, as the test suite does) gets its
#: tags on the compose cluster's containers, network and volumes too, to find them again.
COMPOSE_LABEL = "io.kafka-chaos.compose"


@dataclass(frozen=True)
class ComposeFiles:
    """What :func:`write_compose_files` wrote, and where the cluster will answer."""

    compose: Path
    nodes: Path
    bootstrap_servers: str
    containers: tuple[str, ...]


def _yaml(value: Any, indent: int = 0) -> list[str]:
    """A small YAML writer for maps, lists and scalars (strings as JSON: valid YAML)."""
    pad = "  " * indent
    lines: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, (dict, list)) and v:
                lines.append(f"{pad}{k}:")
                lines += _yaml(v, indent + 1)
            else:
                lines.append(f"{pad}{k}: {_scalar(v)}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict):
                sub = _yaml(item, indent + 1)
                lines.append(f"{pad}- {sub[0].lstrip()}")
                lines += sub[1:]
            else:
                lines.append(f"{pad}- {_scalar(item)}")
    return lines


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if v == {} or v == []:
        return json.dumps(v)
    return json.dumps(str(v))


def compose_document(cfg: ClusterConfig, image: str, project: str,
                     subnet: ipaddress.IPv4Network,
                     labels: dict[str, str]) -> tuple[dict[str, Any], dict[int, str]]:
    """The compose file as a dict, and each node's IP."""
    ips = cfg.node_ips(subnet)
    voters = cfg.voters(ips)
    cid = new_cluster_id()
    services: dict[str, Any] = {}
    for nid in cfg.node_ids:
        props = server_properties(cfg, nid, ips[nid], voters)
        services[f"node{nid}"] = {
            "image": image,
            "container_name": f"{project}-node-{nid}",
            "hostname": f"node{nid}",
            # "$" is compose's interpolation: "$$" passes one through to bash.
            "command": ["bash", "-c", start_script(cid).replace("$", "$$")],
            "environment": {"KC_SERVER_PROPERTIES": "\n".join(f"{k}={v}"
                                                              for k, v in props.items()),
                            "KAFKA_HEAP_OPTS": cfg.heap_opts},
            "volumes": [f"node{nid}-data:{DATA_DIR}"],
            "networks": {"kafka": {"ipv4_address": ips[nid]}},
            "labels": {**labels, f"{COMPOSE_LABEL}.node": str(nid)},
            "stop_signal": "SIGTERM",
        }
    doc = {
        "version": "2.4",
        "services": services,
        "networks": {"kafka": {"driver": "bridge", "labels": labels, "ipam": {
            "config": [{"subnet": str(subnet), "gateway": str(next(subnet.hosts()))}]}}},
        "volumes": {f"node{nid}-data": {"labels": labels} for nid in cfg.node_ids},
    }
    return doc, ips


def write_compose_files(dest: Path, cfg: ClusterConfig, project: str = "kafka-chaos",
                        image: str | None = None,
                        labels: dict[str, str] | None = None) -> ComposeFiles:
    """Writes ``docker-compose.yml`` and ``nodes.toml`` into ``dest`` (builds the image on
    first use)."""
    cfg.validate()
    tag = resolve_image(cfg.kafka_version, image)
    free = free_subnets(docker.from_env())
    if not free:
        raise RuntimeError("no free /24 subnet in 172.24.0.0/13 for the compose network")
    doc, ips = compose_document(cfg, tag, project, free[-1],
                                {**extra_labels(), COMPOSE_LABEL: project, **(labels or {})})
    dest.mkdir(parents=True, exist_ok=True)
    compose = dest / "docker-compose.yml"
    compose.write_text(f"# kafka-chaos: a {len(cfg.node_ids)}-node KRaft cluster "
                       f"({tag}).\n# docker-compose -p {project} up -d;  "
                       f"docker-compose -p {project} down -v\n"
                       + "\n".join(_yaml(doc)) + "\n")
    nodes = dest / "nodes.toml"
    lines = ["# The compose cluster's nodes, faulted through this machine's Docker engine.",
             "# kafka-chaos run --bootstrap-servers "
             + ",".join(f"{ips[b]}:{CLIENT_PORT}" for b in cfg.broker_ids)
             + f" --nodes {nodes.name}"]
    for nid in cfg.node_ids:
        lines += ["", "[[node]]", f"id = {nid}",
                  f"container = {json.dumps(f'{project}-node-{nid}')}",
                  f"roles = {json.dumps(cfg.roles(nid))}"]
    nodes.write_text("\n".join(lines) + "\n")
    return ComposeFiles(compose, nodes,
                        ",".join(f"{ips[b]}:{CLIENT_PORT}" for b in cfg.broker_ids),
                        tuple(f"{project}-node-{nid}" for nid in cfg.node_ids))
