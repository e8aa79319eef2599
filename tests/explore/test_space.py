"""The explore's draws: seeded, valid runs, the fixed options kept, every client used."""

from __future__ import annotations

import pytest

from contract.known_bugs import KNOWN_BUGS
from runner.config import RunConfig, RunConfigError
from runner.explore.space import Space, covered, draw

SPACE = Space(("4.3.1", "3.9.1"), ("confluent-kafka", "java:4.1.1", "sarama:1.61.1"), 30.0)


def test_a_seed_and_an_index_give_the_same_draw_and_others_differ() -> None:
    assert draw(7, 3, SPACE) == draw(7, 3, SPACE)
    many = [draw(7, i, SPACE) for i in range(40)]
    assert len({repr(sorted(d.items())) for d in many}) == 40
    assert many != [draw(8, i, SPACE) for i in range(40)]


def test_every_draw_is_a_run_that_validates_and_accepts_the_known_bugs() -> None:
    many = [draw(1, i, SPACE) for i in range(60)]
    for opts in many:
        RunConfig(scenario="explore", **opts).validate()
        assert opts["accept_known"] == [b.id for b in KNOWN_BUGS]
        assert opts["duration"] == 30.0
        assert opts["brokers"] + (opts["controllers"] or 0) <= 6
    cov = covered(many)
    assert cov["client"] == ["confluent-kafka", "java:4.1.1", "sarama:1.61.1"]
    assert cov["kafka_version"] == ["3.9.1", "4.3.1"]
    assert {"0", "1", "all"} <= set(cov["acks"])
    assert len(cov["faults"]) >= 5


def test_fixed_options_are_not_drawn_and_an_impossible_space_is_refused() -> None:
    space = Space(("4.3.1",), fixed=(("brokers", 3), ("acks", "all")))
    for i in range(20):
        opts = draw(2, i, space)
        assert (opts["brokers"], opts["acks"]) == (3, "all")
    with pytest.raises(RunConfigError, match="no run of the space"):
        draw(2, 0, Space(("4.3.1",), fixed=(("brokers", 1),)))
