"""What a librdkafka consumer says about its partitions, for a test's failure message.

A consumer that stops reading gives no error; its statistics (``statistics.interval.ms``)
still say which state each assigned partition's fetcher is in (``offset-query``,
``offset-wait``, ``active``, ...), its leader, next offset and committed offset, and the
state of each broker connection: the evidence a client bug report needs.

``never_started`` names the shape of librdkafka#5586 (open; librdkafka 2.16 has it): when the
OffsetFetch that follows an assignment is answered NOT_COORDINATOR for the whole request (the
group's coordinator moved, e.g. a killed broker came back and led ``__consumer_offsets``
again), the partition waits for its committed offset forever — no retry, no error — while
the group looks steady. A new assignment (a rejoin) recovers it.
"""

from __future__ import annotations

import json
from typing import Any

#: How often the statistics come (they are delivered inside ``poll``/``consume``).
STATS_INTERVAL_MS = 1000
#: librdkafka's "no offset" (RD_KAFKA_OFFSET_INVALID) in the statistics.
OFFSET_INVALID = -1001


class ConsumerStats:
    """Keeps a consumer's latest statistics; ``conf()`` goes into the consumer's config."""

    def __init__(self) -> None:
        self.last: dict[str, Any] | None = None

    def conf(self) -> dict[str, Any]:
        return {"statistics.interval.ms": STATS_INTERVAL_MS, "stats_cb": self._on_stats}

    def _on_stats(self, text: str) -> None:
        try:
            self.last = json.loads(text)
        except ValueError:  # a callback must not raise inside poll
            self.last = None

    def never_started(self, topic: str) -> list[int]:
        """Assigned partitions of ``topic`` in librdkafka#5586's shape: the group steady, the
        fetcher in state ``none`` and no committed offset known (a fresh assignment passes
        through it for milliseconds; a caller waits before it acts)."""
        s = self.last
        cgrp = (s or {}).get("cgrp") or {}
        if s is None or cgrp.get("join_state") != "steady" or not cgrp.get("assignment_size"):
            return []
        parts = ((s.get("topics") or {}).get(topic) or {}).get("partitions", {})
        return sorted(int(pid) for pid, p in parts.items()
                      if int(pid) >= 0 and p.get("fetch_state") == "none"
                      and p.get("committed_offset") == OFFSET_INVALID)

    def describe(self, topic: str) -> str:
        """One line: each partition's fetch state and offsets, each broker's state."""
        s = self.last
        if s is None:
            return "no statistics received"
        parts = []
        for pid, p in sorted(((s.get("topics") or {}).get(topic) or {}).get(
                "partitions", {}).items(), key=lambda kv: int(kv[0])):
            if int(pid) < 0:  # the internal UA partition
                continue
            parts.append(f"{topic}:{pid} fetch_state={p.get('fetch_state')} "
                         f"leader={p.get('leader')} next={p.get('next_offset')} "
                         f"app={p.get('app_offset')} committed={p.get('committed_offset')} "
                         f"hi={p.get('hi_offset')} ls={p.get('ls_offset')}")
        brokers = [f"{b.get('nodeid')}:{b.get('state')}"
                   for b in (s.get("brokers") or {}).values() if int(b.get("nodeid", -1)) >= 0]
        cgrp = s.get("cgrp") or {}
        return (f"{'; '.join(parts) or 'no partitions of ' + topic}; group "
                f"state={cgrp.get('state')} join_state={cgrp.get('join_state')} "
                f"assigned={cgrp.get('assignment_size')}; brokers {' '.join(sorted(brokers))}")
