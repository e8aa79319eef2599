"""``python -m bench`` refuses what is not a benchmark in one line, before any benchmark
starts (a benchmark's options belong after ``--``), and prints its usage for --help."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench", *args], cwd=ROOT, text=True,
                          capture_output=True, timeout=60)


def test_an_option_before_the_separator_is_refused_before_any_benchmark_runs() -> None:
    done = _bench("checker", "--sizes", "10")
    assert done.returncode == 2
    assert done.stdout == ""  # no "== checker_bench ==": nothing started
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "'--sizes'" in lines[0] and "after --" in lines[0]


def test_help_lists_the_benchmarks_and_runs_none() -> None:
    done = _bench("checker", "--help")
    assert done.returncode == 0
    assert "==" not in done.stdout
    assert done.stdout.rstrip().endswith("benchmarks: checker client report workload")
