"""kafka-chaos workloads: the write side of a run.

Producers and consumers (one OS process each), the final drain, and the cluster observer,
all writing the run's history (DESIGN.md §3) crash-safely through ``workloads.history``.
This is the façade the orchestrator uses.
"""

from contract.events import EventLog
from workloads.call_watch import CallWatcher
from workloads.config import ConsumerConfig, ConsumerSpec, ProducerConfig, WorkloadConfigError
from workloads.drain import DrainResult, drain
from workloads.observer import Observer
from workloads.processes import (
    ChildInterpreter,
    ProcessGroup,
    new_stop_event,
    start_consumers,
    start_producers,
)
from workloads.record import decode, encode

__all__ = [
    "CallWatcher",
    "ChildInterpreter",
    "ConsumerConfig",
    "ConsumerSpec",
    "DrainResult",
    "EventLog",
    "Observer",
    "ProcessGroup",
    "ProducerConfig",
    "WorkloadConfigError",
    "decode",
    "drain",
    "encode",
    "new_stop_event",
    "start_consumers",
    "start_producers",
]
