"""kafka-chaos: compose."""
