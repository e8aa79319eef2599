"""How the pytest plugin turns a test's marker, the command line and a matrix cell into one
run's configuration (kept apart from the hooks and fixtures in ``chaos.pytest_plugin``).

Cheap to import: the run configuration and the scenario catalogue are imported when a run is
built, not when pytest loads the plugin.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from runner.config import RunConfig
    from scenarios.base import Scenario

@dataclass
class ChaosOptions:
    """The command-line options of the plugin (None: not given)."""

    kafka_version: str | None = None
    image: str | None = None
    duration: float | None = None
    seed: int | None = None
    brokers: int | None = None
    accept_known: list[str] | None = None
    runs_dir: Path = Path("runs/pytest")
    cluster_scope: str = "session"

    def run_overrides(self) -> dict[str, Any]:
        """The RunConfig fields the command line sets for every run."""
        out: dict[str, Any] = {"kafka_version": self.kafka_version, "image": self.image,
                               "duration": self.duration, "seed": self.seed,
                               "brokers": self.brokers, "accept_known": self.accept_known}
        return {k: v for k, v in out.items() if v is not None}


@dataclass
class Spec:
    """A test's ``chaos`` marker, read."""

    scenario: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    expect: Any = None
    expect_valid: Any = None
    scenario_expectations: bool = True


def spec_of(item: pytest.Item) -> Spec:
    marker = item.get_closest_marker("chaos")
    if marker is None:
        return Spec()
    kw = dict(marker.kwargs)
    scenario = marker.args[0] if marker.args else kw.pop("scenario", None)
    return Spec(scenario=scenario, expect=kw.pop("expect", None),
                 expect_valid=kw.pop("expect_valid", None),
                 scenario_expectations=bool(kw.pop("scenario_expectations", True)), config=kw)


def resolve(value: Any, cfg: Any) -> Any:
    """Expectations may depend on the configuration (matrix cells): ``lambda cfg: ...``."""
    return value(cfg) if callable(value) else value


def _label(item: pytest.Item) -> str:
    name = getattr(item, "originalname", None) or item.name
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def build_run(item: pytest.Item, options: ChaosOptions, cell: dict[str, Any],
              call: dict[str, Any]) -> tuple[RunConfig, Scenario | None]:
    """The run a test asks for. Later wins: scenario < marker < command line < matrix cell
    < the call's own keywords (a cell varies a setting on purpose; the command line sets
    the rest for every run)."""
    from runner.config import RunConfig, RunConfigError
    from scenarios import SCENARIOS

    spec = spec_of(item)
    cell = dict(cell)
    call = dict(call)
    name = call.pop("scenario", None) or cell.pop("scenario", None) or spec.scenario
    scenario = None
    if name is not None:
        if name not in SCENARIOS:
            pytest.fail(f"unknown scenario {name!r} (known: {', '.join(sorted(SCENARIOS))})",
                        pytrace=False)
        scenario = SCENARIOS[name]
    merged = {**spec.config, **options.run_overrides(), **cell, **call,
              "out": str(options.runs_dir)}
    try:
        if scenario is not None:
            cfg = scenario.run_config(**merged)
        else:
            cfg = RunConfig(scenario=_label(item)).replace(**merged)
        cfg.validate()
    except (RunConfigError, TypeError) as e:
        pytest.fail(f"bad chaos run options: {e}", pytrace=False)
    return cfg, scenario


class Options(dict[str, Any]):
    """run.json's options read as attributes (``cfg.acks``), like a RunConfig."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def run_options(run_dir: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads((run_dir / "run.json").read_text()).get("options") or {})
    except (OSError, ValueError):
        return None

