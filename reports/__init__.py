"""kafka-chaos reports: run directories → self-contained HTML reports and JUnit XML.

A pure function of files (DESIGN.md §3): nothing here decides a verdict; it shows the checker's.

- ``render_run(run_dir)`` writes ``report.html`` and ``junit.xml`` into a run directory.
- ``render_matrix(folder)`` writes ``index.html``: every run found below ``folder``, as a grid of
  scenario × configuration coloured by verdict, with the trend of repeated runs.
"""

from .matrix import render_matrix
from .run_report import ReportError, render_run

__all__ = ["ReportError", "render_matrix", "render_run"]
