"""kafka-chaos checkers: a run directory's history in, results.json out (PySpark).

Public entry points (called by ``chaos/cli.py``):

- :func:`check_run` — check a run directory, write and return results.json;
- :func:`exit_code` — 0 valid, 1 invalid, 2 unknown.
"""

from contract.anomalies import ANOMALY_KINDS, MAX_EXAMPLES

from .check import check_run

__all__ = ["ANOMALY_KINDS", "MAX_EXAMPLES", "check_run"]
