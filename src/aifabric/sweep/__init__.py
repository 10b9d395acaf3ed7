"""Design-space sweeps: grids of cluster variants, local process executors, incremental, resumable results."""

from aifabric.sweep.grid import SweepPoint, SweepSpec, load_sweep
from aifabric.sweep.runner import COLUMNS, evaluate_point, run_sweep

__all__ = ["COLUMNS", "SweepPoint", "SweepSpec", "evaluate_point", "load_sweep", "run_sweep"]
