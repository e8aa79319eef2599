"""kafka-chaos checkers: a run directory's history in, results.json out (PySpark).

Public entry points (called by ``runner/cli.py``):

- :func:`check_run` — check a run directory, write and return results.json;
- :func:`warm_up` — start the Spark session in the background while a run goes on, and
  warm it with one tiny check (checkers/warmup.py).

Its exit code is ``contract.exit_codes.exit_code_of_results`` (0 valid, 1 invalid, 2 unknown).
"""

from contract.anomalies import ANOMALY_KINDS, MAX_EXAMPLES

from .check import check_run
from .warmup import warm_up

__all__ = ["ANOMALY_KINDS", "MAX_EXAMPLES", "check_run", "warm_up"]
