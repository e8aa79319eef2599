"""Test support for kafka-chaos: run directories written without a cluster.

Not part of the product: the wheel ships none of it (pyproject's package list leaves it out) and
no product package may import it (tests/test_layering.py); the tests and the benchmarks
(``bench/``) do. Every table is written with the contract's schemas (:mod:`contract.schemas`)
and every event with the contract's kinds (:mod:`contract.events`, :mod:`contract.faults`), so
nothing here spells out the history's format again, and the synthetic runs emit only what real
runs emit.

Modules: :mod:`.tables` (writing tables and events), :mod:`.literal` (small literal histories for
checker tests), :mod:`.hand_run` (the report's literal run), :mod:`.synthetic` (large, realistic
synthetic runs for the report; ``python -m tests.support.synthetic OUT``),
:mod:`.bench_data` (the checker benchmark's histories).
"""
