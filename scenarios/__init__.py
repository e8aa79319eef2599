"""Named chaos scenarios: the built-in catalogue and user scenarios from TOML files.

A scenario is run options (:class:`runner.config.RunConfig` fields), a script over the
nemesis' faults, the mechanism it must show (:mod:`contract.mechanisms`) and its expected
outcome. Of the run wiring it imports only those options (tests/test_layering.py)."""

from scenarios.base import Scenario
from scenarios.catalog import SCENARIOS

__all__ = ["SCENARIOS", "Scenario"]
