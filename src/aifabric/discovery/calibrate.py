"""Calibration profiles (placeholder loader; fitting lands with the discovery issue)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["load_calibration"]


def load_calibration(path: Path) -> Any:
    """Load a calibration profile YAML."""
    raise NotImplementedError("calibration profiles are not implemented yet")
