"""Explore, replay and shrink: many runs wired together (``kafka-chaos explore``, ``replay``,
``shrink``) — seeded draws of the configuration space, a run's schedule as it happened
replayed, and a finding made as small as it still reproduces."""
