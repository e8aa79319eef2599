"""What the pytest plugin knows about a chaos run, and how a test's expectations are judged.

Pure Python on files and dicts: nothing here imports Spark, Docker or the orchestrator, so
that loading the plugin costs unrelated test runs nothing.

- :class:`ChaosResult` — a run directory and the checker's results.json, with the counts and
  verdict a test asserts on.
- :class:`Expectation` — the ``expect`` / ``expect_valid`` of a ``@pytest.mark.chaos`` marker,
  judged against a result into a list of :class:`Miss`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.conditions import normalise_condition, parse_condition

VERDICT_LABEL = {True: "valid", False: "INVALID", "unknown": "unknown"}


class ChaosRunError(AssertionError):
    """A chaos run could not produce a checked result (cluster failed, run error, ...).

    An AssertionError so pytest reports the test as failed rather than skipped or errored
    away: a chaos test that cannot run must be noticed.
    """


@dataclass
class ChaosResult:
    """One run as a test sees it: where it is, the checker's results and the report."""

    run_dir: Path
    results: dict[str, Any] | None
    report: Path | None = None
    error: str | None = None
    label: str = ""  # what made it: the scenario and the matrix cell, for the summary

    @classmethod
    def from_run_dir(cls, run_dir: str | Path, label: str = "") -> ChaosResult:
        """Reads results.json (and notes report.html) of a run directory already checked."""
        run_dir = Path(run_dir)
        results = None
        path = run_dir / "results.json"
        if path.exists():
            results = json.loads(path.read_text())
        report = run_dir / "report.html"
        return cls(run_dir, results, report if report.exists() else None, label=label)

    @classmethod
    def from_outcome(cls, outcome: Any, label: str = "") -> ChaosResult:
        """From the orchestrator's RunOutcome."""
        return cls(Path(outcome.run_dir), outcome.results, outcome.report,
                   error=outcome.error, label=label)

    # ------------------------------------------------------------------ facts
    @property
    def valid(self) -> bool | str:
        """True, False or "unknown" (no results counts as unknown)."""
        if self.results is None:
            return "unknown"
        v = self.results.get("valid", "unknown")
        return v if v in (True, False) else "unknown"

    @property
    def verdict(self) -> str:
        return VERDICT_LABEL[self.valid]

    @property
    def anomalies(self) -> dict[str, dict[str, Any]]:
        return dict((self.results or {}).get("anomalies") or {})

    @property
    def counts(self) -> dict[str, int]:
        """Every anomaly kind the checker reported and its count (0 included)."""
        return {k: int(v.get("count", 0)) for k, v in self.anomalies.items()
                if isinstance(v, dict)}

    @property
    def nonzero(self) -> dict[str, int]:
        return {k: n for k, n in sorted(self.counts.items()) if n}

    @property
    def violations(self) -> dict[str, int]:
        """The kinds with a count that this configuration forbids."""
        return {k: int(v.get("count", 0)) for k, v in sorted(self.anomalies.items())
                if isinstance(v, dict) and v.get("count") and not v.get("allowed")}

    @property
    def pipeline(self) -> dict[str, Any]:
        """The pipeline check's entry (``check_pipeline``): input, output, delivery, valid,
        counts (inputs, outputs, missing, duplicated, orphaned, unsourced), examples; {}
        when the run named no pipeline."""
        return dict((self.results or {}).get("pipeline") or {})

    def count(self, kind: str, allow_unknown: bool = False) -> int:
        """The count of one anomaly kind; KeyError for a kind the checker does not know.

        A count the run did not establish cannot pass an assertion silently: on an
        ``unknown`` verdict, or for a kind the checker did not check (its count is a lower
        bound), this raises :class:`CountNotEstablished` saying why, unless
        ``allow_unknown=True`` asks for the number as it stands."""
        counts = self.counts
        if self.results is not None and kind not in counts:
            raise KeyError(f"unknown anomaly kind {kind!r} (known: {', '.join(sorted(counts))})")
        if not allow_unknown:
            if self.valid == "unknown":
                raise CountNotEstablished(f"{kind}: the verdict is {self.why_verdict()}, so "
                                          "no count is established (count(kind, "
                                          "allow_unknown=True) returns it anyway)")
            if not self.checked(kind):
                raise CountNotEstablished(f"{kind} was not checked "
                                          f"({self.unchecked_reason(kind)}): its count "
                                          f"{counts.get(kind, 0)} is a lower bound")
        return counts.get(kind, 0)

    def checked(self, kind: str) -> bool:
        """False when the checker says it could not (or was not asked to) count ``kind``."""
        entry = self.anomalies.get(kind)
        return not (isinstance(entry, dict) and entry.get("checked") is False)

    def unchecked_reason(self, kind: str) -> str:
        entry = self.anomalies.get(kind) or {}
        return str(entry.get("reason") or "no reason given")

    @property
    def unknown_reasons(self) -> list[str]:
        """Why the verdict is unknown, as the checker said (or why there is no verdict)."""
        if self.results is None:
            return [self.error or "no results.json"]
        reasons = [str(r) for r in self.results.get("unknown_reasons") or [] if r]
        if self.results.get("error"):
            reasons.append(f"the checker failed: {self.results['error']}")
        return reasons

    def why_verdict(self) -> str:
        """The verdict, with the reasons when it is unknown."""
        if self.valid != "unknown":
            return self.verdict
        reasons = self.unknown_reasons
        return "unknown" + (f" ({'; '.join(reasons)})" if reasons else "")

    @property
    def stats(self) -> dict[str, Any]:
        return dict((self.results or {}).get("stats") or {})

    @property
    def acked(self) -> int:
        return int((self.stats.get("writes") or {}).get("ok") or 0)

    @property
    def report_path(self) -> Path:
        """report.html of the run (where it is or will be written)."""
        return self.report or self.run_dir / "report.html"

    # ------------------------------------------------------------------ text
    def counts_text(self) -> str:
        nz = self.nonzero
        return ", ".join(f"{k}={n}" for k, n in nz.items()) if nz else "no anomalies"

    def summary_line(self) -> str:
        head = f"{self.verdict:<7} {self.counts_text()}"
        if self.error:
            head += f" [run error: {self.error}]"
        return f"{head}  {self.report_path}"

    def properties(self) -> list[tuple[str, str]]:
        """JUnit properties (pytest's ``user_properties``) for this run."""
        props = [("chaos.run_dir", str(self.run_dir)), ("chaos.report", str(self.report_path)),
                 ("chaos.verdict", self.verdict), ("chaos.anomalies", self.counts_text())]
        props += [(f"chaos.{k}", str(n)) for k, n in self.nonzero.items()]
        if self.error:
            props.append(("chaos.error", self.error))
        return props

    def describe(self) -> str:
        """A few lines for a failure: verdict, counts, violations and the report's path."""
        lines = [f"chaos run {self.label or self.run_dir.name}: {self.verdict}",
                 f"  anomalies: {self.counts_text()}"]
        if self.violations:
            lines.append("  forbidden here: " + ", ".join(
                f"{k}={n}" for k, n in self.violations.items()))
        if self.acked:
            lines.append(f"  acknowledged writes: {self.acked}")
        pipe = self.pipeline
        if pipe:
            c = pipe.get("counts") or {}
            lines.append(f"  pipeline {pipe.get('input')} -> {pipe.get('output')} "
                         f"({pipe.get('delivery')}): {VERDICT_LABEL.get(pipe.get('valid'), '?')}"
                         " — " + ", ".join(f"{k}={c[k]}" for k in sorted(c)))
        if self.error:
            lines.append(f"  run error: {self.error}")
        if self.valid == "unknown" and self.results is not None and self.unknown_reasons:
            lines.append("  unknown because: " + "; ".join(self.unknown_reasons))
        lines += [f"  report: {self.report_path}", f"  run directory: {self.run_dir}"]
        return "\n".join(lines)


# ---------------------------------------------------------------------- expectations
@dataclass
class Miss:
    """One expectation the run did not meet."""

    what: str
    actual: Any

    def __str__(self) -> str:
        return f"expected {self.what}, got {self.actual}"


class CountNotEstablished(AssertionError):
    """An anomaly count asked of a run that did not establish it (an ``unknown`` verdict,
    or a kind the checker did not check). An AssertionError, so a test that counts on it
    fails, saying why."""


@dataclass
class Expectation:
    """What a chaos test expects: a verdict and/or conditions on anomaly counts."""

    valid: bool | str | None = None
    anomalies: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, expect: Mapping[str, Any] | None, expect_valid: Any = None) -> Expectation:
        """From a marker's arguments (already resolved when they were callables)."""
        if expect_valid not in (None, True, False, "unknown"):
            raise ValueError(f"expect_valid must be True, False or 'unknown', got "
                             f"{expect_valid!r}")
        return cls(valid=expect_valid,
                   anomalies={k: normalise_condition(v) for k, v in (expect or {}).items()})

    @property
    def empty(self) -> bool:
        return self.valid is None and not self.anomalies

    def misses(self, result: ChaosResult) -> list[Miss]:
        """What the run did not meet. An ``unknown`` run meets nothing unless
        ``expect_valid="unknown"`` was given: its counts are not established facts."""
        out: list[Miss] = []
        if self.valid is not None and result.valid != self.valid:
            out.append(Miss(f"verdict {VERDICT_LABEL[self.valid]}", result.why_verdict()))
        elif (self.valid is None and self.anomalies and result.results is not None
              and result.valid == "unknown"):
            out.append(Miss("a verdict the counts can stand on (valid or INVALID)",
                            result.why_verdict()))
        counts = result.counts
        for kind, cond in self.anomalies.items():
            if result.results is None:
                out.append(Miss(f"{kind} {cond}", "no results"))
            elif kind not in counts:
                out.append(Miss(f"{kind} {cond}", f"unknown anomaly kind {kind!r}"))
            elif not parse_condition(cond).holds(counts[kind]):
                out.append(Miss(f"{kind} {cond}", counts[kind]))
            elif not result.checked(kind) and not parse_condition(cond).holds_above(counts[kind]):
                # an unchecked count is a lower bound: "== 0" proves nothing
                out.append(Miss(f"{kind} {cond}", f"{counts[kind]}, but {kind} was not "
                                f"checked ({result.unchecked_reason(kind)})"))
        return out

    def __str__(self) -> str:
        parts = [] if self.valid is None else [f"verdict {VERDICT_LABEL[self.valid]}"]
        return ", ".join(parts + [f"{k} {c}" for k, c in self.anomalies.items()]) or "nothing"


def states_verdict(result: ChaosResult) -> bool:
    """Whether the run's scenario stated a verdict of its own (its ``expect.valid``)."""
    block = (result.results or {}).get("expectations")
    details = block.get("details") if isinstance(block, dict) else None
    return any(isinstance(d, dict) and str(d.get("what", "")).startswith("valid ==")
               for d in details or [])


#: What a chaos test that states no verdict (nor its scenario) is judged by.
IMPLIED_VALID = "verdict valid (the test and its scenario state no verdict, so the run must " \
    "be valid)"


def implied_misses(expectation: Expectation, result: ChaosResult) -> list[Miss]:
    """A chaos test is judged ``valid is True`` unless it (``expect_valid``) or its
    scenario states another verdict."""
    if expectation.valid is not None or states_verdict(result) or result.valid is True:
        return []
    return [Miss(IMPLIED_VALID, result.why_verdict())]


def scenario_misses(result: ChaosResult) -> list[Miss]:
    """The misses of a scenario's own expectations, as the checker judged them."""
    block = (result.results or {}).get("expectations")
    if not isinstance(block, dict):
        return []
    details = [d for d in block.get("details") or [] if isinstance(d, dict)]
    out = [Miss(str(d.get("what")), d.get("actual")) for d in details if not d.get("met")]
    asked_unknown = any(str(d.get("what", "")).startswith("valid ==") and d.get("met")
                        and d.get("actual") == "unknown" for d in details)
    if result.valid == "unknown" and details and not asked_unknown and not out:
        out.append(Miss("a verdict the counts can stand on (valid or INVALID)",
                        result.why_verdict()))
    return out
