"""Result store of a sweep: one CSV row per point, appended and flushed as each finishes, so nothing is
lost when a long sweep stops; :func:`done_keys` lets the next run skip what is already there."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

__all__ = ["ResultStore", "done_keys"]


def done_keys(path: Path) -> set[str]:
    """Keys of the points already in the CSV at ``path`` (empty if it does not exist)."""
    if not path.exists():
        return set()
    with path.open(newline="") as fh:
        return {row["key"] for row in csv.DictReader(fh) if row.get("key")}


class ResultStore:
    """Appends result rows to a CSV with a fixed header (written once)."""

    def __init__(self, path: Path, columns: list[str]) -> None:
        self.path = path
        self.columns = columns
        new = not path.exists() or path.stat().st_size == 0
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = path.open("a", newline="")
        self._writer = csv.DictWriter(self._fh, fieldnames=columns, extrasaction="ignore")
        if new:
            self._writer.writeheader()
            self._fh.flush()

    def append(self, row: dict[str, Any]) -> None:
        """Write one row and flush it to disk."""
        self._writer.writerow(row)
        self._fh.flush()

    def close(self) -> None:
        """Close the file."""
        self._fh.close()
