"""The run wiring: what turns options into a run directory and a verdict.

- :mod:`runner.config`: :class:`~runner.config.RunConfig`, the one list of run options and
  their validation (the CLI, ``--config``, TOML scenarios and the pytest markers read it);
- :mod:`runner.orchestrator`: one run, start to end (cluster, workload, nemesis, heal,
  drain, checker, report);
- :mod:`runner.rundir`: the run directory and run.json (DESIGN.md §3);
- :mod:`runner.cli`: the ``kafka-chaos`` command (its options: :mod:`runner.cli_parser`);
  :mod:`runner.bug_runs` its known-bug runs, :mod:`runner.verdict` how a verdict is told,
  :mod:`runner.progress` the progress display;
- :mod:`runner.clients`: cached virtualenvs of other confluent-kafka releases.

It sits above the stages, the nemesis and the scenarios and may import any of them; the
pytest plugin and the user API (``chaos``) sit above it.
"""
