"""The run options, kept importable here for tests written against ``chaos.config``: they
live in :mod:`runner.config` (the README names ``chaos.config.RunConfig``)."""

from runner.config import KAFKA_TABLES, RUN_FIELDS, RunConfig, RunConfigError

__all__ = ["KAFKA_TABLES", "RUN_FIELDS", "RunConfig", "RunConfigError"]
