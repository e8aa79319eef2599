"""The grammar of an expectation on an anomaly count: ``0``, ``"0"``, ``"==0"``, ``">0"``,
``"<=5"``, ``"!=3"`` … (scenario ``expect`` blocks, TOML files, ``@pytest.mark.chaos``).

A bare number means ``==``. Counts are never negative, so neither is a bound.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_COND = re.compile(r"^\s*(==|!=|>=|<=|>|<)?\s*(\d+)\s*$")
_OPS: dict[str, Callable[[int, int], bool]] = {
    "==": operator.eq, "!=": operator.ne, ">": operator.gt, ">=": operator.ge,
    "<": operator.lt, "<=": operator.le,
}
EXAMPLES = "0, '==0', '>0', '<=5'"


class ConditionError(ValueError):
    """A condition that does not follow the grammar; the message says why in one line."""


@dataclass(frozen=True)
class Condition:
    """``op`` (one of == != > >= < <=) and the bound ``n``."""

    op: str
    n: int

    def holds(self, actual: int) -> bool:
        """Whether a count meets the condition."""
        return _OPS[self.op](actual, self.n)

    def holds_above(self, actual: int) -> bool:
        """Whether the condition holds for every count >= ``actual``: what an unchecked
        count (a lower bound, e.g. divergence without the replicas' data) can prove."""
        return (self.op in (">", ">=") and self.holds(actual)) or (
            self.op == "!=" and actual > self.n)

    def __str__(self) -> str:
        return f"{self.op}{self.n}"


def parse_condition(cond: Any) -> Condition:
    """A condition from an int or a string; ConditionError for anything else."""
    if isinstance(cond, bool) or not isinstance(cond, int | str):
        raise ConditionError(f"an anomaly condition is a count or a string like '>0', "
                             f"got {cond!r}")
    m = _COND.match(str(cond))
    if not m:
        raise ConditionError(f"cannot read anomaly condition {cond!r} (use {EXAMPLES})")
    return Condition(m.group(1) or "==", int(m.group(2)))


def normalise_condition(cond: Any) -> str:
    """``0`` -> ``"==0"``; ``" > 0"`` -> ``">0"``; ConditionError when it does not parse."""
    return str(parse_condition(cond))


def holds(cond: Any, actual: int) -> bool:
    """Whether ``actual`` meets ``cond``; ConditionError when it does not parse."""
    return parse_condition(cond).holds(actual)
