"""The workflows' shell steps take no expression text (issue 47): a dispatch input expanded
inside `run:` (``${{ … }}``) is code in a root shell; inputs go through the environment and
are checked there."""

from __future__ import annotations

import re
from pathlib import Path

WORKFLOWS = Path(__file__).resolve().parents[1] / ".github" / "workflows"


def run_blocks(text: str) -> list[str]:
    """The shell text of every ``run:`` step of a workflow (inline or a ``|`` block)."""
    out: list[str] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)(?:- )?run:\s*(.*)$", line)
        if not m:
            continue
        indent, rest = len(m.group(1)), m.group(2)
        if rest not in ("|", ">", "|-", ">-"):
            out.append(rest)
            continue
        body = []
        for nxt in lines[i + 1:]:
            if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent:
                break
            body.append(nxt)
        out.append("\n".join(body))
    return out


def test_no_shell_step_expands_an_expression() -> None:
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert files
    blocks = [(f.name, b) for f in files for b in run_blocks(f.read_text())]
    assert len(blocks) >= 3, blocks  # the parse found the steps
    bad = [(name, b) for name, b in blocks if "${{" in b]
    assert not bad, bad


def test_the_parse_sees_an_expression_in_a_step() -> None:
    planted = 'steps:\n  - name: x\n    run: make nightly ARGS="${{ inputs.duration }}"\n'
    assert run_blocks(planted) == ['make nightly ARGS="${{ inputs.duration }}"']
