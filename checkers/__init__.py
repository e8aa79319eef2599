"""kafka-chaos checkers: a run directory's history in, results.json out (PySpark).

Public entry points (called by ``chaos/cli.py``):

- :func:`check_run` — check a run directory, write and return results.json;
- :func:`exit_code` — 0 valid, 1 invalid, 2 unknown;
- :func:`warm_up` — start the Spark session in the background while a run goes on.
"""

from .check import check_run, exit_code
from .kinds import ANOMALY_KINDS, MAX_EXAMPLES
from .session import warm_up

__all__ = ["ANOMALY_KINDS", "MAX_EXAMPLES", "check_run", "exit_code", "warm_up"]
