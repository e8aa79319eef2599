"""``python -m reports PATH``: a run directory → its report; a folder of runs → the matrix.

Exit 0 on success (the report's path is printed), 2 with a one-line error otherwise — the
contract of ``kafka-chaos report PATH`` (DESIGN.md §5).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import ReportError, render_matrix, render_run


def main(argv: list[str] | None = None) -> int:
    """Render the report (or matrix) for PATH and print where it was written."""
    ap = argparse.ArgumentParser(prog="python -m reports",
                                 description="Render a run's report or a folder's matrix.")
    ap.add_argument("path", type=Path, help="a run directory or a folder of runs")
    args = ap.parse_args(argv)
    path: Path = args.path
    try:
        if (path / "run.json").is_file():
            out = render_run(path)
        elif path.is_dir():
            out = render_matrix(path)
        else:
            raise ReportError(f"{path}: no such run directory or folder")
    except (ReportError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
