"""kafka-chaos for users: the pytest plugin (:mod:`chaos.pytest_plugin`, registered through
the ``pytest11`` entry point), chaos in a test body's own code (:mod:`chaos.user_api`), the
nightly matrix (``python -m chaos.nightly``) and ``python -m chaos``, the ``kafka-chaos``
command (:mod:`runner.cli`). The run wiring is :mod:`runner`, the faults :mod:`nemesis`, the
scenarios :mod:`scenarios` (docs/CONVENTIONS.md, "Layout")."""
