"""Fixtures of the network-layer tests (the helpers live in netlab.py)."""

from netlab import make_lan

__all__ = ["make_lan"]
