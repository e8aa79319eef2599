"""A client driver that speaks contract/driver_protocol.py without any client: it writes
the bytes (lines and frames) of the file its spec's ``config.fake.lines`` names, then either
exits at once with the code of ``config.fake.exit`` (a crash: no ``end``) or, without it,
waits for its stdin to end (the recorder's stop) and writes ``end``. The recorder's tests
run it as a real process."""

from __future__ import annotations

import sys


def main(spec_path: str) -> int:
    with open(spec_path) as fh:
        spec = dict(line.split("=", 1) for line in fh.read().splitlines() if "=" in line)
    with open(spec["config.fake.lines"], "rb") as fh:
        sys.stdout.buffer.write(fh.read())
    sys.stdout.buffer.flush()
    if "config.fake.exit" in spec:
        return int(spec["config.fake.exit"])
    sys.stdin.read()  # until the recorder closes it
    sys.stdout.buffer.write(b"end\n")
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
