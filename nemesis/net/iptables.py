"""Our iptables rules inside a namespace: two chains of our own, every rule tagged.

Layout (filter table, IPv4 with ``iptables`` and IPv6 with ``ip6tables``)::

    INPUT  -> 1st rule: -m comment --comment kafka-chaos -j KAFKA_CHAOS_INPUT
    OUTPUT -> 1st rule: -m comment --comment kafka-chaos -j KAFKA_CHAOS_OUTPUT

Every rule in our chains carries ``-m comment --comment kafka-chaos:<id>``, so a heal deletes
exactly its own rules, and a sweep deletes our chains and jumps without touching anything
else. When the last rule of our chains goes, the chains and jumps go too, so a healed
namespace shows nothing of ours in ``iptables-save``.

Partition DROP rules are inserted at the top of our chains and shaping rules appended: a
packet released by an NFQUEUE verdict leaves the chain (it does not see later rules), so DROPs
must come before the NFQUEUE rule.

Changes are serialised per namespace across processes (the delayer process adds its own
NFQUEUE rule) with a flock on the namespace; ``iptables -w`` serialises against other
iptables users.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from nemesis.net.netns import NamespaceGone, NetNS

TAG_PREFIX = "kafka-chaos"
CHAIN_INPUT = "KAFKA_CHAOS_INPUT"
CHAIN_OUTPUT = "KAFKA_CHAOS_OUTPUT"
OUR_CHAINS = {"INPUT": CHAIN_INPUT, "OUTPUT": CHAIN_OUTPUT}
BINARIES = ("iptables", "ip6tables")

Hook = Literal["INPUT", "OUTPUT"]
Where = Literal["top", "bottom"]


def family_binary(ip: str) -> str:
    """``ip6tables`` for an IPv6 address, ``iptables`` otherwise."""
    return "ip6tables" if ":" in ip else "iptables"


def tag_for(fault_id: str) -> str:
    """The comment that marks the rules of one fault."""
    return f"{TAG_PREFIX}:{fault_id}"


@contextlib.contextmanager
def namespace_lock(ns: NetNS) -> Iterator[None]:
    """Hold an exclusive lock on ``ns``'s rules (across threads and processes): a flock on
    the namespace file itself, so no lock files are left behind."""
    fd = ns.open()
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the flock


def _ipt(ns: NetNS, binary: str, args: Sequence[str], check: bool = True) -> str:
    return ns.run([binary, "-w", "10", *args], check=check).stdout


def _ensure_chains(ns: NetNS, binary: str) -> None:
    for hook, chain in OUR_CHAINS.items():
        existing = ns.run([binary, "-w", "10", "-S", chain], check=False)
        if existing.returncode != 0:
            _ipt(ns, binary, ["-N", chain])
        jump = ["-m", "comment", "--comment", TAG_PREFIX, "-j", chain]
        if ns.run([binary, "-w", "10", "-C", hook, *jump], check=False).returncode != 0:
            _ipt(ns, binary, ["-I", hook, "1", *jump])


def add_rule(
    ns: NetNS, hook: Hook, match: Sequence[str], target: Sequence[str], fault_id: str,
    *, binary: str = "iptables", where: Where = "bottom",
) -> None:
    """Add ``match -m comment --comment kafka-chaos:<id> -j target`` to our chain for ``hook``."""
    rule = [*match, "-m", "comment", "--comment", tag_for(fault_id), *target]
    with namespace_lock(ns):
        _ensure_chains(ns, binary)
        position = ["-I", OUR_CHAINS[hook], "1"] if where == "top" else ["-A", OUR_CHAINS[hook]]
        _ipt(ns, binary, [*position, *rule])


@dataclass(frozen=True)
class Rule:
    """One rule for :func:`add_rules`: ``match -j target`` in our chain for ``hook``."""

    hook: Hook
    match: tuple[str, ...]
    target: tuple[str, ...]
    binary: str = "iptables"
    where: Where = "bottom"


def add_rules(ns: NetNS, rules: Sequence[Rule], fault_id: str) -> None:
    """Add many rules to ``ns`` at once: one ``iptables-restore --noflush`` per family, so
    they take effect together (atomically) and fast."""
    tag = ("-m", "comment", "--comment", tag_for(fault_id))
    with namespace_lock(ns):
        for binary in sorted({rule.binary for rule in rules}):
            _ensure_chains(ns, binary)
            lines = ["*filter"]
            for rule in rules:
                if rule.binary != binary:
                    continue
                chain = OUR_CHAINS[rule.hook]
                position = f"-I {chain} 1" if rule.where == "top" else f"-A {chain}"
                lines.append(" ".join([position, *rule.match, *tag, *rule.target]))
            lines.append("COMMIT")
            ns.run([f"{binary}-restore", "-w", "10", "--noflush"], input="\n".join(lines) + "\n")


def _rules(ns: NetNS, binary: str, chain: str) -> list[str]:
    proc = ns.run([binary, "-w", "10", "-S", chain], check=False)
    if proc.returncode != 0:
        return []
    return [line for line in proc.stdout.splitlines() if line.startswith("-A ")]


_COMMENT = re.compile(r'--comment "?([^" ]+)"?')


def _comment_of(rule: str) -> str | None:
    found = _COMMENT.search(rule)
    return found.group(1) if found else None


def _drop_chains_if_empty(ns: NetNS, binary: str) -> None:
    if any(_rules(ns, binary, chain) for chain in OUR_CHAINS.values()):
        return
    _remove_chains(ns, binary)


def _remove_chains(ns: NetNS, binary: str) -> None:
    jump_of = {chain: hook for hook, chain in OUR_CHAINS.items()}
    for chain, hook in jump_of.items():
        jump = ["-m", "comment", "--comment", TAG_PREFIX, "-j", chain]
        # a racing writer may have added the jump twice: delete until none is left
        for _ in range(10):
            if ns.run([binary, "-w", "10", "-D", hook, *jump], check=False).returncode != 0:
                break
        # any other jump to our chain (e.g. written by hand) would keep -X from working
        for rule in _rules(ns, binary, hook):
            if rule.endswith(f"-j {chain}"):
                ns.run([binary, "-w", "10", "-D", *rule.split()[1:]], check=False)
        ns.run([binary, "-w", "10", "-F", chain], check=False)
        ns.run([binary, "-w", "10", "-X", chain], check=False)


def delete_tagged(ns: NetNS, fault_id: str) -> int:
    """Delete every rule of fault ``fault_id`` in ``ns``; return how many were deleted.

    Idempotent, and a vanished namespace counts as healed (0 rules deleted). One listing and
    one ``iptables-restore --noflush`` per family, like :func:`add_rules`: the rules go
    together (a heal is as atomic as the cut), and a heal of a quorum cut across nine
    namespaces took ~16 s as one ``iptables`` call per rule, jump and chain.
    """
    tag = tag_for(fault_id)
    deleted = 0
    try:
        with namespace_lock(ns):
            for binary in BINARIES:
                deleted += _delete_in_one_restore(ns, binary, tag)
    except NamespaceGone:
        pass
    return deleted


def _delete_in_one_restore(ns: NetNS, binary: str, tag: str) -> int:
    """The rules tagged ``tag`` of one family, and our chains and their jumps when nothing
    else is left in them; the call-per-rule way if the batch is refused."""
    listing = ns.run([binary, "-w", "10", "-S"], check=False)
    if listing.returncode != 0:
        return 0
    listed = listing.stdout.splitlines()
    chains = [c for c in OUR_CHAINS.values() if f"-N {c}" in listed]
    rules = [(ln, ln.split()) for ln in listed if ln.startswith("-A ")]
    in_ours = [r for r, words in rules if words[1] in chains]
    doomed = [r for r in in_ours if _comment_of(r) == tag]
    lines = [f"-D{r[2:]}" for r in doomed]
    if chains and len(doomed) == len(in_ours):  # nothing else of ours: drop the chains too
        lines += [f"-D{r[2:]}" for r, words in rules
                  if words[1] not in chains and words[-1] in chains]  # the jumps to them
        lines += [f"-F {c}" for c in chains] + [f"-X {c}" for c in chains]
    if not lines:
        return 0
    script = "\n".join(["*filter", *lines, "COMMIT"]) + "\n"
    proc = ns.run([f"{binary}-restore", "-w", "10", "--noflush"], input=script, check=False)
    if proc.returncode == 0:
        return len(doomed)
    return _delete_one_by_one(ns, binary, tag)


def _delete_one_by_one(ns: NetNS, binary: str, tag: str) -> int:
    deleted = 0
    for chain in OUR_CHAINS.values():
        for rule in _rules(ns, binary, chain):
            if _comment_of(rule) != tag:
                continue
            argv = ["-D", *_split_rule(rule)[1:]]
            if ns.run([binary, "-w", "10", *argv], check=False).returncode == 0:
                deleted += 1
    _drop_chains_if_empty(ns, binary)
    return deleted


def remove_all(ns: NetNS) -> int:
    """Remove our chains, their jumps and every rule in them (both families). For sweeps."""
    removed = 0
    try:
        with namespace_lock(ns):
            for binary in BINARIES:
                removed += sum(len(_rules(ns, binary, c)) for c in OUR_CHAINS.values())
                _remove_chains(ns, binary)
    except NamespaceGone:
        pass
    return removed


def ours_in_save(ns: NetNS) -> list[str]:
    """Lines of ``iptables-save``/``ip6tables-save`` that mention kafka-chaos (want: none)."""
    lines: list[str] = []
    for binary in BINARIES:
        out = ns.run([f"{binary}-save"], check=False).stdout
        lines += [ln for ln in out.splitlines() if "kafka-chaos" in ln or "KAFKA_CHAOS" in ln]
    return lines


def _split_rule(rule: str) -> list[str]:
    """Split an ``iptables -S`` line into argv (comments may be quoted)."""
    return shlex.split(rule)
