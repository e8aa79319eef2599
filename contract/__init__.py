"""The contract between kafka-chaos's stages, defined once (DESIGN.md §3-§5)."""
