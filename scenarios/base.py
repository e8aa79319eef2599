"""What a scenario is: a named configuration, a scripted fault sequence that drives Kafka
into one mechanism, what must be observed for the run to count, and the expected outcome.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from contract.clients import fault_unsupported
from contract.events import Event
from contract.faults import EXISTING_CLUSTER_FAULTS
from contract.settings import CLASSIC_ONLY_CONSUMER_KEYS
from runner.config import RunConfig

Script = Callable[[Any], None]  # called with the run's Nemesis
Expect = dict[str, Any]
#: A scenario without faults that needs something to happen before its run may end: a pure
#: test of the events recorded so far (events.jsonl, sorted by time).
DoneWhen = Callable[[list[Event]], bool]


@dataclass
class Scenario:
    """A named chaos scenario.

    ``config`` overrides RunConfig fields. ``expect`` / ``mechanism`` are either fixed or
    functions of (config, Kafka version), because the outcome depends on both (e.g. unclean
    election on or off). ``script`` is None for random faults from ``config['faults']``.
    ``settle_s``: when set, the workload ends this long after the script returns (the
    configured duration stays the upper bound), so a script that finishes early does not
    leave the run idling until the deadline; None runs the workload to its full duration.
    ``done_when``: for a scenario with no faults, what must be in the history before the
    workload may end; once it holds, the workload ends ``settle_s`` later (the duration is
    still the upper bound: a run where it never holds runs to the end).
    ``script_faults``: every fault kind the script starts (contract.faults), checked before
    a run on a cluster kafka-chaos did not start; the nemesis refuses any other kind there.
    """

    name: str
    summary: str
    doc: str
    config: dict[str, Any] = field(default_factory=dict)
    script: Script | None = None
    expect: Expect | Callable[[RunConfig, str], Expect] = field(default_factory=dict)
    mechanism: list[dict[str, Any]] | Callable[[RunConfig, str], list[dict[str, Any]]] = (
        field(default_factory=list))
    settle_s: float | None = None
    done_when: DoneWhen | None = None
    script_faults: tuple[str, ...] = ()

    def run_config(self, **overrides: Any) -> RunConfig:
        """The scenario's configuration with command-line overrides applied on top.

        Run with KIP-848 groups (``group_protocol="consumer"``), a scenario's own tuning of
        the classic protocol (``CLASSIC_ONLY_CONSUMER_KEYS`` in its ``consumer_config``:
        KIP-848 sets those broker side) is dropped; the same keys from the caller are kept,
        and refused by :meth:`RunConfig.validate`."""
        base = RunConfig(scenario=self.name)
        mine = dict(self.config)
        if ("consumer_config" in mine
                and (overrides.get("group_protocol") or mine.get("group_protocol")) == "consumer"):
            mine["consumer_config"] = {k: v for k, v in mine["consumer_config"].items()
                                       if k not in CLASSIC_ONLY_CONSUMER_KEYS}
        merged = {**mine, **{k: v for k, v in overrides.items() if v is not None}}
        for key in ("broker_config", "topic_config", "producer_config", "consumer_config"):
            if key in mine and key in overrides and overrides[key] is not None:
                merged[key] = {**mine[key], **overrides[key]}
        return base.replace(**merged)

    def refusal(self, cfg: RunConfig) -> str | None:
        """Why this scenario cannot run as ``cfg`` says (one line), or None: its script's
        faults must be ones the run's client can take, and on a cluster kafka-chaos did not
        start, ones that cluster allows."""
        if self.script is None:
            return None
        if (why := fault_unsupported(cfg.client_spec, self.script_faults)) is not None:
            return f"scenario {self.name}: {why}"
        if cfg.bootstrap_servers is None:
            return None
        cannot = [k for k in self.script_faults if k not in EXISTING_CLUSTER_FAULTS]
        if cannot:
            return (f"scenario {self.name} starts {', '.join(cannot)}, which needs a cluster "
                    f"kafka-chaos starts (on --nodes: {', '.join(EXISTING_CLUSTER_FAULTS)})")
        return None

    def expect_for(self, cfg: RunConfig, kafka_version: str) -> Expect:
        return self.expect(cfg, kafka_version) if callable(self.expect) else dict(self.expect)

    def mechanism_for(self, cfg: RunConfig, kafka_version: str) -> list[dict[str, Any]]:
        if callable(self.mechanism):
            return self.mechanism(cfg, kafka_version)
        return list(self.mechanism)


def installed_client_version() -> str | None:
    """The confluent-kafka release installed with kafka-chaos (the workload's default)."""
    try:
        from importlib.metadata import version

        return version("confluent-kafka")
    except Exception:  # noqa: BLE001 - unknown: the registry counts it as affected
        return None


def librdkafka_shows(kind: str, *clean: str) -> Callable[[RunConfig, str], Expect]:
    """The outcome of a librdkafka bug whose other side is another client: with
    confluent-kafka (the default) the run is INVALID with ``kind`` counted; with any other
    client it is valid, with none of ``kind`` nor of ``clean``."""

    def expect(cfg: RunConfig, kafka_version: str) -> Expect:
        if cfg.client is None or cfg.client.startswith("confluent-kafka"):
            return {"valid": False, "anomalies": {kind: ">0"}}
        return {"valid": True, "anomalies": {k: "==0" for k in (kind, *clean)}}

    return expect
