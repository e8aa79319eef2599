"""The unclean-election scenario's precondition (scenarios/replication.py): a lone
in-sync leader that acknowledged writes its followers lack, verified from the leader's own
high watermark and epoch, and made again when the cluster strayed from the path.
"""

from __future__ import annotations

import logging
from typing import Any

from nemesis.faults.base import Fault
from nemesis.faults.network import Partition
from scenarios import replication_steps as st

log = logging.getLogger("kafka_chaos.scenarios")

#: Records the lone leader must acknowledge, its high watermark moving on in the leader
#: epoch the cut began in, before it is killed: the tail this scenario is about.
_ALONE_TAIL = 100
#: What one attempt at the situation takes at most, with the kill and election after it:
#: a missed attempt is tried again only while this much of the workload is left.
_ATTEMPT_S = 30.0


def lone_leader_with_a_tail(nem: Any) -> tuple[int, Fault]:
    """Brings the partition to a lone in-sync leader that acknowledged writes its followers
    lack; returns the leader and the cut still keeping them apart. An attempt the cluster
    strayed from (on a starved machine the controller fenced healthy brokers, and an
    unclean election made the leader the lone ISR member without it acknowledging
    anything) is healed and tried again while the workload has time left."""
    attempt = 1
    while True:
        try:
            return _alone_attempt(nem, attempt)
        except st.SetupFailed as e:
            if nem.stop.is_set() or st.time_left(nem) < _ATTEMPT_S:
                raise
            log.info("attempt %d missed the situation (%s); trying again", attempt, e)
            attempt += 1


def _alone_attempt(nem: Any, attempt: int) -> tuple[int, Fault]:
    admin = nem.ctx.cluster.admin()
    try:
        # The preferred replica: any other leader is moved back to it by the controller's
        # periodic rebalance (every 5 s here) in the middle of the attempt.
        s = st.wait_state(nem, "the preferred replica leading with the full ISR",
                          lambda p: st.full_isr(p) and p.leader == p.replicas[0], 12)
    except st.SetupFailed:  # auto.leader.rebalance.enable=false: it may never lead again
        s = st.wait_state(nem, "a leader with the full ISR", st.full_isr, 30)
    leader = s.leader
    epoch = st.wait_offsets(nem, "the leader's epoch", lambda o: o.epoch is not None, 10,
                            admin).epoch
    # The followers stop replicating (cut from the leader; all brokers still reach the
    # dedicated controller, so nobody is fenced) until the leader drops them from the ISR.
    cut = st.start(nem, Partition("leader-followers", str(leader)))
    try:
        st.wait_state(nem, "the ISR shrunk to the leader alone",
                      st.led_alone_by(leader), 20)
        # min.insync.replicas=1: the lone leader goes on acknowledging writes nobody else
        # has. Shown by its high watermark moving on in the epoch the cut began in (a
        # re-election would start a new epoch, and its leader might acknowledge nothing).
        first = st.wait_offsets(nem, "the lone leader's high watermark",
                                lambda o: o.epoch is not None, 5, admin)
        nem.wait(3)
        then = st.wait_offsets(nem, f"{_ALONE_TAIL} records acknowledged by the lone leader",
                               lambda o: o.epoch != epoch or o.hw >= first.hw + _ALONE_TAIL,
                               5, admin)
        if not first.epoch == then.epoch == epoch:
            raise st.SetupFailed(f"leader {leader} was re-elected: leader epoch "
                                 f"{first.epoch}/{then.epoch}, the cut began in {epoch}")
        s = st.wait_state(nem, "the ISR still the leader alone",
                          st.led_alone_by(leader), 1)
    except st.SetupFailed:
        nem.end_fault(cut)
        raise
    st.situation(nem, "the lone in-sync leader acknowledged writes its followers lack",
                 [leader], isr=list(s.isr), leader_epoch=epoch,
                 high_watermark_alone=[first.hw, then.hw], attempt=attempt)
    return leader, cut
