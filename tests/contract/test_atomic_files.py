"""Every file the tool writes goes through a fresh temporary file and a rename: a symlink
planted at the old predictable temporary names, or at the target, never steers the write
(issue 47: re-checking or re-rendering someone else's run directory as root)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contract.atomic_files import atomic_output, write_atomic


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "outside" / "authorized_keys"
    victim.parent.mkdir()
    victim.write_text("ssh-ed25519 AAAA root@host\n")
    return victim


def _run_dir(tmp_path: Path, victim: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    # what the writers used before: <name>.tmp, .<name>.tmp, <stem>.xml.tmp
    for name in ("results.json.tmp", ".run.json.tmp", "report.html.tmp", "junit.xml.tmp",
                 "figure.md.tmp"):
        (run / name).symlink_to(victim)
    return run


def test_no_writer_follows_a_planted_temporary_name(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Old writers: each wrote the victim through its planted .tmp link (and then renamed
    the link over the target)."""
    from checkers.runfiles import RunDir
    from reports.figures import write_figure
    from reports.junit import write_junit
    from reports.page import write_atomic as write_page
    from runner.rundir import save_run_json

    victim = _victim(tmp_path)
    before = victim.read_text()
    run = _run_dir(tmp_path, victim)
    RunDir(str(run)).write_text("results.json", '{"valid": true}')
    save_run_json(run, {"run_id": "x"})
    write_page(run / "report.html", "<html></html>")
    write_junit(run / "junit.xml", b"<testsuites/>")
    write_figure(run / "figure.md", "s", heading="H", title="T", command="c",
                 columns=["a"], rows=[("1",)])
    assert victim.read_text() == before
    assert json.loads((run / "results.json").read_text()) == {"valid": True}
    assert json.loads((run / "run.json").read_text()) == {"run_id": "x"}
    assert (run / "report.html").read_text() == "<html></html>"


def test_a_symlinked_target_is_replaced_not_followed(tmp_path) -> None:  # type: ignore[no-untyped-def]
    victim = _victim(tmp_path)
    before = victim.read_text()
    target = tmp_path / "results.json"
    target.symlink_to(victim)
    write_atomic(target, "{}")
    assert victim.read_text() == before
    assert not target.is_symlink() and target.read_text() == "{}"
    assert oct(target.stat().st_mode & 0o777) == "0o644"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "run.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_output(target) as fh:
        fh.write(b"half")
        raise RuntimeError("disk full")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]
