"""Run every benchmark found as ``bench/*_bench.py`` (each as its own process).

    python -m bench                 # all of them
    python -m bench checker report  # only checker_bench.py and report_bench.py
    python -m bench workload -- --rounds 3   # arguments after -- go to each benchmark
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    names = argv if argv is not None else sys.argv[1:]
    extra: list[str] = []
    if "--" in names:
        cut = names.index("--")
        names, extra = names[:cut], names[cut + 1:]
    benches = sorted(HERE.glob("*_bench.py"))
    known = [b.stem.removesuffix("_bench") for b in benches]
    if any(n in ("-h", "--help") for n in names):
        print(__doc__.strip() + "\n\nbenchmarks: " + " ".join(known))
        return 0
    unknown = [n for n in names if n not in known]
    if unknown:
        # a typo or an option meant for a benchmark must not start every benchmark
        print(f"bench: no benchmark {unknown[0]!r} (there are: {' '.join(known)}; "
              "a benchmark's options go after --)", file=sys.stderr)
        return 2
    if names:
        benches = [b for b in benches if b.stem.removesuffix("_bench") in names]
    failed = 0
    for path in benches:
        print(f"== {path.stem} ==", flush=True)
        started = time.monotonic()
        rc = subprocess.call([sys.executable, str(path), *extra], cwd=HERE.parent)
        print(f"== {path.stem}: exit {rc} in {time.monotonic() - started:.1f}s ==", flush=True)
        failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
