"""pytest plugin for kafka-chaos (registered through the ``pytest11`` entry point)."""
