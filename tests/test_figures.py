"""The figures under docs/figures are written by the commands that measure them
(reports/figures.py): a run rewrites its own section, names its command, the machine, the
versions and the date, and leaves every other section alone. The writers are run here at
their smallest sizes into temporary files, never into docs/figures."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pytest

from bench import checker_bench
from bench.suite_times import pytest_counts
from reports.figures import FIGURES, sections, write_bug_rate, write_figure

ROOT = Path(__file__).resolve().parents[1]


def test_a_section_is_rewritten_in_place_and_the_others_stay(tmp_path: Path) -> None:
    path = tmp_path / "fig.md"
    write_figure(path, "small", title="Small", command="measure --small", columns=["a", "b"],
                 rows=[[1, 2]], when=dt.datetime(2026, 12, 1, 7, 0, tzinfo=dt.UTC))
    write_figure(path, "large", title="Large", command="measure --large", columns=["a"],
                 rows=[["x|y"]])
    before = path.read_text()
    write_figure(path, "small", title="Small", command="measure --small", columns=["a", "b"],
                 rows=[[3, 4]], notes="again")
    text = path.read_text()
    assert sections(path) == ["small", "large"]
    assert "| 3 | 4 |" in text and "| 1 | 2 |" not in text and "again" in text
    # the other section is byte for byte what it was
    large = before[before.index("<!-- figure: large -->"):]
    assert text.endswith(large)
    assert "| x\\|y |" in text  # a pipe in a cell does not split it


def test_a_section_id_the_markers_cannot_hold_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="section id"):
        write_figure(tmp_path / "f.md", "two words", title="T", command="c", columns=["c"],
                     rows=[])
    assert not (tmp_path / "f.md").exists()


def test_a_section_names_its_command_machine_versions_and_date(tmp_path: Path) -> None:
    path = write_figure(tmp_path / "f.md", "s", title="T", command="python -m bench x",
                        columns=["c"], rows=[[1]], versions_extra={"kafka": "4.3.1"},
                        when=dt.datetime(2026, 12, 1, 7, 5, tzinfo=dt.UTC))
    text = path.read_text()
    assert "Written by `python -m bench x` on 2026-12-01 07:05 UTC." in text
    assert "Machine: cores " in text and "memory " in text and "kernel " in text
    assert "kafka 4.3.1" in text and "python " in text and "pyspark " in text


def test_the_bug_rate_writer_takes_the_tally_of_both_sides(tmp_path: Path) -> None:
    path = write_bug_rate(
        "KIP-966", "kafka-chaos run --bug KIP-966 --on both --repeat 2",
        [("affected", "Kafka 3.9.1", 2, 2, ["2069", "2196"]),
         ("fixed", "Kafka 4.3.1", 1, 2, ["0", "-"])],
        kind="lost", versions_extra={"kafka": "3.9.1, 4.3.1"}, path=tmp_path / "bugs.md")
    text = path.read_text()
    assert text.startswith("# Bug rates")
    assert "| affected | Kafka 3.9.1 | 2/2 | 2069, 2196 |" in text
    assert "| fixed | Kafka 4.3.1 | 1/2 | 0, - |" in text
    assert "| side | pinned to | runs as expected | lost per run |" in text
    # a timing-dependent bug's column counts the runs that showed it (it said "as expected"
    # for 0/3 of an open bug that simply did not show)
    timing = write_bug_rate("librdkafka#4953", "kafka-chaos run --bug librdkafka#4953",
                            [("affected", "confluent-kafka 2.16.1", 0, 3, ["0", "0", "0"])],
                            kind="duplicate", timing=True, path=tmp_path / "t.md").read_text()
    assert "| side | pinned to | runs that showed the bug | duplicate per run |" in timing


def test_a_figure_names_its_command_without_the_local_out_folder() -> None:
    from runner.cli import figure_argv

    assert figure_argv(["run", "--bug", "KIP-966", "--out", "/tmp/x", "--repeat", "3",
                        "--out=/tmp/y"]) == ["run", "--bug", "KIP-966", "--repeat", "3"]


def test_the_checker_bench_writes_one_section_per_size(tmp_path: Path) -> None:
    side = {"seconds": 30.0, "ratio": 1.5, "cpu_ratio": 1.4, "peak_rss_mb": 2700.0,
            "counts_agree": True}
    result = {"writes": 1000, "reads": 900, "engines": {"sail": side},
              "duckdb": {"seconds": 20.0, "peak_rss_mb": 500.0}}
    path = checker_bench.write_size_figure(tmp_path / "c.md", result, "python -m bench checker")
    assert sections(path) == ["1000-writes"]
    assert "| checker on `sail` | 30.0 | 1.50x | 1.40x | 2700 | yes |" in path.read_text()


def test_the_report_bench_writes_its_figure_at_its_smallest_size(tmp_path: Path) -> None:
    figure = tmp_path / "report-bench.md"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "report", "--", "--writes", "2000", "--repeat", "1",
         "--dir", str(tmp_path / "runs"), "--figures", str(figure)],
        cwd=ROOT, text=True, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sections(figure) == ["2000-writes"]
    text = figure.read_text()
    assert "Written by `python -m bench report -- --writes 2000 --repeat 1`" in text
    assert "| report.html |" in text


def test_the_suite_timer_writes_how_the_run_ended(tmp_path: Path) -> None:
    figure = tmp_path / "suite.md"
    line = "==== 3 passed, 1 failed in 1.00s ===="
    done = subprocess.run(
        [sys.executable, "-m", "bench.suite_times", "--command",
         f"sh -c 'echo \"{line}\"; exit 1'", "--figures", str(figure)],
        cwd=ROOT, text=True, capture_output=True, timeout=60)
    assert done.returncode == 1  # the timed command's status
    assert "| 1 | 0 min 00 s | 1 failed, 3 passed |" in figure.read_text()


def test_pytest_counts_add_up_every_session() -> None:
    out = ("== 46 passed in 1100.12s (0:18:20) ==\nnoise\n"
           "=== 32 passed, 2 errors in 1000.00s (0:16:40) ===\n"
           "==== 561 passed, 1 skipped, 86 deselected in 1200.5s ====\n")
    assert pytest_counts(out) == {"passed": 639, "error": 2, "skipped": 1}


def test_every_figure_file_names_the_command_that_writes_it() -> None:
    for path in sorted(FIGURES.glob("*.md")):
        text = path.read_text()
        for section in sections(path):
            block = text[text.index(f"<!-- figure: {section} -->"):]
            assert "Written by `" in block.split("<!-- /figure -->")[0], (path, section)
