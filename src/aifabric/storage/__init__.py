"""Storage on the front-end network: checkpoint size and write/restore time, data loading, Young/Daly."""

from aifabric.storage.checkpoint import (
    CheckpointResult,
    CheckpointSize,
    checkpoint_size,
    checkpoint_time,
)
from aifabric.storage.interval import goodput_lost_fraction, young_daly_interval_s, young_daly_outside
from aifabric.storage.paths import NodePath, Transfer, node_path, transfer_time

__all__ = [
    "CheckpointResult",
    "CheckpointSize",
    "NodePath",
    "Transfer",
    "checkpoint_size",
    "checkpoint_time",
    "goodput_lost_fraction",
    "node_path",
    "transfer_time",
    "young_daly_interval_s",
    "young_daly_outside",
]
