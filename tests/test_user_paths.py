"""What users were told to import or run keeps working after the moves of issue 45: the
entry points in pyproject, ``python -m chaos`` and ``python -m chaos.nightly``, and the
re-export ``chaos.config``."""

from __future__ import annotations

import importlib
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _entry_points() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {**project["scripts"], **project["entry-points"]["pytest11"]}


def test_every_entry_point_names_something_that_imports() -> None:
    points = _entry_points()
    assert points["kafka_chaos"] == "chaos.pytest_plugin"
    for target in points.values():
        module, _, attr = target.partition(":")
        loaded = importlib.import_module(module)
        assert not attr or callable(getattr(loaded, attr))


def test_chaos_config_is_the_run_options_of_runner_config() -> None:
    import chaos.config
    import runner.config

    for name in chaos.config.__all__:
        assert getattr(chaos.config, name) is getattr(runner.config, name)


@pytest.mark.parametrize(("module", "usage"), [("chaos", "usage: kafka-chaos"),
                                              ("chaos.nightly", "usage: ")])
def test_the_modules_users_run_answer_help(module: str, usage: str) -> None:
    done = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and usage in done.stdout
