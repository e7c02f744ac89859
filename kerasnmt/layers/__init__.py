"""Public Keras layers of kerasnmt."""
