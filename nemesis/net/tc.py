"""Our tc qdiscs: bandwidth limits (htb) and, where the kernel has it, netem delay.

One tree per interface, root handle ``4b43:`` ("KC"), so sweeps recognise ours::

    root 4b43: htb  default 1 (whole link shaped) or 2 (only chosen peers shaped)
      class 4b43:1  rate R ceil R        <- shaped traffic   [child 4b44: netem delay D J]
      class 4b43:2  rate 100gbit         <- everything else (only with peers)
      filter u32 match ip(6) dst PEER -> 4b43:1, one per peer

Replacing the root qdisc replaces whatever was there, so it is done only over the kernel's
own default (veths and Docker's eth0 have ``noqueue``, a NIC ``pfifo_fast``, ``fq_codel`` or
``mq``, with handle ``0:``); deleting ours restores that default. A root qdisc someone
configured (a team's own shaping on its hosts) is refused with :class:`NotOurs`, before any
device is touched.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence

from nemesis.net.netns import CommandFailed, NamespaceGone, NetNS

ROOT_HANDLE = "4b43:"
NETEM_HANDLE = "4b44:"
UNLIMITED = "100gbit"
#: The root qdiscs a kernel gives an interface by itself (always with handle ``0:``; one
#: added by hand gets a handle of its own, ``8001:`` when none is named).
KERNEL_DEFAULT_KINDS = frozenset({"noqueue", "pfifo_fast", "fq_codel", "mq"})
KERNEL_HANDLE = "0:"
_netem_cache: dict[str, bool] = {}


class NotOurs(RuntimeError):
    """A device's root qdisc is someone's own configuration: replacing it would wipe it."""


def root_qdisc(ns: NetNS, dev: str) -> tuple[str, str | None] | None:
    """``(kind, handle)`` of ``dev``'s root qdisc (e.g. ``("htb", "4b43:")``), None when it
    has none."""
    out = ns.run(["tc", "-j", "qdisc", "show", "dev", dev, "root"], check=False).stdout
    for qdisc in json.loads(out or "[]"):
        if qdisc.get("root"):
            handle = qdisc.get("handle")
            return str(qdisc.get("kind")), str(handle) if handle is not None else None
    return None


def root_handle(ns: NetNS, dev: str) -> str | None:
    """The handle of ``dev``'s root qdisc (e.g. ``"4b43:"``), None when it has none."""
    root = root_qdisc(ns, dev)
    return root[1] if root is not None else None


def kernel_default(root: tuple[str, str | None] | None) -> bool:
    """Whether a root qdisc (as :func:`root_qdisc` reads it) is the kernel's own."""
    return root is None or (root[0] in KERNEL_DEFAULT_KINDS and root[1] == KERNEL_HANDLE)


def netem_available(ns: NetNS) -> bool:
    """Whether this kernel has netem. Probed once per process by adding a zero-delay netem
    qdisc on ``ns``'s loopback and deleting it at once (qdisc kinds are kernel-wide)."""
    if "kernel" in _netem_cache:
        return _netem_cache["kernel"]
    probe = ns.run(["tc", "qdisc", "add", "dev", "lo", "root", "handle", ROOT_HANDLE,
                    "netem", "delay", "0ms"], check=False)
    if probe.returncode == 0:
        ns.run(["tc", "qdisc", "del", "dev", "lo", "root"], check=False)
    _netem_cache["kernel"] = probe.returncode == 0
    return _netem_cache["kernel"]


def _rate_kbit(rate_kbit: float | None) -> str:
    return f"{int(rate_kbit)}kbit" if rate_kbit else UNLIMITED


def tree_commands(dev: str, rate_kbit: float | None, peers: Sequence[str],
                  netem: Sequence[str] = ()) -> list[list[str]]:
    """The tc commands that build our tree on ``dev`` (pure: touches no kernel)."""
    rate = _rate_kbit(rate_kbit)
    # htb's burst must hold at least one GSO super-packet (64 KiB) or it cannot send it
    shaped = ["rate", rate, "ceil", rate, "burst", "64k", "cburst", "64k"]
    cmds = [
        ["tc", "qdisc", "replace", "dev", dev, "root", "handle", ROOT_HANDLE, "htb",
         "default", "2" if peers else "1"],
        ["tc", "class", "add", "dev", dev, "parent", ROOT_HANDLE, "classid", "4b43:1", "htb",
         *shaped],
    ]
    if peers:
        cmds.append(["tc", "class", "add", "dev", dev, "parent", ROOT_HANDLE, "classid",
                     "4b43:2", "htb", "rate", UNLIMITED])
    if netem:
        cmds.append(["tc", "qdisc", "add", "dev", dev, "parent", "4b43:1", "handle",
                     NETEM_HANDLE, "netem", *netem])
    for peer in peers:
        v6 = ":" in peer
        cmds.append(["tc", "filter", "add", "dev", dev, "parent", ROOT_HANDLE, "protocol",
                     "ipv6" if v6 else "ip", "prio", "1", "u32", "match",
                     "ip6" if v6 else "ip", "dst", f"{peer}/{128 if v6 else 32}",
                     "flowid", "4b43:1"])
    return cmds


def install(ns: NetNS, devs: Sequence[str], rate_kbit: float | None, peers: Sequence[str],
            netem: Sequence[str] = ()) -> list[str]:
    """Build our tree on each of ``devs``; refuse a device we already shape, and raise
    :class:`NotOurs` when one's root qdisc is not the kernel's default (every device is
    checked before any is changed). Returns the devices done (on failure, removes what it
    did and raises)."""
    for dev in devs:
        root = root_qdisc(ns, dev)
        if root is not None and root[1] == ROOT_HANDLE:
            raise ValueError(f"{dev} in {ns} is already shaped by kafka-chaos")
        if not kernel_default(root):
            assert root is not None
            raise NotOurs(f"{dev} in {ns} has a root qdisc of its own ({root[0]} "
                          f"{root[1]}): replacing it would wipe that shaping; left alone")
    done: list[str] = []
    try:
        for dev in devs:
            done.append(dev)
            for cmd in tree_commands(dev, rate_kbit, peers, netem):
                ns.run(cmd)
    except BaseException:
        remove(ns, done)
        raise
    return done


def remove(ns: NetNS, devs: Sequence[str]) -> int:
    """Delete our root qdisc from each of ``devs`` where it is ours; tolerate a vanished
    namespace or device. Returns how many were deleted."""
    deleted = 0
    for dev in devs:
        try:
            if root_handle(ns, dev) == ROOT_HANDLE:
                ns.run(["tc", "qdisc", "del", "dev", dev, "root"])
                deleted += 1
        except (NamespaceGone, CommandFailed, json.JSONDecodeError):
            continue
    return deleted


def all_devices(ns: NetNS) -> list[str]:
    """Every interface in ``ns`` (including down ones and lo), for sweeps."""
    links = json.loads(ns.run(["ip", "-j", "link", "show"]).stdout or "[]")
    return [link["ifname"] for link in links]


def netem_args(delay_ms: float, jitter_ms: float) -> list[str]:
    """netem's arguments for a delay with optional jitter."""
    args = ["delay", f"{delay_ms}ms"]
    if jitter_ms:
        args.append(f"{jitter_ms}ms")
    return args


def fresh_id() -> str:
    """A short unique id for one shaping fault."""
    return f"shape-{uuid.uuid4().hex[:8]}"
