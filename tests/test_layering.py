"""The layering rule (DESIGN.md §2, docs/CONVENTIONS.md), enforced: every product module's
imports are read (ast, nothing is imported; imports inside functions and under TYPE_CHECKING
count too) and a package that imports one it may not fails.

- ``contract`` imports no other package (and nothing heavy: tests/contract checks that at run
  time);
- the stages ``compose``, ``workloads``, ``checkers``, ``reports`` import only ``contract``;
- ``nemesis`` (faults, network tools, schedules) imports only ``contract`` and ``compose``
  (the cluster it acts on): never the checker, the reports, the scenarios, the run wiring or
  the plugin;
- ``scenarios`` import the nemesis, ``compose`` and ``contract``, and of the run wiring only
  its options (``runner.config``, which imports no scenario and nothing else of ``runner``);
- ``runner`` (orchestrator, CLI, options, run directory) wires everything below it, never the
  plugin; ``chaos`` (pytest plugin, user API, nightly matrix) and ``bench`` may import all;
- the test support ``tests/support/`` (synthetic and literal histories) is for the tests and
  ``bench`` only: no product package imports anything of ``tests``, and the wheel ships none.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("compose", "workloads", "checkers", "reports")
PRODUCT = ("contract", *STAGES, "nemesis", "scenarios", "runner", "chaos", "bench")
#: Top-level package -> the product packages it may import (besides itself).
ALLOWED: dict[str, frozenset[str]] = {
    "contract": frozenset(),
    **{stage: frozenset({"contract"}) for stage in STAGES},
    "nemesis": frozenset({"contract", "compose"}),
    "scenarios": frozenset({"contract", "compose", "nemesis", "runner"}),
    "runner": frozenset({"contract", *STAGES, "nemesis", "scenarios"}),
    "chaos": frozenset(PRODUCT) - {"bench"},
    "bench": frozenset(PRODUCT),
}
#: (package, allowed package) -> the only modules of it the package may import.
ONLY_MODULES: dict[tuple[str, str], frozenset[str]] = {
    ("scenarios", "runner"): frozenset({"runner.config"}),
}
#: Test support (tests/support/): the tests and the benchmarks may import it, the product not.
TEST_SUPPORT = "tests/support"
TESTS = "tests"
SHIPPED = ("contract", *STAGES, "nemesis", "scenarios", "runner", "chaos")
#: Third-party packages the contract may use (it must stay light for every stage).
CONTRACT_THIRD_PARTY = frozenset({"pyarrow"})


def imported_modules(path: Path) -> set[str]:
    """Dotted names of everything a module imports (``from a import b`` gives ``a.b``, which
    may be a name rather than a module; relative imports, always within the package, are
    left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def imported_packages(path: Path) -> set[str]:
    """Top-level names of everything a module imports."""
    return {name.split(".")[0] for name in imported_modules(path)}


def modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _within(name: str, module: str) -> bool:
    return name == module or name.startswith(module + ".")


def violations_of(package: str, path: Path) -> list[str]:
    """What one module of ``package`` imports that the rules forbid."""
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    out = []
    for name in sorted(imported_modules(path)):
        top = name.split(".")[0]
        if top not in PRODUCT or top == package:
            continue
        if top not in ALLOWED[package]:
            out.append(f"{where} imports {top}")
            continue
        only = ONLY_MODULES.get((package, top))
        if only is not None and not any(_within(name, m) for m in only):
            out.append(f"{where} imports {name}")
    return out


def violations(package: str) -> list[str]:
    return [v for path in modules(package) for v in violations_of(package, path)]


@pytest.mark.parametrize("package", PRODUCT)
def test_packages_import_only_what_their_layer_may(package: str) -> None:
    assert modules(package), f"no modules found under {package}/"
    assert violations(package) == []


def test_the_run_options_the_scenarios_import_import_no_scenario() -> None:
    # scenarios -> runner.config is the one edge into the run wiring; runner.config must not
    # lead back (to the scenarios, or to the rest of runner, which imports the scenarios).
    found = imported_packages(ROOT / "runner" / "config.py")
    assert found & {"scenarios", "runner", "chaos"} == set()


@pytest.mark.parametrize("package", SHIPPED)
def test_no_product_package_imports_the_test_support(package: str) -> None:
    assert [str(p.relative_to(ROOT)) for p in modules(package)
            if TESTS in imported_packages(p)] == []


def test_the_test_support_is_built_on_the_contract_alone() -> None:
    # Histories written from the contract's schemas and kinds, not from a stage's internals.
    found = {n for p in modules(TEST_SUPPORT) for n in imported_packages(p) if n in PRODUCT}
    assert found == {"contract"}


def test_the_wheel_leaves_the_test_support_out() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    include = project["tool"]["setuptools"]["packages"]["find"]["include"]
    from setuptools import find_packages

    found = find_packages(where=str(ROOT), include=include)
    shipped = {p.split(".")[0] for p in found}
    assert (ROOT / TEST_SUPPORT / "__init__.py").exists()
    assert TESTS not in shipped
    assert set(SHIPPED) == shipped
    # every folder of Python modules is a package find_packages sees (a folder without
    # __init__.py would be left out of the wheel)
    folders = {str(p.parent.relative_to(ROOT)).replace("/", ".")
               for top in SHIPPED for p in modules(top)}
    assert folders <= set(found)


def test_the_contract_imports_only_the_standard_library_and_pyarrow() -> None:
    import sys

    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    found = {name for path in modules("contract") for name in imported_packages(path)}
    assert found - stdlib - CONTRACT_THIRD_PARTY - {"contract"} == set()


# ---------------------------------------------------------------------- the rules can fail
def test_imports_are_read_in_every_form(tmp_path: Path) -> None:
    mod = tmp_path / "mod.py"
    mod.write_text("from checkers.history import Event\nimport workloads.history as h\n"
                   "from . import sibling\nfrom runner import config\n"
                   "def f():\n    from reports import render_run\n"
                   "from typing import TYPE_CHECKING\n"
                   "if TYPE_CHECKING:\n    from chaos.user_api import ChaosSession\n")
    assert imported_modules(mod) == {
        "checkers.history.Event", "workloads.history", "runner.config",
        "reports.render_run", "typing.TYPE_CHECKING", "chaos.user_api.ChaosSession"}
    assert imported_packages(mod) == {"checkers", "workloads", "runner", "reports", "typing",
                                      "chaos"}


#: (package, an import planted in one of its modules, whether the rules allow it)
PLANTED = [
    ("reports", "from checkers.history import Event", False),
    ("reports", "import workloads.history", False),
    ("reports", "from contract.events import Event", True),
    ("checkers", "from nemesis.faults.base import Fault", False),
    ("workloads", "from nemesis.schedule import Nemesis", False),
    ("compose", "from scenarios import SCENARIOS", False),
    ("nemesis", "from checkers import check_run", False),
    ("nemesis", "from reports import render_run", False),
    ("nemesis", "from runner.orchestrator import run", False),
    ("nemesis", "from runner.config import RunConfig", False),
    ("nemesis", "from chaos.pytest_plugin import ChaosResult", False),
    ("nemesis", "from scenarios.base import Scenario", False),
    ("nemesis", "from workloads import Observer", False),
    ("nemesis", "from compose.cluster import KafkaCluster", True),
    ("scenarios", "from runner.config import RunConfig", True),
    ("scenarios", "from runner import config", True),
    ("scenarios", "from runner.orchestrator import run", False),
    ("scenarios", "import runner.rundir", False),
    ("scenarios", "from checkers.verdict import mechanism", False),
    ("scenarios", "from chaos.user_api import ChaosSession", False),
    ("scenarios", "from nemesis.faults.process import Kill", True),
    ("runner", "from chaos.plugin_result import ChaosResult", False),
    ("runner", "from checkers import check_run", True),
    ("chaos", "from runner.orchestrator import run", True),
    ("chaos", "import bench", False),
    ("contract", "from compose.config import ClusterConfig", False),
]


@pytest.mark.parametrize(("package", "line", "allowed"), PLANTED)
def test_the_rules_catch_a_planted_import(tmp_path: Path, package: str, line: str,
                                          allowed: bool) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(f"def later():\n    {line}\n")
    assert (violations_of(package, planted) == []) is allowed
