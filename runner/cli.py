"""The ``kafka-chaos`` command (DESIGN.md §5): run, check, report, scenarios, cluster up.

Exit codes: run/check 0 valid, 1 invalid, 2 unknown or error; report 0, 2 on error. Bad
options are refused with one line and exit 2 before anything starts.
"""

from __future__ import annotations

import argparse
import faulthandler
import signal
import sys
from pathlib import Path
from typing import Any

from contract.exit_codes import exit_code_of_results, missed_expectations
from runner.bug_runs import run_bug, run_once
from runner.cli_parser import build_parser
from runner.config import (
    KAFKA_TABLES,
    RUN_FIELDS,
    RunConfigError,
    engine_problem,
    host_key_refusal,
    space_refusal,
    ssh_peer_refusal,
)

# ---------------------------------------------------------------------- run options
#: RunConfig fields the run command reads in its own way (lists, K=V pairs) or not at all.
SPECIAL_FIELDS = frozenset({"scenario", "faults", "targets", "spark_master", "accept_known",
                            *KAFKA_TABLES})


def run_overrides(args: argparse.Namespace, file_opts: dict[str, Any]) -> dict[str, Any]:
    """Options from a TOML config file, then the command line on top.

    Every RunConfig field with a same-named option is taken as given (the dataclass is the
    one list of fields); the special ones are parsed below.
    """
    known = set(RUN_FIELDS)
    out: dict[str, Any] = {k.replace("-", "_"): v for k, v in file_opts.items()}
    unknown = sorted(set(out) - known)
    if unknown:
        raise RunConfigError(f"--config: unknown run option {unknown[0]!r}")
    for name in sorted(known - SPECIAL_FIELDS):
        v = getattr(args, name, None)
        if v is not None:
            out[name] = v
    if getattr(args, "spark_master", None):
        out["spark_master"] = args.spark_master
    if args.faults is not None:
        out["faults"] = [] if args.faults in ("", "none") else [
            x.strip() for x in args.faults.split(",") if x.strip()]
    if args.targets is not None:
        out["targets"] = [x.strip() for x in args.targets.split(",") if x.strip()]
    if getattr(args, "accept_known", None) is not None:
        out["accept_known"] = [x.strip() for x in args.accept_known.split(",") if x.strip()]
    for key in KAFKA_TABLES:
        pairs = getattr(args, key)
        if pairs:
            out[key] = {**out.get(key, {}), **dict(pairs)}
    return out


def _load_toml(path: Path) -> dict[str, Any]:
    import tomllib

    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise RunConfigError(f"{path}: {e}") from None


def _scenarios(scenario_file: Path | None) -> dict[str, Any]:
    from scenarios import SCENARIOS

    found = dict(SCENARIOS)
    if scenario_file is not None:
        from scenarios.toml_file import load_scenarios

        found.update(load_scenarios(scenario_file))
    return found


def _bug_run(args: argparse.Namespace) -> tuple[Any, list[tuple[Any, dict[str, Any]]]] | None:
    """With --bug: (entry, [(side, the side's pinned options), ...]); refuses what
    contradicts it."""
    from scenarios.bugs import find

    if args.bug is None:
        for flag, value in (("--on", args.on), ("--repeat", args.repeat),
                            ("--figures", args.figures)):
            if value is not None:
                raise RunConfigError(f"{flag} needs --bug")
        return None
    if args.scenario is not None:
        raise RunConfigError("--bug runs its own scenario; drop --scenario")
    if args.repeat is not None and args.repeat < 1:
        raise RunConfigError(f"--repeat must be >= 1 (got {args.repeat})")
    if args.figures is not None and args.repeat is None:
        raise RunConfigError("--figures needs --repeat (a rate is a tally of runs)")
    if args.figures is not None and not args.figures.parent.is_dir():
        raise RunConfigError(f"--figures: no folder {args.figures.parent}")
    try:
        entry = find(args.bug)
        picks = entry.picks(args.on or "affected")
    except ValueError as e:
        raise RunConfigError(str(e)) from None
    if getattr(args, entry.axis, None) is not None:
        flag = "--" + entry.axis.replace("_", "-")
        pins = ", ".join(f"{p.version} on {p.side}" for p in picks)
        raise RunConfigError(f"--bug {entry.id} pins {flag} ({pins}); drop {flag}")
    return entry, [(p, entry.pin(p.side, p.version)) for p in picks]


def cmd_run(args: argparse.Namespace) -> int:
    try:
        bug = _bug_run(args)
        scenarios = _scenarios(args.scenario_file)
        if bug is not None:
            scenario = bug[0].scenario
        else:
            name = args.scenario or "safe-config-chaos"
            if name not in scenarios:
                raise RunConfigError(f"unknown scenario {name!r} "
                                     "(see: kafka-chaos scenarios)")
            scenario = scenarios[name]
        file_opts = _load_toml(args.config).get("run", {}) if args.config else {}
        if not isinstance(file_opts, dict):
            raise RunConfigError(f"{args.config}: [run] must be a table of run options")
        overrides = run_overrides(args, file_opts)
        # every side's configuration is checked before the first cluster starts
        runs = [(None, scenario.run_config(**overrides))] if bug is None else [
            (pick, scenario.run_config(**{**overrides, **pin})) for pick, pin in bug[1]]
        for _side, cfg in runs:
            cfg.validate()
            if (why := scenario.refusal(cfg) or space_refusal(cfg) or ssh_peer_refusal(
                    cfg, scenario.script_faults if scenario.script else None)
                    or host_key_refusal(cfg)) is not None:
                raise RunConfigError(why)
            # before the cluster: a release pip or Maven cannot fetch is bad input
            from runner.clients import ensure_driver

            ensure_driver(cfg.client_spec, say=print)
    except (RunConfigError, TypeError) as e:  # ClientVenvError is a RunConfigError
        print(f"kafka-chaos: error: {e}", file=sys.stderr)
        return 2
    if bug is None:
        return run_once(runs[0][1], scenario).exit_code
    return run_bug(bug[0], runs, scenario, args.repeat, figures=args.figures,
                   command=" ".join(["kafka-chaos", *figure_argv(sys.argv[1:])]))


def figure_argv(argv: list[str]) -> list[str]:
    """The command line as a figure names its writer: without ``--out`` (where this machine
    kept its run directories says nothing about the measurement)."""
    out: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a == "--out":
            skip = True
        elif not a.startswith("--out="):
            out.append(a)
    return out


def cmd_check(args: argparse.Namespace) -> int:
    if not (args.run_dir / "history").is_dir():
        print(f"kafka-chaos: error: {args.run_dir} is not a run directory (no history/)",
              file=sys.stderr)
        return 2
    spark = engine_problem(args.spark_master)
    if spark:
        print(f"kafka-chaos: error: {spark}", file=sys.stderr)
        return 2
    from checkers import check_run

    results = check_run(args.run_dir, spark_master=args.spark_master)
    print(f"valid: {results.get('valid')}  ({args.run_dir / 'results.json'})")
    for miss in missed_expectations(results):
        print(f"expectation missed: {miss}")
    from runner.verdict import checker_lines

    for line in checker_lines(results, args.run_dir):
        print(line)
    return exit_code_of_results(results)


def cmd_report(args: argparse.Namespace) -> int:
    from reports import ReportError, render_matrix, render_run

    try:
        if (args.path / "run.json").exists():
            out = render_run(args.path)
        elif args.path.is_dir():
            out = render_matrix(args.path)
        else:
            raise ReportError(f"{args.path} is neither a run directory nor a folder of runs")
    except (ReportError, OSError) as e:
        print(f"kafka-chaos: error: {e}", file=sys.stderr)
        return 2
    print(out)
    return 0


def cmd_scenarios(args: argparse.Namespace) -> int:
    try:
        scenarios = _scenarios(args.scenario_file)
    except RunConfigError as e:
        print(f"kafka-chaos: error: {e}", file=sys.stderr)
        return 2
    width = max(len(n) for n in scenarios)
    for name, sc in scenarios.items():
        print(f"{name:<{width}}  {sc.summary}")
    return 0


def cmd_bugs(args: argparse.Namespace) -> int:
    from scenarios.bugs import table

    header = ("id", "title", "affected", "fixed", "status")
    rows = [header, *table()]
    widths = [min(max(len(r[i]) for r in rows), 60) for i in range(4)]
    for r in rows:
        cells = [r[i][:widths[i]].ljust(widths[i]) for i in range(4)]
        print("  ".join([*cells, r[4]]))
    return 0


def _cluster_config(args: argparse.Namespace) -> Any:
    """The ClusterConfig of ``cluster up`` / ``compose-file``; None (said) when bad."""
    from compose.config import ClusterConfig, ConfigError

    cfg = ClusterConfig(brokers=args.brokers, controllers=args.controllers, image=args.image)
    if args.kafka_version:
        cfg.kafka_version = args.kafka_version
    try:
        cfg.validate()
    except ConfigError as e:
        print(f"kafka-chaos: error: {e}", file=sys.stderr)
        return None
    return cfg


def cmd_compose_file(args: argparse.Namespace) -> int:
    import re

    from compose.compose_file import write_compose_files
    from compose.config import FAST_FAULTS

    cfg = _cluster_config(args)
    if cfg is None:
        return 2
    cfg.broker_config = dict(FAST_FAULTS)  # as in a run's own cluster: faults heal fast
    if not re.match(r"^[a-z0-9][a-z0-9_-]*$", args.project):
        print(f"kafka-chaos: error: --project must be lower-case letters, digits, - and _, "
              f"got {args.project!r}", file=sys.stderr)
        return 2
    files = write_compose_files(args.out, cfg, args.project, image=args.image)
    print(f"wrote {files.compose} and {files.nodes}")
    print(f"  docker-compose -f {files.compose} -p {args.project} up -d")
    print(f"  kafka-chaos run --bootstrap-servers {files.bootstrap_servers} --nodes {files.nodes}")
    print(f"  docker-compose -f {files.compose} -p {args.project} down -v")
    return 0


def cmd_cluster_up(args: argparse.Namespace) -> int:
    from compose.cluster import KafkaCluster
    from compose.stop_signals import signals_raise

    cfg = _cluster_config(args)
    if cfg is None:
        return 2
    try:
        with signals_raise(), KafkaCluster(cfg) as cluster:
            print(f"bootstrap servers: {cluster.bootstrap_servers}", flush=True)
            print("Ctrl-C to stop and remove the cluster", flush=True)
            import threading

            threading.Event().wait()
    except (KeyboardInterrupt, SystemExit):
        print("cluster removed")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    """Undoes what runs left on the nodes of ``--nodes`` (over SSH, or through this
    machine's engine for a container), except on a node where a live run's dead-man switch
    is armed."""
    import docker

    from compose.nodes_file import NodesFileError, load_nodes
    from compose.ssh import SshError
    from nemesis.dead_man import sweep_spec
    from runner.config import host_key_missing

    try:
        specs = load_nodes(args.nodes)
    except NodesFileError as e:
        print(f"kafka-chaos: error: {e}", file=sys.stderr)
        return 2
    unknown = [(s.node_id, s.ssh) for s in specs if s.ssh is not None
               and not s.ssh.host_key_known()]
    if unknown:
        print(f"kafka-chaos: error: {host_key_missing(*unknown[0])}", file=sys.stderr)
        return 2
    failed = 0
    for spec in specs:
        try:
            print(sweep_spec(spec).describe())
        except (SshError, docker.errors.DockerException) as e:
            print(f"node {spec.node_id}: not reached: {e}")
            failed += 1
        finally:
            if spec.ssh is not None:
                spec.ssh.close()
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    # `kill -USR1 <pid>` prints every thread's stack to stderr: what a run that does not
    # stop is waiting for (the tests ask for it before they give up on a run).
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    args = build_parser().parse_args(argv)
    if args.command == "run":
        return cmd_run(args)
    if args.command == "check":
        return cmd_check(args)
    if args.command == "report":
        return cmd_report(args)
    if args.command == "scenarios":
        return cmd_scenarios(args)
    if args.command == "bugs":
        return cmd_bugs(args)
    if args.command == "sweep":
        return cmd_sweep(args)
    if args.command in ("explore", "replay", "shrink"):
        from runner.explore import commands

        return int(getattr(commands, f"cmd_{args.command}")(args))
    if args.cluster_command == "compose-file":
        return cmd_compose_file(args)
    return cmd_cluster_up(args)


if __name__ == "__main__":
    sys.exit(main())
