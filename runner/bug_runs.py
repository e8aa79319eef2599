"""``kafka-chaos run`` itself: one run, or a known bug's runs repeated on one or both of its
sides with a tally of how often each showed what the catalogue entry promises (its rate)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.exit_codes import exit_code_of_results


@dataclass
class Ran:
    """What the command needs of one run."""

    results: dict[str, Any] | None
    interrupted: bool
    exit_code: int
    run_dir: Path | None = None


def run_once(cfg: Any, scenario: Any) -> Ran:
    """One run with progress on the terminal and its verdict printed."""
    from runner.orchestrator import run
    from runner.progress import Progress
    from runner.verdict import print_verdict

    outcome = run(cfg, scenario, progress=Progress())
    print_verdict(outcome)
    return Ran(outcome.results, outcome.interrupted, exit_code_of_results(outcome.results),
               outcome.run_dir)


def run_bug(entry: Any, runs: list[tuple[Any, Any]], scenario: Any, repeat: int | None,
            figures: Path | None = None, command: str = "kafka-chaos run") -> int:
    """One run (exit code: its verdict's), or ``repeat`` runs per pick (a side on one of its
    versions: ``scenarios.bugs.Pick``) and a tally of the runs that showed the bug (exit
    code: 0 when no run contradicted the entry, else 1; a timing-dependent bug may stay
    hidden in some runs). Ctrl-C ends the repetitions. ``figures``: the file whose section
    for the entry the tally rewrites (``command`` is named there as its writer); picks other
    than the entry's own two versions get a section of their own."""
    from scenarios.bugs import rate, run_misses, summary, tally

    seen: dict[Any, list[dict[str, Any] | None]] = {pick: [] for pick, _cfg in runs}
    last = Ran(None, False, 2)
    for pick, cfg in runs:
        for _ in range(repeat or 1):
            last = run_once(cfg, scenario)
            print(summary(entry, pick.side, last.results, pick.version))
            if last.interrupted:
                break
            seen[pick].append(last.results)
        if last.interrupted:
            break
    if repeat is None and len(runs) == 1:
        return last.exit_code
    for pick, results in seen.items():
        if results:
            print(tally(entry, pick.side, results, pick.version))
    if last.interrupted:
        return last.exit_code
    if figures is not None:
        from reports.figures import write_bug_rate

        section, title = figure_id(entry, list(seen), runs[0][1].group_protocol)
        write_bug_rate(section, command,
                       [(p.side, entry.label(p.side, p.version), *rate(entry, p.side, results))
                        for p, results in seen.items() if results],
                       kind=entry.kind, timing=entry.timing, path=figures, title=title)
        print(f"figures: {figures}")
    return 0 if all(not run_misses(entry, p.side, r) for p, rs in seen.items()
                    for r in rs) else 1


def figure_id(entry: Any, picks: list[Any], group_protocol: str | None = None
              ) -> tuple[str, str]:
    """The figure section a tally writes, and its heading: the entry's own when it ran on the
    entry's own versions (``--on affected|fixed|both``), else one named by the versions it
    ran on (``KIP-966:4.0.2:4.1.2``, "KIP-966 on 4.0.2, 4.1.2"), so that measuring further
    versions (an unaffected control among them) does not replace the entry's own rate. A
    tally with KIP-848 groups where the entry's scenario has classic ones
    (``group_protocol``: the runs') is another section again (``librdkafka#5586:KIP-848``)."""
    own = entry.scenario.config.get("group_protocol", "classic")
    kip848 = group_protocol == "consumer" != own
    tail, words = (["KIP-848"], " with KIP-848 groups (group.protocol=consumer)") if kip848 \
        else ([], "")
    if all(p.side != "unaffected" and p.version == entry.version(p.side) for p in picks):
        return ":".join([entry.id, *tail]), f"{entry.id}{words}"
    versions = [p.version for p in picks]
    return ":".join([entry.id, *versions, *tail]), f"{entry.id} on {', '.join(versions)}{words}"
