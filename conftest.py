"""Root conftest (covers tests/ and examples/): the suite's hygiene plugin (tests/hygiene.py)
marks the tests that start clusters and fails any test or session that leaves something."""

pytest_plugins = ["tests.hygiene"]
