"""collectives."""
