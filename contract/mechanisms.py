"""The scenario mechanism vocabulary: what run.json's ``mechanism`` may ask the history to show
(docs/CONVENTIONS.md, "run.json"). If a mechanism is not observed, the run's ``valid`` is
"unknown": the scenario did not do what it is about.

Built-in scenarios (``scenarios/``) and TOML scenarios (``scenarios/toml_file.py``) name these
kinds, and the checker (``checkers/verdict.py``) decides each from the history; an entry is
``{"kind": <kind>, <param>: ..., ...}``. A new kind is an entry here plus its branch in the
checker (tests/scenarios/test_mechanism_vocabulary.py checks that every kind here is decided).
"""

from __future__ import annotations

from dataclasses import dataclass

from contract.events import SITUATION

#: Any kind may carry ``"after": "situation"``: only what was observed after the last
#: ``situation`` event counts (for ``fault``: a fault started after it; no such event:
#: nothing counts). Scripts of built-in scenarios
#: emit situation events; TOML steps cannot, so TOML files may not use it.
AFTER = "after"
AFTER_VALUES: tuple[str, ...] = (SITUATION,)


@dataclass(frozen=True)
class MechanismKind:
    """One mechanism kind.

    ``params``: what an entry must state; ``optional``: what it may state besides (with the
    checker's default). ``observed``: decided from observations.parquet; otherwise from
    events.jsonl (``after`` applies to both).
    """

    kind: str
    meaning: str
    params: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    observed: bool = True


_KINDS = (
    MechanismKind("fault", "some event of kind `fault` with phase start or instant",
                  params=("fault",), observed=False),
    MechanismKind("isr-shrunk-to", "some sample's ISR size <= `size` (with a leader)",
                  params=("size",)),
    MechanismKind("leader-changed", "some partition's leader moved from one live broker to "
                  "another"),
    MechanismKind("leader-epoch-increased", "some partition's known leader epoch rose"),
    MechanismKind("offline", "some sample has leader -1"),
    MechanismKind("stale-leader-elected", "a leader that was not in the partition's last ISR "
                  "before it went offline or changed leader"),
    MechanismKind("consumer-restart", "restart-mode consumers restarted at least `count` "
                  "times (rebalance events with detail.what \"restart\"; count defaults to 1)",
                  optional=("count",), observed=False),
)

#: Every mechanism kind by name, in the order the docs list them.
MECHANISMS: dict[str, MechanismKind] = {k.kind: k for k in _KINDS}
