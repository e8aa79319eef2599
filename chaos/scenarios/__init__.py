"""Named chaos scenarios: the built-in catalogue and user scenarios from TOML files."""

from chaos.scenarios.base import Scenario
from chaos.scenarios.catalog import SCENARIOS

__all__ = ["SCENARIOS", "Scenario"]
