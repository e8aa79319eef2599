"""``python -m checkers RUN_DIR [--spark-master URL]``: check a run, print the verdict."""

from __future__ import annotations

import argparse
import sys

from contract.exit_codes import exit_code_of_results

from .check import check_run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m checkers",
                                     description="Check a kafka-chaos run directory.")
    parser.add_argument("run_dir", help="run directory (local path or URI)")
    parser.add_argument("--spark-master", default=None,
                        help="Spark master URL (default: local[2])")
    args = parser.parse_args(argv)
    results = check_run(args.run_dir, spark_master=args.spark_master)
    counts = ", ".join(f"{k}={v['count']}{'' if v['allowed'] else '!'}"
                       for k, v in results["anomalies"].items() if v["count"])
    print(f"valid: {results['valid']}" + (f" ({counts})" if counts else ""))
    if "error" in results:
        print(f"error: {results['error']}", file=sys.stderr)
    for reason in results.get("unknown_reasons", []):
        print(f"unknown: {reason}")
    return exit_code_of_results(results)


if __name__ == "__main__":
    sys.exit(main())
