"""The layering rule (DESIGN.md §2, docs/CONVENTIONS.md), enforced: every product module's
imports are read (ast, nothing is imported) and a stage that imports another stage fails.

- ``contract`` imports no stage (and nothing heavy: tests/contract checks that at run time);
- ``compose``, ``workloads``, ``checkers``, ``reports`` import only ``contract``, themselves and
  third-party packages;
- ``chaos`` (orchestrator, CLI, plugin) and ``bench`` wire the stages and may import any of them;
- the test support ``tests/support/`` (synthetic and literal histories) is for the tests and
  ``bench`` only: no product package imports anything of ``tests``, and the wheel ships none.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("compose", "workloads", "checkers", "reports")
WIRING = ("chaos", "bench")
PRODUCT = ("contract", *STAGES, *WIRING)
#: Top-level package -> the product packages it may import (besides itself).
ALLOWED: dict[str, frozenset[str]] = {
    "contract": frozenset(),
    **{stage: frozenset({"contract"}) for stage in STAGES},
    **{wiring: frozenset(PRODUCT) for wiring in WIRING},
}
#: Test support (tests/support/): the tests and the benchmarks may import it, the product not.
TEST_SUPPORT = "tests/support"
TESTS = "tests"
SHIPPED = ("contract", *STAGES, "chaos")
#: Third-party packages the contract may use (it must stay light for every stage).
CONTRACT_THIRD_PARTY = frozenset({"pyarrow"})


def imported_packages(path: Path) -> set[str]:
    """Top-level names of everything a module imports (relative imports resolve to itself)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def violations(package: str) -> list[str]:
    out = []
    for path in modules(package):
        for name in sorted(imported_packages(path)):
            if name in PRODUCT and name != package and name not in ALLOWED[package]:
                out.append(f"{path.relative_to(ROOT)} imports {name}")
    return out


@pytest.mark.parametrize("package", PRODUCT)
def test_stages_import_no_other_stage(package: str) -> None:
    assert modules(package), f"no modules found under {package}/"
    assert violations(package) == []


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

    shipped = {p.split(".")[0] for p in find_packages(where=str(ROOT), include=include)}
    assert (ROOT / TEST_SUPPORT / "__init__.py").exists()
    assert TESTS not in shipped
    assert set(SHIPPED) <= shipped


def test_the_contract_imports_only_the_standard_library_and_pyarrow() -> None:
    import sys

    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    found = {name for path in modules("contract") for name in imported_packages(path)}
    assert found - stdlib - CONTRACT_THIRD_PARTY - {"contract"} == set()


def test_the_rule_catches_a_stage_importing_another(tmp_path: Path) -> None:
    # The checker itself must be able to fail: a reports module importing checkers.
    bad = tmp_path / "bad.py"
    bad.write_text("from checkers.history import Event\nimport workloads.history as h\n"
                   "from . import sibling\nfrom contract.events import Event as E\n")
    found = imported_packages(bad)
    assert found == {"checkers", "workloads", "contract"}
    assert {n for n in found if n in PRODUCT and n not in ALLOWED["reports"]} == {
        "checkers", "workloads"}
