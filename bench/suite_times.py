"""How long the test suite takes on this machine: runs ``make test`` (or ``make unit``) once,
times it and writes the result, with the machine, the versions and the date, into its
section of ``docs/figures/suite-times.md`` (reports/figures.py).

    python -m bench.suite_times [--target test|unit] [--figures PATH | --no-figures]
                                [--command 'CMD'] [-- MAKE ARGS]

The suite's own output goes to the terminal as it runs. The figure says how the run ended
(exit status, pytest's passed/failed counts summed over its sessions); a red run is written
as red, not left out. ``--command`` times another command instead of ``make TARGET`` (a
suite run some other way), named as such in the figure.
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reports.figures import FIGURES, write_figure  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# pytest's last line: "==== 561 passed, 2 skipped in 1234.56s (0:20:34) ===="
_SUMMARY = re.compile(r"^=+ (?P<body>.*?) in [\d.]+s(?: \([\d:]+\))? =+$", re.M)
# "deselected" is left out: each of make test's sessions deselects the others' tests, so
# their sum counts nothing
_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)\b")


def pytest_counts(output: str) -> Counter[str]:
    """passed/failed/... summed over every pytest session whose summary line is in
    ``output`` (make test runs several side by side and prints each one's output)."""
    total: Counter[str] = Counter()
    for m in _SUMMARY.finditer(output):
        for n, what in _COUNT.findall(m.group("body")):
            total["error" if what.startswith("error") else what] += int(n)
    return total


def timed(cmd: list[str]) -> tuple[float, int, str]:
    """Run ``cmd`` from the repository's root, its output shown and kept: (seconds, exit
    status, output)."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, bufsize=1)
    kept = []
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        kept.append(line)
    rc = proc.wait()
    return time.monotonic() - started, rc, "".join(kept)


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


def main(argv: list[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in args_in:
        cut = args_in.index("--")
        args_in, extra = args_in[:cut], args_in[cut + 1:]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="test", choices=["test", "unit"])
    ap.add_argument("--command", default=None,
                    help="time this command line instead of make TARGET")
    ap.add_argument("--figures", type=Path, default=FIGURES / "suite-times.md")
    ap.add_argument("--no-figures", action="store_true", help="write no figure file")
    args = ap.parse_args(args_in)
    cmd = shlex.split(args.command) if args.command else ["make", args.target, *extra]
    seconds, rc, output = timed(cmd)
    counts = pytest_counts(output)
    line = shlex.join(cmd)
    print(f"{line}: exit {rc} in {minutes(seconds)}; "
          + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    if not args.no_figures:
        section = f"make-{args.target}" if not args.command else "command"
        written = write_figure(
            args.figures, section, heading="Suite times",
            title=f"`{line}`",
            command="python -m bench.suite_times" + (f" --target {args.target}"
                                                     if not args.command else
                                                     f" --command {shlex.quote(args.command)}")
            + (" -- " + shlex.join(extra) if extra else ""),
            columns=["exit status", "wall time", "pytest counts (all sessions)"],
            rows=[(rc, minutes(seconds),
                   ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "none")],
            notes="One run, set-up included (images and pip wheels as cached on the machine "
                  "then). Other work on the machine slows it: the load average above is "
                  "the one at the end.")
        print(f"written {written}")
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
