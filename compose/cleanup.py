"""Removes what kafka-chaos started in Docker, found by label, on every exit path.

Everything we create carries ``io.kafka-chaos=1`` plus the cluster name and the pid of the
process that owns it. ``sweep(cluster)`` removes one cluster's containers, networks and
volumes; ``sweep_orphans()`` removes those whose owning process is gone (a run killed with
SIGKILL cannot clean up after itself; the next one does). ``python -m compose.cleanup``
removes every labelled resource.
"""

from __future__ import annotations

import logging
import os
import sys

import docker
from tenacity import Retrying, retry_if_result, stop_after_delay, wait_fixed

from contract.owners import host_identity, pid_alive

LABEL = "io.kafka-chaos"
LABEL_CLUSTER = f"{LABEL}.cluster"
LABEL_OWNER = f"{LABEL}.owner-pid"
# where that pid means something: the owner's boot id and pid namespace (contract.owners)
LABEL_OWNER_HOST = f"{LABEL}.owner-host"
LABEL_ROLE = f"{LABEL}.role"
LABEL_NODE = f"{LABEL}.node"
log = logging.getLogger(__name__)
# ``io.kafka-chaos.<key>=<value>,...``: labels a caller adds to everything its process tree
# starts, to find it again (the test suite tags each test's clusters and run subprocesses).
ENV_EXTRA_LABELS = "KAFKA_CHAOS_EXTRA_LABELS"


def extra_labels() -> dict[str, str]:
    """The labels ``$KAFKA_CHAOS_EXTRA_LABELS`` asks for (keys outside ``io.kafka-chaos.``
    are ignored: the core labels above are never overridden)."""
    out: dict[str, str] = {}
    for item in os.environ.get(ENV_EXTRA_LABELS, "").split(","):
        key, sep, value = item.strip().partition("=")
        if sep and key.startswith(f"{LABEL}.") and key not in (
                LABEL_CLUSTER, LABEL_OWNER, LABEL_OWNER_HOST, LABEL_ROLE, LABEL_NODE):
            out[key] = value
    return out


def labels(cluster: str, role: str, node: int | None = None) -> dict[str, str]:
    """The labels every resource of ``cluster`` carries."""
    out = {**extra_labels(), LABEL: "1", LABEL_CLUSTER: cluster, LABEL_OWNER: str(os.getpid()),
           LABEL_OWNER_HOST: host_identity(), LABEL_ROLE: role}
    if node is not None:
        out[LABEL_NODE] = str(node)
    return out


def _removed_elsewhere(err: docker.errors.APIError) -> bool:
    """Whether Docker refused a removal because another caller is removing it already."""
    return err.status_code == 409 and "already in progress" in str(err.explanation or "")


def _wait_gone(client: docker.DockerClient, ids: list[str], timeout_s: float = 60.0) -> None:
    """Waits, at most ``timeout_s``, until the containers ``ids`` no longer exist (what is
    still there then makes its network's removal fail, with Docker's reason)."""
    if not ids:  # (an empty id filter would list every container)
        return
    Retrying(stop=stop_after_delay(timeout_s), wait=wait_fixed(0.2),
             retry=retry_if_result(bool), retry_error_callback=lambda _state: None)(
        client.containers.list, all=True, filters={"id": ids}, ignore_removed=True)


def sweep(client: docker.DockerClient, filters: dict[str, str]) -> int:
    """Removes containers, then networks, then volumes matching the label filters."""
    label_filter = [f"{k}={v}" if v else k for k, v in filters.items()]
    removed = 0
    elsewhere: list[str] = []
    # ignore_removed: docker-py inspects each listed container, and another process (a run
    # beside this one, a second test session) may remove one in between.
    for c in client.containers.list(all=True, filters={"label": label_filter},
                                    ignore_removed=True):
        try:
            c.remove(force=True, v=True)
            removed += 1
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as err:
            if not _removed_elsewhere(err):
                raise
            elsewhere.append(c.id)
    # Their networks and volumes stay in use until those removals end.
    _wait_gone(client, elsewhere)
    for n in client.networks.list(filters={"label": label_filter}):
        try:
            n.remove()
            removed += 1
        except docker.errors.NotFound:
            pass
    for v in client.volumes.list(filters={"label": label_filter}):
        try:
            v.remove(force=True)
            removed += 1
        except docker.errors.NotFound:
            pass
    return removed


def sweep_cluster(client: docker.DockerClient, cluster: str) -> int:
    return sweep(client, {LABEL_CLUSTER: cluster})


def _provably_ours(lab: dict[str, str], here: str) -> bool:
    """Whether the labels' owner pid names a process of this boot and pid namespace (only
    then can its absence prove the owner dead). Without the label (an older kafka-chaos)
    nothing is proven: ``python -m compose.cleanup`` removes such leftovers."""
    return bool(here) and lab.get(LABEL_OWNER_HOST) == here and lab.get(
        LABEL_OWNER, "").isdigit()


def sweep_orphans(client: docker.DockerClient) -> int:
    """Removes clusters whose owning process provably no longer exists: its pid is of this
    boot and pid namespace and names no live process. Another host's or namespace's
    cluster on a shared engine is never touched."""
    here = host_identity()
    owners: dict[str, int] = {}
    for c in client.containers.list(all=True, filters={"label": LABEL},
                                    ignore_removed=True):
        lab = c.labels
        if LABEL_CLUSTER in lab and _provably_ours(lab, here):
            owners[lab[LABEL_CLUSTER]] = int(lab[LABEL_OWNER])
    for n in client.networks.list(filters={"label": LABEL}):
        lab = n.attrs.get("Labels") or {}
        if LABEL_CLUSTER in lab and _provably_ours(lab, here):
            owners.setdefault(lab[LABEL_CLUSTER], int(lab[LABEL_OWNER]))
    removed = 0
    for cluster, pid in owners.items():
        if pid_alive(pid):
            continue
        try:
            removed += sweep_cluster(client, cluster)
        except docker.errors.APIError as err:
            if err.status_code not in (403, 409):
                raise
            # In use (Docker says 403 for a network with endpoints, 409 for a volume):
            # another process sweeps the same orphan at this moment, two runs starting at
            # once, beyond what sweep waits for. What is left goes in the next sweep; this
            # start goes on.
            log.warning("orphan cluster %s left for the next sweep: %s", cluster,
                        err.explanation)
    return removed


def main() -> int:
    client = docker.from_env()
    n = sweep(client, {LABEL: ""})
    print(f"removed {n} kafka-chaos resource(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
