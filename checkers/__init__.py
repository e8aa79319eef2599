"""kafka-chaos: checkers."""
