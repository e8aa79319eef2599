"""Measured figures for the docs: the command that measures a table writes it, with the machine,
the versions and the date, into a Markdown file under ``docs/figures/``.

A figure file holds one or more *sections*, each between two HTML comments::

    <!-- figure: 10000000-writes -->
    ### 10,000,000 writes
    Written by `python -m bench checker -- --sizes 10000000` on 2026-12-01 07:12 UTC.
    ...the table...
    <!-- /figure -->

:func:`write_figure` replaces its own section (or appends it) and leaves the file's other
sections and its text outside the sections as they are, so a benchmark run at one size
rewrites that size's figures only. Nothing here imports a stage: the callers pass plain
values (the bug runs of ``kafka-chaos run --bug ID --repeat N`` call it with their tally).
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import os
import platform
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from contract.atomic_files import write_atomic

ROOT = Path(__file__).resolve().parents[1]
#: Where the figures live (the user guide links to them).
FIGURES = ROOT / "docs" / "figures"

#: Python distributions whose versions every figure names when they are installed.
DISTRIBUTIONS = ("kafka-chaos", "pyspark", "pysail", "duckdb", "confluent-kafka")

_SECTION_ID = re.compile(r"[\w.#:-]+")
_SECTION = re.compile(r"<!-- figure: (?P<id>[\w.#:-]+) -->\n.*?<!-- /figure -->\n?", re.S)


def machine() -> dict[str, str]:
    """The machine a figure was measured on: cores, memory, OS and kernel, load average."""
    memory = "unknown"
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    memory = f"{int(line.split()[1]) / 2**20:.0f} GiB"
                    break
    except OSError:
        pass
    try:
        os_name = platform.freedesktop_os_release().get("PRETTY_NAME", platform.system())
    except OSError:
        os_name = platform.system()
    return {
        "cores": str(os.cpu_count()),
        "memory": memory,
        "os": f"{os_name}, kernel {platform.release()}",
        "load average": f"{os.getloadavg()[0]:.1f}",
    }


def versions(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Python and the installed :data:`DISTRIBUTIONS` (and librdkafka, when confluent-kafka
    loads), then ``extra`` (e.g. ``{"kafka": "4.3.1"}``), which wins."""
    out = {"python": platform.python_version()}
    for dist in DISTRIBUTIONS:
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    try:
        import confluent_kafka

        out["librdkafka"] = confluent_kafka.libversion()[0]
    except ImportError:
        pass
    return out | dict(extra or {})


def _cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table; ``|`` in a cell is escaped."""
    lines = ["| " + " | ".join(_cell(c) for c in columns) + " |",
             "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def render_section(section: str, *, title: str, command: str,
                   columns: Sequence[str], rows: Sequence[Sequence[object]],
                   notes: str = "", when: _dt.datetime | None = None,
                   machine_info: Mapping[str, str] | None = None,
                   version_info: Mapping[str, str] | None = None) -> str:
    """One section's Markdown, markers included (see the module's docstring)."""
    when = when or _dt.datetime.now(_dt.UTC)
    mach = machine() if machine_info is None else dict(machine_info)
    vers = versions() if version_info is None else dict(version_info)
    parts = [
        f"<!-- figure: {section} -->",
        f"### {title}",
        "",
        f"Written by `{command}` on {when:%Y-%m-%d %H:%M} UTC.",
        "",
        "Machine: " + ", ".join(f"{k} {v}" for k, v in mach.items()) + ".  ",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()) + ".",
        "",
        table(columns, rows),
    ]
    if notes.strip():
        parts += ["", notes.strip()]
    parts += ["", "<!-- /figure -->", ""]
    return "\n".join(parts)


def write_figure(path: Path | str, section: str, *, title: str, command: str,
                 columns: Sequence[str], rows: Sequence[Sequence[object]],
                 notes: str = "", heading: str | None = None,
                 versions_extra: Mapping[str, str] | None = None,
                 when: _dt.datetime | None = None) -> Path:
    """Write (or rewrite) one section of the figure file ``path`` and return the path.

    ``section`` names the section (letters, digits, ``.#:-_``; e.g. ``"10000000-writes"``,
    ``"KIP-966"``); ``title`` is its heading, ``command`` the command line that measured it
    (shown as "Written by"), ``columns``/``rows`` its table, ``notes`` a paragraph under the
    table. The machine and the versions (:func:`versions` plus ``versions_extra``, such as
    the Kafka version the runs used) are read here, at writing time, so call it on the
    machine that measured. A new file starts with ``heading`` (default: its name as a
    title) and a line saying that its sections are written by commands.
    """
    if not _SECTION_ID.fullmatch(section):
        # an id the markers cannot hold would be appended anew on every run
        raise ValueError(f"a figure section id is letters, digits and .#:-_, got {section!r}")
    path = Path(path)
    block = render_section(section, title=title, command=command, columns=columns, rows=rows,
                           notes=notes, when=when, version_info=versions(versions_extra))
    if path.exists():
        text = path.read_text()
    else:
        name = heading or path.stem.replace("-", " ").capitalize()
        text = (f"# {name}\n\nEach section below is written by the command it names; run "
                "that command again to measure anew (it replaces its own section).\n\n")
    found = [m for m in _SECTION.finditer(text) if m.group("id") == section]
    if found:
        m = found[0]
        text = text[:m.start()] + block + text[m.end():]
    else:
        text = text.rstrip("\n") + "\n\n" + block
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(path, text)


def sections(path: Path | str) -> list[str]:
    """The section ids of a figure file, in order."""
    return [m.group("id") for m in _SECTION.finditer(Path(path).read_text())]


def write_bug_rate(entry_id: str, command: str,
                   sides: Sequence[tuple[str, str, int, int, Sequence[str]]],
                   *, kind: str, timing: bool = False,
                   versions_extra: Mapping[str, str] | None = None,
                   notes: str = "", path: Path | str | None = None,
                   title: str | None = None) -> Path:
    """The rate of one catalogue entry, as ``kafka-chaos run --bug ID --repeat N`` tallies it,
    into its section of ``docs/figures/bug-rates.md`` (``entry_id``: the section's id, and
    its heading unless ``title`` is given).

    ``sides``: one ``(side, label, as_expected, runs, counts)`` per side run — ``side`` is
    ``affected``/``fixed``/``unaffected``, ``label`` what that side pins (``"Kafka 3.9.1"``),
    ``as_expected`` of ``runs`` showed what the entry promises, ``counts`` the ``kind`` count
    of each run (``"-"``: no results).
    """
    rows = [(side, label, f"{hits}/{runs}", ", ".join(counts) or "none")
            for side, label, hits, runs, counts in sides]
    # a timing-dependent bug counts the runs that showed it on its affected side, the
    # clean runs on its fixed (or unaffected) side (scenarios.bugs.rate)
    shown = ("runs as expected (affected: that showed the bug)" if timing
             and any(side != "affected" for side, *_ in sides)
             else "runs that showed the bug" if timing else "runs as expected")
    return write_figure(path or FIGURES / "bug-rates.md", entry_id, title=title or entry_id,
                        command=command, columns=("side", "pinned to", shown,
                                                  f"{kind} per run"),
                        rows=rows, notes=notes, heading="Bug rates",
                        versions_extra=versions_extra)
