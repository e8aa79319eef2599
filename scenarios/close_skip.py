"""close-past-marker (librdkafka#3400): a caught-up group consumer that works a second
before it closes, while a transactional producer goes on; librdkafka's close commits past
the records its fetcher queued meanwhile. The catalogue entry (scenarios/bugs.py) runs it
with the Java client as the other side."""

from __future__ import annotations

from scenarios.base import Scenario, librdkafka_shows
from scenarios.eof_restart import eof_restarts_done

CLOSE_PAST_MARKER = Scenario(
    name="close-past-marker",
    summary="librdkafka#3400: a consumer's close commits past a transaction its fetcher "
            "queued but never returned; the group's next consumer skips it",
    doc=(
        "One broker, one partition, one transactional producer (100 records/s, 10 a "
        "transaction), no faults. The consumer (read_committed, auto-commit) is alone in its "
        "own group and restarts each time it has caught up: an empty poll, then a second "
        "of the application's own work without a poll (--restart-close-delay 1), then "
        "close() — which commits its stored offsets — and a second later a new consumer "
        "resumes at the committed offset. Meanwhile librdkafka's fetcher queued the "
        "transactions committed in that second, their markers included. close() drops the "
        "queued records but handles the queued markers, each storing its offset + 1, and "
        "commits the last: the new consumer resumes after transactions it was never "
        "given (a poll-skip the drain reads). A restart may re-read but must never skip. "
        "The workload ends 4 s after the third restart's new consumer is assigned (45 s at "
        "most)."
    ),
    config={"brokers": 1, "partitions": 1, "replication_factor": 1, "min_insync": 1,
            "acks": "all", "transactions": True, "producers": 1, "rate": 100.0,
            "consumers": 1, "consumer_mode": "restart", "isolation_level": "read_committed",
            "restart_close_delay": 1.0, "faults": [], "duration": 45.0},
    expect=librdkafka_shows("poll-skip", "nonmonotonic-poll"),
    # a clean run without a restart proves nothing
    mechanism=[{"kind": "consumer-restart", "count": 1}],
    done_when=eof_restarts_done,
    settle_s=4.0,
)
