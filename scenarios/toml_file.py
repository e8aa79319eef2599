"""User scenarios from a TOML file (``kafka-chaos run --scenario-file my.toml --scenario NAME``).

The format (``examples/scenarios.toml`` is a complete example)::

    [[scenario]]
    name = "my-leader-kill"              # lower case, digits and dashes
    summary = "one line for `kafka-chaos scenarios`"
    doc = "a paragraph: the mechanism and why the outcome is expected"   # optional
    settle = 5                           # optional: end the workload 5 s after the steps
                                         # (else it runs to config.duration)
    accept_known = ["librdkafka#4953"]   # optional: known bugs (contract/known_bugs.py)
                                         # whose records may leave the verdict valid

    [scenario.config]                    # RunConfig fields, as on the command line
    duration = 40
    min_insync = 2
    [scenario.config.topic_config]       # Kafka property names; values become strings
    "segment.ms" = 5000

    [scenario.expect]                    # optional: what results.json must show
    valid = true                         # true, false or "unknown"
    anomalies = { lost = "==0", divergence = "==0" }   # ==N !=N >N >=N <N <=N

    [[scenario.mechanism]]               # optional: what the history must show
    kind = "fault"                       # fault (with fault = "<event kind>"),
    fault = "kill"                       # isr-shrunk-to (size = N), leader-changed,
                                         # leader-epoch-increased, offline,
                                         # stale-leader-elected, consumer-restart
                                         # (count = N, default 1): contract.mechanisms

    [[scenario.steps]]                   # optional: a scripted sequence (else the
    action = "start"                     # random faults of config.faults run)
    fault = "kill"                       # a kind of contract.faults: kill stop pause
    target = "leader:0"                  # power-loss partition slow voter-partition
    as = "k1"                            # the name a later stop uses
    # partition: shape = "isolate" (and peer = "2" for one-way);
    # slow: delay_ms, jitter_ms, loss (0..1), rate_kbit;
    # voter-partition: shape = "voter-minority" | "voter-majority" | "leader-from-voters"
    #                  | "brokers-from-controllers" | "broker-from-controllers"
    #                  (the last cuts the target broker only, e.g. "coordinator")

    [[scenario.steps]]
    action = "wait-until"                # polls the cluster every 0.5 s
    condition = "isr-size"               # isr-size (partition, size), isr-full,
    partition = 0                        # preferred-leaders, has-leader (partition),
    size = 1                             # offline (partition)
    timeout = 30                         # seconds; a timeout is noted, the run goes on

    [[scenario.steps]]
    action = "wait"
    seconds = 5

    [[scenario.steps]]
    action = "stop"
    ref = "k1"

    [[scenario.steps]]
    action = "at"                        # wait until 30 s after the workload began (a
    seconds = 30                         # schedule replayed as it happened: replay.toml)

A ``[[scenario]]`` named like a built-in scenario and holding nothing but ``config`` changes
that scenario's settings (the ``*_config`` tables are merged key by key). Anything else that
is wrong — bad TOML, an unknown key, a value of the wrong type, a step that names a fault
never started — raises :class:`RunConfigError` with a one-line message.
"""

from __future__ import annotations

import dataclasses
import math
import re
import tomllib
import types
import typing
from pathlib import Path
from typing import Any

from contract.anomalies import ANOMALY_KINDS
from contract.conditions import ConditionError, normalise_condition
from contract.faults import FAULTS, POLL_STALL
from contract.mechanisms import MECHANISMS
from nemesis.faults import stall, targets
from nemesis.faults.network import SHAPES
from nemesis.faults.quorum import VOTER_SHAPES
from runner.config import KAFKA_TABLES, RUN_FIELDS, RunConfig, RunConfigError
from scenarios.base import Scenario
from scenarios.script_steps import CONDITIONS, Step, run_steps

NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
SCENARIO_KEYS = ("name", "summary", "doc", "settle", "config", "expect", "mechanism",
                 "steps", "accept_known")
#: RunConfig fields a scenario may not set: its name, and where the run goes.
NOT_CONFIG = ("scenario", "out")


class _Bad(Exception):
    """A problem at some place in the file; turned into one RunConfigError line."""


def load_scenarios(path: str | Path, builtins: dict[str, Scenario] | None = None
                   ) -> dict[str, Scenario]:
    """The scenarios a TOML file defines or overrides, by name.

    ``builtins`` defaults to the built-in catalogue; an entry naming one of them with only
    ``config`` yields that scenario with the settings merged."""
    if builtins is None:
        from scenarios.catalog import SCENARIOS
        builtins = SCENARIOS
    path = Path(path)
    try:
        with path.open("rb") as fh:
            doc = tomllib.load(fh)
    except OSError as e:
        raise RunConfigError(f"{path}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise RunConfigError(f"{path}: not valid TOML: {e}") from None
    out: dict[str, Scenario] = {}
    try:
        _only(doc, ("scenario",), "the file")
        entries = doc.get("scenario", [])
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise _Bad("'scenario' must be written [[scenario]] (an array of tables)")
        for i, entry in enumerate(entries):
            where = f"scenario {entry.get('name', '#' + str(i + 1))!r}"
            try:
                sc = _scenario(entry, builtins)
            except _Bad as e:
                raise _Bad(f"{where}: {e}") from None
            if sc.name in out:
                raise _Bad(f"{where}: defined twice")
            out[sc.name] = sc
    except _Bad as e:
        raise RunConfigError(f"{path}: {e}") from None
    return out


def scenario_from_table(entry: dict[str, Any]) -> Scenario:
    """One ``[[scenario]]`` table (a parsed or generated one: replay.toml's) as a new
    scenario; RunConfigError with one line when it is wrong."""
    try:
        return _scenario(entry, {})
    except _Bad as e:
        raise RunConfigError(f"scenario {entry.get('name')!r}: {e}") from None


# ---------------------------------------------------------------------- one scenario
def _scenario(entry: dict[str, Any], builtins: dict[str, Scenario]) -> Scenario:
    _only(entry, SCENARIO_KEYS, "a scenario")
    name = entry.get("name")
    if not isinstance(name, str) or not NAME.match(name):
        raise _Bad("name must be lower case letters, digits and dashes (e.g. 'my-case')")
    config = _config(entry.get("config", {}))
    if "accept_known" in entry:  # a run setting, also allowed next to name (docs above)
        config["accept_known"] = _typed("accept_known", entry["accept_known"],
                                        _HINTS["accept_known"])
    if name in builtins:
        extra = sorted(set(entry) - {"name", "config", "accept_known"})
        if extra:
            raise _Bad(f"overrides a built-in scenario, so it may only have 'config' and "
                       "'accept_known' "
                       f"(found {', '.join(extra)}); pick a new name for a new scenario")
        base = builtins[name]
        merged = {**base.config, **config}
        for key in KAFKA_TABLES:
            if key in base.config and key in config:
                merged[key] = {**base.config[key], **config[key]}
        sc = dataclasses.replace(base, config=merged)
    else:
        summary = entry.get("summary")
        if not isinstance(summary, str) or not summary.strip():
            raise _Bad("needs a one-line 'summary'")
        doc = entry.get("doc", summary)
        if not isinstance(doc, str):
            raise _Bad("'doc' must be a string")
        steps = _steps(entry.get("steps", []))
        settle = entry.get("settle")
        if settle is not None and (isinstance(settle, bool)
                                   or not isinstance(settle, int | float) or settle < 0):
            raise _Bad("'settle' must be a number of seconds >= 0")
        if settle is not None and not steps:
            raise _Bad("'settle' needs 'steps' (it ends the workload after them)")
        sc = Scenario(name=name, summary=summary.strip(), doc=doc.strip(), config=config,
                      script=_script(steps) if steps else None,
                      expect=_expect(entry.get("expect", {})),
                      mechanism=_mechanisms(entry.get("mechanism", [])),
                      settle_s=float(settle) if settle is not None else None,
                      script_faults=tuple(dict.fromkeys(s.fault for s in steps
                                                        if s.action == "start" and s.fault)))
    try:
        sc.run_config().validate()  # bad values are refused now, not when a run starts
    except RunConfigError as e:
        raise _Bad(f"config: {e}") from None
    return sc


def _script(steps: list[Step]) -> Any:
    def script(nemesis: Any) -> None:
        run_steps(nemesis, steps)
    script.steps = steps  # type: ignore[attr-defined]  # for inspection and tests
    return script


def _only(table: dict[str, Any], allowed: tuple[str, ...], what: str) -> None:
    unknown = [k for k in table if k not in allowed]
    if unknown:
        raise _Bad(f"unknown key {unknown[0]!r} in {what} (known: {', '.join(allowed)})")


# ---------------------------------------------------------------------- config
_HINTS = typing.get_type_hints(RunConfig)


def _config(table: Any) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise _Bad("'config' must be a table")
    allowed = tuple(n for n in RUN_FIELDS if n not in NOT_CONFIG)
    _only(table, allowed, "config")
    out: dict[str, Any] = {}
    for key, value in table.items():
        out[key] = _typed(key, value, _HINTS[key])
    return out


def _typed(key: str, value: Any, hint: Any) -> Any:
    """``value`` checked (and, for Kafka tables, stringified) against RunConfig's field type."""
    if key in KAFKA_TABLES:
        if not isinstance(value, dict):
            raise _Bad(f"config.{key} must be a table of Kafka properties")
        for k, v in value.items():
            if not isinstance(v, (str, int, float, bool)):
                raise _Bad(f"config.{key}.{k}: a property value must be a string or number")
        return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in value.items()}
    base = hint
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        base = next(a for a in typing.get_args(hint) if a is not type(None))  # X | None
    if value is None:
        raise _Bad(f"config.{key}: TOML has no null; leave the key out for the default")
    if typing.get_origin(base) is list:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _Bad(f"config.{key} must be a list of strings")
        return list(value)
    if base is bool:
        ok = isinstance(value, bool)
    elif base is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif base is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    else:
        ok = isinstance(value, str)
    if not ok:
        raise _Bad(f"config.{key} must be {getattr(base, '__name__', base)}, got {value!r}")
    return value


# ---------------------------------------------------------------------- expect, mechanism
def _expect(table: Any) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise _Bad("'expect' must be a table")
    _only(table, ("valid", "anomalies"), "expect")
    out: dict[str, Any] = {}
    if "valid" in table:
        if table["valid"] not in (True, False, "unknown"):
            raise _Bad("expect.valid must be true, false or \"unknown\"")
        out["valid"] = table["valid"]
    anomalies = table.get("anomalies", {})
    if not isinstance(anomalies, dict):
        raise _Bad("expect.anomalies must be a table such as { lost = \"==0\" }")
    conds: dict[str, str] = {}
    for kind, cond in anomalies.items():
        if kind not in ANOMALY_KINDS:
            raise _Bad(f"expect.anomalies: unknown anomaly {kind!r}")
        try:
            conds[kind] = normalise_condition(cond)
        except ConditionError as e:
            raise _Bad(f"expect.anomalies.{kind}: {e}") from None
    if conds:
        out["anomalies"] = conds
    return out


def _mechanisms(items: Any) -> list[dict[str, Any]]:
    if not isinstance(items, list) or not all(isinstance(m, dict) for m in items):
        raise _Bad("'mechanism' must be written [[scenario.mechanism]]")
    out = []
    for i, m in enumerate(items):
        kind = m.get("kind")
        if kind not in MECHANISMS:
            raise _Bad(f"mechanism[{i + 1}]: kind must be one of {', '.join(MECHANISMS)}")
        spec = MECHANISMS[kind]
        _only(m, ("kind", *spec.params, *spec.optional), f"mechanism[{i + 1}]")
        for param in spec.params:
            if param not in m:
                raise _Bad(f"mechanism[{i + 1}]: {kind} needs {param!r}")
        if kind == "fault" and not isinstance(m["fault"], str):
            raise _Bad(f"mechanism[{i + 1}]: fault must be an event kind such as \"kill\"")
        if kind == "isr-shrunk-to" and (not isinstance(m["size"], int) or m["size"] < 0):
            raise _Bad(f"mechanism[{i + 1}]: size must be a whole number >= 0")
        if "count" in m and (isinstance(m["count"], bool) or not isinstance(m["count"], int)
                             or m["count"] < 1):
            raise _Bad(f"mechanism[{i + 1}]: count must be a whole number >= 1")
        out.append(dict(m))
    return out


# ---------------------------------------------------------------------- steps
_STEP_KEYS = {"start": ("action", "fault", "target", "as"), "stop": ("action", "ref"),
              "wait": ("action", "seconds"), "at": ("action", "seconds"),
              "wait-until": ("action", "condition", "timeout")}


def _number(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < math.inf:
        raise _Bad(f"{what} must be a number of seconds > 0")
    return float(v)


def _at(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 86400:
        raise _Bad("seconds must be a number of seconds after the workload began, 0..86400")
    return float(v)


def _int(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise _Bad(f"{what} must be a whole number >= 0")
    return v


def _steps(items: Any) -> list[Step]:
    if not isinstance(items, list) or not all(isinstance(s, dict) for s in items):
        raise _Bad("'steps' must be written [[scenario.steps]]")
    out: list[Step] = []
    active: set[str] = set()
    for i, s in enumerate(items):
        try:
            out.append(_step(s, active))
        except _Bad as e:
            raise _Bad(f"steps[{i + 1}]: {e}") from None
    return out


def _step(s: dict[str, Any], active: set[str]) -> Step:
    action = s.get("action")
    if action not in _STEP_KEYS:
        raise _Bad(f"action must be one of {', '.join(_STEP_KEYS)}")
    if action == "start":
        fault = s.get("fault")
        if fault not in FAULTS:
            raise _Bad(f"fault must be one of {', '.join(FAULTS)}")
        _only(s, (*_STEP_KEYS["start"], *FAULTS[fault].params), f"a start of {fault}")
        target = s.get("target", "random")
        try:
            # a poll-stall aims at the run's consumers, every other fault at nodes
            (stall.validate if fault == POLL_STALL else targets.validate)(str(target))
        except ValueError as e:
            raise _Bad(str(e)) from None
        params = {k: s[k] for k in FAULTS[fault].params if k in s}
        shapes = VOTER_SHAPES if fault == "voter-partition" else SHAPES
        if "shape" in params and params["shape"] not in shapes:
            raise _Bad(f"shape must be one of {', '.join(shapes)}")
        for k in ("delay_ms", "jitter_ms", "loss", "rate_kbit"):
            if k in params and (isinstance(params[k], bool)
                                or not isinstance(params[k], (int, float)) or params[k] < 0):
                raise _Bad(f"{k} must be a number >= 0")
        if "loss" in params and params["loss"] > 1:
            raise _Bad("loss is a fraction between 0 and 1")
        ref = s.get("as", "")
        if not isinstance(ref, str):
            raise _Bad("'as' must be a name")
        if ref in active:
            raise _Bad(f"{ref!r} is already the name of an active fault")
        if ref:
            active.add(ref)
        return Step("start", fault=fault, target=str(target), ref=ref, params=params)
    if action == "stop":
        _only(s, _STEP_KEYS["stop"], "a stop")
        ref = s.get("ref")
        if ref not in active:
            raise _Bad(f"stop of {ref!r}, which no earlier start named with 'as'")
        active.discard(ref)
        return Step("stop", ref=ref)
    if action == "wait":
        _only(s, _STEP_KEYS["wait"], "a wait")
        return Step("wait", seconds=_number(s.get("seconds"), "seconds"))
    if action == "at":
        _only(s, _STEP_KEYS["at"], "an at")
        return Step("at", seconds=_at(s.get("seconds")))
    cond = s.get("condition")
    if cond not in CONDITIONS:
        raise _Bad(f"condition must be one of {', '.join(CONDITIONS)}")
    _only(s, (*_STEP_KEYS["wait-until"], *CONDITIONS[cond]), f"a wait-until {cond}")
    params = {k: _int(s[k], k) for k in CONDITIONS[cond] if k in s}
    if cond == "isr-size" and "size" not in params:
        raise _Bad("isr-size needs 'size'")
    return Step("wait-until", condition=cond, params=params,
                timeout=_number(s.get("timeout", 30), "timeout"))
