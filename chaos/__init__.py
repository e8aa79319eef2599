"""kafka-chaos: chaos."""
