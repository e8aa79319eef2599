"""Network faults applied from outside a node: partitions and slow/lossy links.

Everything runs inside a node's network namespace entered from the host (see
:class:`NetNS`), so broker images need no iptables or tc. See ``README.md`` here.
"""

from nemesis.net.netns import CommandFailed, NamespaceGone, NetNS
from nemesis.net.partition import (
    Node,
    Partitioner,
    PartitionHandle,
    PartitionSpec,
    arm_conntrack,
    disarm_conntrack,
    plan_rules,
)
from nemesis.net.shaping import Shaper, ShapingHandle
from nemesis.net.sweep import SweepReport, sweep

__all__ = [
    "CommandFailed",
    "NamespaceGone",
    "NetNS",
    "Node",
    "PartitionHandle",
    "PartitionSpec",
    "Partitioner",
    "Shaper",
    "ShapingHandle",
    "SweepReport",
    "arm_conntrack",
    "disarm_conntrack",
    "plan_rules",
    "sweep",
]
