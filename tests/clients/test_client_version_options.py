"""``client_version`` reaches RunConfig from every way a run is configured (no cluster)."""

from __future__ import annotations

import textwrap

import pytest

from chaos.plugin_matrix import cell_id, cells
from runner.cli import build_parser, run_overrides
from runner.config import RunConfig, RunConfigError
from scenarios.toml_file import load_scenarios


def test_cli_and_toml_run_table() -> None:
    args = build_parser().parse_args(["run", "--client-version", "2.12.0"])
    assert run_overrides(args, {})["client_version"] == "2.12.0"
    none = build_parser().parse_args(["run"])
    assert run_overrides(none, {"client-version": "2.11.1"})["client_version"] == "2.11.1"
    assert run_overrides(args, {"client_version": "2.11.1"})["client_version"] == "2.12.0"


def test_scenario_file_config(tmp_path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(textwrap.dedent("""
        [[scenario]]
        name = "old-client"
        summary = "an older client"
        [scenario.config]
        client_version = "2.12.0"
        """))
    assert load_scenarios(path)["old-client"].run_config().client_version == "2.12.0"


def test_matrix_axis_and_marker_kwargs() -> None:
    got = cells(client_version=["2.12.0", "2.16.1"], acks=["all"])
    assert got == [{"client_version": "2.12.0", "acks": "all"},
                   {"client_version": "2.16.1", "acks": "all"}]
    assert cell_id(got[0]) == "client-version=2.12.0-acks=all"
    # Marker kwargs are RunConfig fields, applied with replace (chaos/plugin_config.py).
    assert RunConfig().replace(client_version="2.12.0").client_version == "2.12.0"


def test_a_malformed_version_is_a_config_error() -> None:
    with pytest.raises(RunConfigError, match="--client-version"):
        RunConfig(client_version="2.12.0 --pre").validate()
