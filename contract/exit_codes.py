"""The exit codes of ``kafka-chaos run`` / ``check`` / ``report`` and of the nightly matrix
(DESIGN.md §5): 0 valid, 1 invalid, 2 unknown or error (bad input included)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

VALID = 0
INVALID = 1
UNKNOWN = 2
#: Bad input or a failure before anything could be decided (same code as unknown).
ERROR = 2


def exit_code_of_valid(valid: Any) -> int:
    """0 for ``valid: true``, 1 for ``false``, 2 for "unknown" or anything else."""
    if valid is True:
        return VALID
    if valid is False:
        return INVALID
    return UNKNOWN


def exit_code_of_results(results: Mapping[str, Any] | None) -> int:
    """The exit code of a results.json (2 when there is none: the run was never checked)."""
    return UNKNOWN if results is None else exit_code_of_valid(results.get("valid"))
