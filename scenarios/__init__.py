"""Named chaos scenarios: the built-in catalogue and user scenarios from TOML files."""

from scenarios.base import Scenario
from scenarios.catalog import SCENARIOS

__all__ = ["SCENARIOS", "Scenario"]
