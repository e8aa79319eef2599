"""Root conftest (covers tests/ and examples/): the suite's hygiene plugin (tests/hygiene.py)
marks the tests that start clusters and fails any test or session that leaves something;
the hang guard (tests/hang_guard.py) ends a test, or at worst the session, that hangs; the
lanes (tests/lanes.py) let several sessions share the cluster tests file by file."""

pytest_plugins = ["tests.hygiene", "tests.hang_guard", "tests.lanes"]
