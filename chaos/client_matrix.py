"""The client matrix: every catalogue scenario with each client, one table.

    python -m chaos.client_matrix --clients confluent-kafka,java:4.1.1
    python -m chaos.client_matrix --clients java:4.1.1 --only acks1 --no-figures

Each cell is one run of a scenario at its own settings with ``client`` set, judged as the
nightly judges a scenario cell (its expectations, else a valid verdict). A scenario a client
cannot run (a setting its driver does not drive yet) is listed with the reason, not run. The
table (scenario × client: verdict, expectations, the anomalies with a count) replaces its
section of ``--figures`` with the machine, the versions and the date. Exit code as the
nightly's: 0 every cell passed, 1 one failed, 2 one could not be decided.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from chaos.nightly import Cell, CellOutcome, Runner, matrix_exit_code, run_cells

FIGURE = Path(__file__).resolve().parent.parent / "docs" / "figures" / "client-matrix.md"


Skipped = dict[tuple[str, str], str]


def client_cells(clients: list[str], only: list[str]) -> tuple[list[Cell], Skipped]:
    """The cells to run (scenario × client), and (scenario, client) -> why not, for the
    scenarios a client cannot run."""
    from runner.config import RunConfigError
    from scenarios import SCENARIOS

    todo: list[Cell] = []
    skipped: Skipped = {}
    for name, sc in SCENARIOS.items():
        if only and not any(o in name for o in only):
            continue
        for client in clients:
            try:
                cfg = sc.run_config(client=client)
                cfg.validate()
            except RunConfigError as e:
                skipped[(name, client)] = str(e).split(": ", 1)[-1]
                continue
            if (why := sc.refusal(cfg)) is not None:
                skipped[(name, client)] = why.split(": ", 2)[-1]
                continue
            todo.append(Cell(name, {"client": client}))
    return todo, skipped


def _anomalies(outcome: CellOutcome) -> str:
    results = (outcome.result.results if outcome.result else None) or {}
    counted = [(k, int(a.get("count") or 0)) for k, a in (results.get("anomalies") or {}).items()
               if isinstance(a, dict) and a.get("count")]
    return ", ".join(f"{k} {n}" for k, n in counted) or "none"


def rows(outcomes: list[CellOutcome], skipped: Skipped
         ) -> list[tuple[str, str, str, str, str]]:
    """scenario, client, verdict, passed (its expectations), anomalies with a count."""
    out = []
    for o in outcomes:
        verdict = o.result.verdict if o.result else "error"
        status = {"passed": "yes", "failed": "no: " + "; ".join(map(str, o.misses)),
                  "error": f"undecided: {o.error or verdict}"}[o.status]
        out.append((o.cell.scenario or "", str(o.cell.axes.get("client")), verdict, status,
                    _anomalies(o)))
    for (name, client), why in skipped.items():
        out.append((name, client, "not run", f"not driven: {why}", "-"))
    return sorted(out)


def main(argv: list[str] | None = None, runner: Runner | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m chaos.client_matrix",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", required=True,
                    help="comma list of --client values, e.g. confluent-kafka,java:4.1.1")
    ap.add_argument("--only", action="append", default=[],
                    help="only scenarios whose name contains this (repeatable)")
    ap.add_argument("--out", type=Path, default=Path("runs/clients"), help="runs folder")
    ap.add_argument("--figures", type=Path, default=FIGURE)
    ap.add_argument("--no-figures", action="store_true")
    args = ap.parse_args(argv)
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    from contract.clients import ClientSpecError, parse_client

    try:
        for c in clients:
            parse_client(c)
    except ClientSpecError as e:
        ap.error(str(e))
    todo, skipped = client_cells(clients, args.only)
    t0 = time.monotonic()
    outcomes = (run_cells(todo, args.out, {}, runner=runner) if runner is not None
                else run_cells(todo, args.out, {}))
    table = rows(outcomes, skipped)
    for row in table:
        print(" | ".join(row))
    if not args.no_figures:
        from reports.figures import write_figure

        command = "python -m chaos.client_matrix --clients " + ",".join(clients) + "".join(
            f" --only {o}" for o in args.only)
        section = "clients-" + "-".join(clients)
        if args.only:
            section += "-only-" + "-".join(args.only)
        written = write_figure(
            args.figures, section[:120], heading="Client matrix", command=command,
            title="Scenarios × " + ", ".join(clients),
            columns=["scenario", "client", "verdict", "as expected", "anomalies"], rows=table,
            notes=f"One run per cell at each scenario's own settings, "
                  f"{time.monotonic() - t0:.0f} s in all.")
        print(f"written {written}")
    return matrix_exit_code(outcomes) if outcomes else 2


if __name__ == "__main__":
    raise SystemExit(main())
