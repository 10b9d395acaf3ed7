"""aifabric: model, simulate and plan the networks of AI clusters."""

__version__ = "0.1.0"
