"""A pause runc could not freeze in time is asked again (compose/node.py): the engine's
answer seen in a suite run's crash-safety test, under load; any other refusal is not."""

from __future__ import annotations

import docker

from compose.node import _freeze_failed


def test_only_runcs_freeze_timeout_is_retried() -> None:
    seen = docker.errors.APIError(
        "500 Server Error: Internal Server Error",
        explanation="Cannot pause container ae7b: OCI runtime pause failed: unable to freeze: "
                    "unknown")
    assert _freeze_failed(seen)
    assert not _freeze_failed(docker.errors.APIError(
        "409 Client Error: Conflict", explanation="Container ae7b is not running"))
    assert not _freeze_failed(RuntimeError("unable to freeze"))  # not the engine's answer
