"""Host keys are never trusted on first use: ssh runs with StrictHostKeyChecking=yes, and a
run or a sweep whose nodes.toml names a node without a known host key is refused, one line
and exit 2, before anything connects. The real ssh-keygen reads the files; no node is
contacted (the addresses are documentation ones, never reached)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from compose.ssh import SshTarget
from runner.config import RunConfig, host_key_refusal
from tests.run.cli import CLI


def _key(tmp_path: Path, name: str = "host") -> str:
    key = tmp_path / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                   check=True, capture_output=True)
    return key.with_suffix(".pub").read_text().strip()


def _nodes(tmp_path: Path, known: Path) -> Path:
    nodes = tmp_path / "nodes.toml"
    nodes.write_text(f'known_hosts = "{known}"\n' + "".join(
        f'[[node]]\nid = {i}\nhost = "192.0.2.{i}"\n' for i in (1, 2, 3)))
    return nodes


def test_a_host_key_is_known_only_from_the_file(tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    pub = _key(tmp_path)
    known.write_text(f"192.0.2.1 {pub}\n[192.0.2.2]:2222 {pub}\n")
    assert SshTarget("192.0.2.1", known_hosts=str(known)).host_key_known()
    assert SshTarget("192.0.2.2", port=2222, known_hosts=str(known)).host_key_known()
    assert not SshTarget("192.0.2.2", known_hosts=str(known)).host_key_known()  # port 22
    assert not SshTarget("192.0.2.3", known_hosts=str(known)).host_key_known()
    assert not SshTarget("192.0.2.1", known_hosts=str(tmp_path / "none")).host_key_known()
    # hashed entries (ssh-keygen -H) count too
    subprocess.run(["ssh-keygen", "-H", "-f", str(known)], check=True, capture_output=True)
    assert "192.0.2.1" not in known.read_text()
    assert SshTarget("192.0.2.1", known_hosts=str(known)).host_key_known()
    # never trust on first use
    assert "StrictHostKeyChecking=yes" in SshTarget("192.0.2.1").argv()


def test_a_node_without_a_known_host_key_refuses_the_run(tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    known.write_text(f"192.0.2.1 {_key(tmp_path)}\n192.0.2.3 {_key(tmp_path, 'three')}\n")
    cfg = RunConfig(bootstrap_servers="192.0.2.1:9092", nodes=str(_nodes(tmp_path, known)),
                    faults=["kill"])
    why = host_key_refusal(cfg)
    assert why is not None and why.startswith(
        f"node 2 (192.0.2.2): no host key for it in {known}; check the node's fingerprint"), why
    known.write_text(known.read_text() + f"192.0.2.2 {_key(tmp_path, 'two')}\n")
    assert host_key_refusal(cfg) is None


@pytest.mark.parametrize("command", [
    ["run", "--bootstrap-servers", "192.0.2.1:9092", "--faults", "kill", "--duration", "10"],
    ["sweep"],
])
def test_run_and_sweep_refuse_an_unknown_host_key_in_one_line(tmp_path: Path,
                                                              command: list[str]) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    out = tmp_path / "runs"
    proc = subprocess.run([*CLI, *command, "--nodes", str(_nodes(tmp_path, empty)),
                           *(["--out", str(out)] if command[0] == "run" else [])],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("kafka-chaos: error: node 1 (192.0.2.1): no host key"), \
        proc.stderr
    assert not out.exists()  # nothing started
