"""The exit codes of ``kafka-chaos run`` / ``check`` / ``report`` and of the nightly matrix
(DESIGN.md §5): 0 valid (and every stated expectation met), 1 invalid or an expectation
missed, 2 unknown or error (bad input included)."""

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


def missed_expectations(results: Mapping[str, Any] | None) -> list[str]:
    """The run's own expectations (results.json ``expectations``) that were not met, as
    "<what> (got <actual>)" lines."""
    block = (results or {}).get("expectations")
    if not isinstance(block, Mapping) or block.get("met") is not False:
        return []
    return [f"{d.get('what')} (got {d.get('actual')})" for d in block.get("details") or []
            if isinstance(d, Mapping) and not d.get("met")] or ["the expectations (not met)"]


def exit_code_of_results(results: Mapping[str, Any] | None) -> int:
    """The exit code of a results.json (2 when there is none: the run was never checked); a
    valid run that missed one of its stated expectations is 1."""
    if results is None:
        return UNKNOWN
    code = exit_code_of_valid(results.get("valid"))
    if code == VALID and missed_expectations(results):
        return INVALID
    return code
