"""Producers whose process ended inside a watched call they had entered with their rows
written (run option ``send_offsets``): what their history can miss, and what it cannot.

A producer process that did not end cleanly leaves the verdict open (proof.py): the
attempts it still held are missing from its history. One case is proved from the history
instead of assumed:

- the ``hung-call`` event says ``rows_written``: the producer wrote every row it could just
  before the call began, so only the attempts of its open transaction were unwritten;
- the call never returned: the run still saw it in progress when it stopped watching,
  after the process had ended (``returned: false`` in the end event). Nothing after the
  call ran, so that transaction was never committed: its coordinator aborts it (on its
  timeout) or it stays open, and a read_committed reader is served neither;
- every reader of the run, the drain too, reads read_committed.

Then the missing attempts are records no reader can show: the history is whole for the
verdict. The same call decides the producer's liveness: a process blocked in a call that
serves no delivery report (:data:`NO_DELIVERY_CALLS`) from before the liveness phase
until after it could record no acknowledgement there, so it is stuck, as a fact.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from contract.events import hung_call_pairs
from contract.schemas import DRAIN_READER
from contract.settings import READ_COMMITTED, Settings

from .history import Event

#: Watched calls that do not serve the application's delivery reports while they wait
#: (librdkafka answers them on a queue of their own; flush and commit_transaction do
#: serve them): a producer blocked in one records no acknowledgement meanwhile.
NO_DELIVERY_CALLS = frozenset({"send_offsets_to_transaction"})


@dataclass(frozen=True)
class KilledInCall:
    """One producer that ended inside a call it entered with its rows written."""

    client: str
    call: str
    since_ns: int
    exitcode: Any

    def summary(self) -> str:
        return (f"{self.client} (exit code {self.exitcode}) ended inside "
                f"{self.call}(), entered with its rows written, which never returned")


def killed_in_calls(events: list[Event], exits: dict[str, Any]) -> dict[str, KilledInCall]:
    """Producer name -> its call, for each producer whose exit code (``exits``, from the
    workload's end event) is not 0 and that ended inside a call entered with its rows
    written and never seen to return."""
    out: dict[str, KilledInCall] = {}
    for start, end in hung_call_pairs(events):
        d = start.detail
        name = str(d.get("client"))
        code = exits.get(name)
        if (d.get("rows_written") is True and end is not None
                and end.detail.get("returned") is False and code is not None and code != 0
                and isinstance(d.get("since_ns"), int)):
            out[name] = KilledInCall(name, str(d.get("call")), int(d["since_ns"]), code)
    return out


def readers_miss_open_transactions(settings: Settings, readers: Iterable[str]) -> str | None:
    """None when every reader (the drain, each configured consumer and each of ``readers``,
    those that read) reads read_committed, so an open or aborted transaction's records
    reach none; else the first reader that could be served them."""
    for reader in (DRAIN_READER, *sorted(set(settings.reader_modes) | set(readers))):
        if settings.isolation(reader) != READ_COMMITTED:
            return reader
    return None


def blocked_through(killed: KilledInCall, lo_ns: int) -> bool:
    """The producer was blocked in a call that serves no delivery report from before
    ``lo_ns`` until it ended (after the window: the run stops the producers after the
    liveness phase)."""
    return killed.call in NO_DELIVERY_CALLS and killed.since_ns <= lo_ns
