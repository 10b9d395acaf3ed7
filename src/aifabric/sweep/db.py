"""A sweep's result store: SQLite in WAL mode, one typed row per point, keyed by a hash of the point.

Why this shape (reference/reports-sweeps-interop.md sec. 2): only the driver process writes; each batch of
results is one transaction of ``INSERT OR IGNORE`` on the point hash, so a result computed twice (a retry, a
resumed run) is stored once; with ``journal_mode=WAL`` and ``synchronous=NORMAL`` a committed transaction
survives the process being killed (``kill -9``), and a killed writer leaves no torn row (SQLite's atomic
commit, https://www.sqlite.org/wal.html, https://www.sqlite.org/atomiccommit.html). Columns are typed
(``INTEGER``, ``REAL``, ``TEXT``), never JSON. Parquet export goes through pyarrow.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ResultDB", "point_hash"]

_SQL_TYPES = {int: "INTEGER", float: "REAL", str: "TEXT", bool: "INTEGER"}


def point_hash(params: Mapping[str, Any], *, model_version: str) -> str:
    """SHA-256 (hex) of the point's parameters as canonical JSON (sorted keys) and the model version.

    >>> point_hash({"op": "all_reduce", "bytes": 1e9}, model_version="0.1.0")[:12]
    '50f11e308edf'
    """
    text = json.dumps({"params": dict(params), "model": model_version}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _ident(name: str) -> str:
    if not name.replace("_", "").isalnum():
        raise ValueError(f"column: {name!r} is not a plain identifier")
    return f'"{name}"'


class ResultDB:
    """The result table of one sweep.

    Parameters
    ----------
    path : str or Path
        SQLite file (created, with its folder).
    columns : mapping of str to type
        Column name -> ``int``, ``float``, ``str`` or ``bool``; the key column ``point_hash`` is added.

    Raises
    ------
    ValueError
        A column name that is not an identifier, an unsupported type, or a file that is not a database.
    """

    def __init__(self, path: str | Path, columns: Mapping[str, type]) -> None:
        self.path = Path(path)
        self.columns = dict(columns)
        bad = [f"{k}: {t.__name__}" for k, t in self.columns.items() if t not in _SQL_TYPES]
        if bad:
            raise ValueError(f"columns: unsupported type {bad[0]}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(self.path, timeout=30.0)
        try:
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            cols = ", ".join(f"{_ident(k)} {_SQL_TYPES[t]}" for k, t in self.columns.items())
            self.conn.execute(f"CREATE TABLE IF NOT EXISTS results (point_hash TEXT PRIMARY KEY, {cols})")
            self._add_missing_columns()
            self.conn.commit()
        except sqlite3.DatabaseError as err:
            self.conn.close()
            raise ValueError(f"--db: {str(self.path)!r} is not a sweep database: {err}") from err
        self._insert = (
            f"INSERT OR IGNORE INTO results (point_hash, {', '.join(map(_ident, self.columns))}) "
            f"VALUES (?, {', '.join('?' for _ in self.columns)})"
        )

    def _add_missing_columns(self) -> None:
        """Add the declared columns a store made by another sweep or release lacks (a train section's
        columns in a store of collectives): its rows keep NULL there, new rows fill them. A column the
        store already has keeps the store's type (a ratio stored as text by an older release stays text),
        so that one column never mixes text and numbers."""
        have = {row[1]: row[2] for row in self.conn.execute("PRAGMA table_info(results)")}
        for k, t in self.columns.items():
            if k not in have:
                self.conn.execute(f"ALTER TABLE results ADD COLUMN {_ident(k)} {_SQL_TYPES[t]}")
            elif have[k] == "TEXT" and t is not str:
                self.columns[k] = str

    def done(self) -> set[str]:
        """Hashes of the points already stored."""
        return {h for (h,) in self.conn.execute("SELECT point_hash FROM results")}

    def add(self, rows: Iterable[tuple[str, Mapping[str, Any]]]) -> int:
        """Store ``(hash, row)`` pairs in one transaction (INSERT OR IGNORE); returns the rows added.

        Raises
        ------
        OSError
            SQLite could not write the file (e.g. a full disk), with the store's path as its filename.
        """
        values = [(h, *(_cell(row.get(k), t) for k, t in self.columns.items())) for h, row in rows]
        try:
            with self.conn:
                before = self.conn.total_changes
                self.conn.executemany(self._insert, values)
                return self.conn.total_changes - before
        except sqlite3.OperationalError as err:  # "database or disk is full", "disk I/O error"
            raise OSError(0, str(err), str(self.path)) from err

    def count(self) -> int:
        """Rows stored."""
        return int(self.conn.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    def count_errors(self) -> int:
        """Rows stored with an error (a variant that could not be built, a layout that does not fit)."""
        sql = "SELECT COUNT(*) FROM results WHERE error IS NOT NULL AND error != ''"
        return int(self.conn.execute(sql).fetchone()[0])

    def to_pandas(self, only: Collection[str] | None = None) -> pd.DataFrame:
        """Every row (those whose hash is in ``only``, where given), ordered by hash, with the declared column
        types."""
        import pandas as pd  # lazy: the CLI imports this module

        frame = pd.read_sql_query("SELECT * FROM results ORDER BY point_hash", self.conn)
        if only is not None:
            frame = frame[frame["point_hash"].isin(only)].reset_index(drop=True)
        ints = {k: "Int64" for k, t in self.columns.items() if t in (int, bool)}  # nullable: a failed point
        return frame.astype(ints)

    def to_parquet(self, path: str | Path, only: Collection[str] | None = None) -> Path:
        """Write every row (those of ``only``, where given) to a Parquet file (pyarrow), column types kept."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pandas(self.to_pandas(only), preserve_index=False), p)
        return p

    def to_csv(self, path: str | Path, only: Collection[str] | None = None) -> Path:
        """Write every row (those of ``only``, where given) to a CSV file (one header line, SI units as
        stored)."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        self.to_pandas(only).to_csv(p, index=False)
        return p

    def close(self) -> None:
        """Close the connection (everything committed is on disk)."""
        self.conn.close()


def _cell(value: Any, kind: type) -> Any:
    if value is None or value == "":
        return "" if kind is str else None
    if isinstance(value, (list, tuple)):
        if len(value) == 1 and kind in (int, float):  # a one-number list in a numeric column: the number
            return kind(value[0])
        return ",".join(map(str, value))
    return kind(value)
