"""Result store of a sweep: one CSV row per point, appended and flushed as each finishes, so nothing is
lost when a long sweep stops; :func:`done_keys` lets the next run skip what is already there."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

__all__ = ["ResultStore", "done_keys"]


def _complete_length(path: Path) -> int:
    """Bytes of ``path`` up to and including its last newline: the complete rows.

    A sweep killed while writing leaves a torn last row without its line end; rows are flushed whole and
    values never hold a newline (errors are flattened), so everything after the last newline is torn.
    """
    size = path.stat().st_size
    with path.open("rb") as fh:
        end = size
        while end > 0:
            start = max(0, end - _TAIL_CHUNK)
            fh.seek(start)
            i = fh.read(end - start).rfind(b"\n")
            if i >= 0:
                return start + i + 1
            end = start
    return 0


_TAIL_CHUNK = 1 << 16


def done_keys(path: Path) -> set[str]:
    """Keys of the complete rows already in the CSV at ``path`` (empty if it does not exist); a torn
    last row (see :func:`_complete_length`) does not count."""
    if not path.exists():
        return set()
    n = _complete_length(path)
    with path.open("rb") as fh:
        text = fh.read(n).decode("utf-8", errors="replace")
    return {row["key"] for row in csv.DictReader(io.StringIO(text, newline="")) if row.get("key")}


class ResultStore:
    """Appends result rows to a CSV with a fixed header (written once).

    Opening an existing file first truncates a torn last row (``dropped_bytes`` says how many bytes), so
    that the next row starts on its own line.
    """

    def __init__(self, path: Path, columns: list[str]) -> None:
        self.path = path
        self.columns = columns
        self.dropped_bytes = 0
        if path.exists() and path.is_file():
            keep = _complete_length(path)
            self.dropped_bytes = path.stat().st_size - keep
            if self.dropped_bytes:  # a torn last row: drop it, never merge it with the next row
                with path.open("rb+") as fh:
                    fh.truncate(keep)
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
