"""Matrices of run configurations: the cells of ``@pytest.mark.chaos_matrix`` and the nightly.

A matrix is given as keyword lists of RunConfig fields::

    @pytest.mark.chaos_matrix(acks=["1", "all"], unclean=[False, True], faults=["kill", "pause"])

and becomes the product of them, one dict per cell, in the order written (the first keyword
varies slowest). A ``faults`` value may be one kind (``"kill"``), a comma list
(``"kill,pause"``) or a list; ``"none"`` means no faults. Each cell has a short readable id
(``acks=1-unclean-kill``) used as the pytest parameter id and in run directory names.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping
from typing import Any

#: RunConfig fields a matrix may not vary: where the runs go is the plugin's (--chaos-runs).
NOT_MATRIX = frozenset({"out"})


def matrix_fields() -> tuple[str, ...]:
    """The fields a matrix may vary: every RunConfig field (runner.config.RUN_FIELDS, the one
    list) but :data:`NOT_MATRIX`. Imported here, not at the top: the plugin loads this module
    with pytest and keeps that cheap."""
    from runner.config import RUN_FIELDS

    return tuple(f for f in RUN_FIELDS if f not in NOT_MATRIX)


def _faults(value: Any) -> list[str]:
    if value is None or value in ("", "none"):
        return []
    if isinstance(value, str):
        return [f.strip() for f in value.split(",") if f.strip()]
    return [str(f) for f in value]


def normalise(cell: Mapping[str, Any]) -> dict[str, Any]:
    """A cell's values in RunConfig's types (acks as a string, faults as a list)."""
    out = dict(cell)
    if "acks" in out:
        out["acks"] = str(out["acks"])
    if "faults" in out:
        out["faults"] = _faults(out["faults"])
    if "targets" in out and isinstance(out["targets"], str):
        out["targets"] = [t.strip() for t in out["targets"].split(",") if t.strip()]
    return out


def cells(**axes: Iterable[Any]) -> list[dict[str, Any]]:
    """The product of the axes, each cell normalised. Unknown fields are refused."""
    allowed = matrix_fields()
    unknown = [k for k in axes if k not in allowed]
    if unknown:
        raise ValueError(f"chaos_matrix: {unknown[0]!r} is not a matrix field "
                         f"(one of {', '.join(allowed)})")
    names = list(axes)
    values = [list(v) if not isinstance(v, str) else [v] for v in axes.values()]
    empty = [n for n, v in zip(names, values, strict=True) if not v]
    if empty:
        raise ValueError(f"chaos_matrix: {empty[0]!r} has no values")
    return [normalise(dict(zip(names, combo, strict=True)))
            for combo in itertools.product(*values)]


def _part(key: str, value: Any) -> str:
    if key == "faults":
        return "+".join(value) or "no-faults"
    if key == "scenario":
        return str(value)
    if isinstance(value, bool):
        label = {"unclean": "unclean", "idempotence": "idempotent",
                 "transactions": "txn"}.get(key, key.replace("_", "-"))
        return label if value else f"no-{label}"
    return f"{key.replace('_', '-')}={value}"


def cell_id(cell: Mapping[str, Any]) -> str:
    """``acks=1-unclean-kill+pause``: short, readable, safe in paths and test ids."""
    text = "-".join(_part(k, v) for k, v in normalise(cell).items())
    return re.sub(r"[^A-Za-z0-9=+._-]", "_", text) or "default"
