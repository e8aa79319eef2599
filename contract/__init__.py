"""The contract between kafka-chaos's stages, defined once (DESIGN.md §3-§5).

Every stage (compose, workloads, checkers, reports, chaos) may import this package; it imports
nothing heavy (pyarrow for the history schemas, nothing else outside the standard library), so
the stages share one definition of the history tables, the event kinds, the fault and anomaly
kinds, the expectation grammar, the run settings, the exit codes and results.json instead of
keeping copies that drift apart.

Modules: :mod:`contract.schemas`, :mod:`contract.events`, :mod:`contract.faults`,
:mod:`contract.windows`, :mod:`contract.anomalies`, :mod:`contract.conditions`,
:mod:`contract.settings`, :mod:`contract.exit_codes`, :mod:`contract.results`,
:mod:`contract.known_bugs`, :mod:`contract.owners` (what a killed process leaves and who
removes it), :mod:`contract.mechanisms` (what a scenario's ``mechanism`` may ask the history
to show).
"""
