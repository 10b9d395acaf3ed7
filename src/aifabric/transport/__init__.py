"""Transports and congestion models used by the flow engine: DCQCN, PFC, UET, receiver-driven admission."""
