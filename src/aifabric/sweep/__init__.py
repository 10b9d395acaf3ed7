"""Design-space sweeps: grids of cluster variants, local or Ray executors, a resumable SQLite result store."""

from aifabric.sweep.grid import SweepPoint, SweepSpec, load_sweep
from aifabric.sweep.runner import evaluate_point

__all__ = ["SweepPoint", "SweepSpec", "evaluate_point", "load_sweep"]
