"""kafka-chaos: reports."""
