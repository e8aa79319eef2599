"""The nemesis: faults, the network tools they use, and when they start and stop.

- :mod:`nemesis.faults`: one class per fault kind of the registry (:mod:`contract.faults`),
  built by kind name in :mod:`nemesis.faults.factory`; targets in :mod:`nemesis.faults.targets`.
- :mod:`nemesis.net`: network partitions, slow and lossy links, applied from outside a node
  (its network namespace entered from the host).
- :mod:`nemesis.schedule`: :class:`~nemesis.schedule.Nemesis`, the random schedule of
  ``--faults`` and scenarios' scripted sequences, healing on every exit.
- :mod:`nemesis.cluster_faults`: :class:`~nemesis.cluster_faults.ClusterFaults`, the same
  faults started and stopped on demand by a test body.
- :mod:`nemesis.dead_man`: the dead-man switch of a cluster kafka-chaos did not start, a
  watchdog per node that undoes our faults if the run vanishes (over SSH on the node;
  :mod:`nemesis.dead_man_containers` and :mod:`nemesis.dead_man_watchdog` on this host for
  a container node).

A fault acts on the cluster (``compose``) and records itself in the history's event log
(``contract.events``). It imports no checker, report, scenario, run wiring or plugin
(tests/test_layering.py), so nothing here can depend on how a run is judged or driven.
"""
