"""Output paths for plots: checked before any work is done, folders created when written."""

from __future__ import annotations

import functools
import os
import stat
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from aifabric.inputs import printable_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "PLOT_FORMATS",
    "check_distinct_paths",
    "check_output_path",
    "check_plot_path",
    "make_parent",
    "save_figure",
]

#: File formats plots can be written in (by extension).
PLOT_FORMATS: tuple[str, ...] = ("png", "pdf", "svg")


def check_plot_path(path: str | Path, option: str = "--plot") -> Path:
    """Check that a plot can be written to ``path``, before any work is done.

    Missing parent folders are not an error: the plotting functions create them (:func:`make_parent`).

    Parameters
    ----------
    path : str or Path
        The file to write: ``.png``, ``.pdf`` or ``.svg`` (:data:`PLOT_FORMATS`).
    option : str
        The option named in messages.

    Returns
    -------
    Path

    Raises
    ------
    ValueError
        If ``path`` has no or another extension, or cannot be written (see :func:`check_output_path`); the
        message names ``option``.

    Examples
    --------
    >>> check_plot_path("out/step.txt")
    Traceback (most recent call last):
    ...
    ValueError: --plot: 'out/step.txt' has extension .txt; supported formats: png, pdf, svg (e.g. step.png)
    """
    p = Path(path)
    if _is_dir(p) or str(path).endswith(("/", "\\")):
        raise ValueError(
            f"{option}: {str(path)!r} is a directory; give a file name such as {str(p / 'step.png')!r}"
        )
    ext = p.suffix.lower().lstrip(".")
    if ext not in PLOT_FORMATS:
        what = f"extension .{ext}" if ext else "no extension"
        raise ValueError(
            f"{option}: {str(path)!r} has {what}; supported formats: {', '.join(PLOT_FORMATS)} (e.g. "
            "step.png)"
        )
    return check_output_path(p, option)


def check_output_path(path: str | Path, option: str) -> Path:
    """Check that an output file can be written at ``path``, before any work is done.

    The file may exist (it is then replaced or appended to) if it is a regular file we may write; else the
    nearest existing folder above it must be a folder we may write in (missing folders are created when
    the file is written, :func:`make_parent`).

    Parameters
    ----------
    path : str or Path
        The file to write.
    option : str
        The option named in messages (``--output``, ``--plot``...).

    Returns
    -------
    Path

    Raises
    ------
    ValueError
        Naming ``option`` and ``path``: a folder, a device or pipe (``/dev/full``, a FIFO), a path below a
        file, a name too long for the file system, a file or folder we may not write, a missing drive.

    Examples
    --------
    >>> check_output_path("/dev/null", "--out")
    Traceback (most recent call last):
    ...
    ValueError: --out: cannot write '/dev/null': not a regular file (a device, pipe or socket)
    """
    p = Path(path)
    where = f"{option}: cannot write {_show(path)}"
    if str(path).endswith(("/", "\\")):
        raise ValueError(f"{option}: {_show(path)} is a directory; give a file name")
    try:
        info = p.stat() if p.exists() else None
        if info is not None:
            if stat.S_ISDIR(info.st_mode):
                raise ValueError(f"{option}: {_show(path)} is a directory; give a file name")
            if not stat.S_ISREG(info.st_mode):
                raise ValueError(f"{where}: not a regular file (a device, pipe or socket)")
            _probe(lambda: p.open("ab").close(), f"{where}: the file is not writable")
            return p
        for parent in p.absolute().parents:
            if parent.exists():
                if not parent.is_dir():
                    raise ValueError(f"{where}: {_show(parent)} is a file, not a folder")
                _probe(
                    functools.partial(_make_temporary, parent),
                    f"{where}: cannot create a file in {_show(parent)}",
                )
                break
        _check_name_lengths(p)
    except OSError as err:  # ENAMETOOLONG, ELOOP, EACCES from stat itself
        raise ValueError(f"{where}: {err.strerror or err}") from err
    return p


def check_distinct_paths(paths: Mapping[str, str | Path | None]) -> None:
    """Raise ValueError when two of ``paths`` (option or role -> file, None for one not given) are one file.

    Inputs come first and outputs after them, so the message names the output that would be written over
    a file the command reads or writes already (a calibration profile over the log it was fitted to, an
    export over the store it exports): "--output: 'h100.log' is also the file of the log; give each its
    own path". Checked before any work, as :func:`check_output_path`.

    Examples
    --------
    >>> check_distinct_paths({"the log": "a.log", "--output": "a.log"})
    Traceback (most recent call last):
    ...
    ValueError: --output: 'a.log' is also the file of the log; give each its own path
    """
    seen: dict[Path, str] = {}
    for option, path in paths.items():
        if path is None:
            continue
        key = _resolved(Path(path))
        if key in seen:
            raise ValueError(
                f"{option}: {_show(path)} is also the file of {seen[key]}; give each its own path"
            )
        seen[key] = option


def _resolved(p: Path) -> Path:
    """``p`` with its links followed, or as given past a link loop (reading or writing it says so)."""
    try:
        return p.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a link loop before Python 3.13
        return p.absolute()


def _probe(attempt: Callable[[], None], message: str) -> None:
    """Run ``attempt`` (open the file for appending, or make a nameless temporary file in the folder): the
    only check that holds for every user (root included) and file system (read-only mounts, ``/proc``)."""
    try:
        attempt()
    except OSError as err:
        raise ValueError(f"{message}: {err.strerror or err}") from err


def _make_temporary(folder: Path) -> None:
    tempfile.TemporaryFile(dir=folder).close()  # nameless on Linux (O_TMPFILE); removed at once elsewhere


def _show(path: str | Path) -> str:
    """``path`` quoted, its middle elided past 120 characters (a 4,000-character path must not fill it)."""
    text = str(path)
    return repr(text) if len(text) <= 120 else repr(text[:60] + "..." + text[-50:])


def _is_dir(p: Path) -> bool:
    try:
        return p.is_dir()
    except OSError:  # a name too long: check_output_path says so
        return False


def _check_name_lengths(p: Path) -> None:
    """Raise ``OSError(ENAMETOOLONG)`` if a component of ``p`` or ``p`` itself is longer than the OS allows
    (``stat`` reports this only for components that exist)."""
    folder = next((q for q in p.absolute().parents if q.exists()), Path("/"))
    name_max = _pathconf(folder, "PC_NAME_MAX", 255)
    path_max = _pathconf(folder, "PC_PATH_MAX", 4096)
    too_long = len(os.fsencode(p.absolute())) >= path_max or any(
        len(os.fsencode(part)) > name_max for part in p.parts
    )
    if too_long:
        raise OSError(36, "File name too long")  # ENAMETOOLONG


def _pathconf(folder: Path, name: str, default: int) -> int:
    try:
        return os.pathconf(folder, name)
    except (OSError, ValueError, AttributeError):  # not on this OS or file system
        return default


def make_parent(p: Path, option: str) -> None:
    """Create ``p``'s parent folders; a failure is a ValueError naming ``option``."""
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValueError(f"{option}: cannot create the folder {str(p.parent)!r}: {err.strerror}") from err


def save_figure(fig: Figure, p: Path, option: str, dpi: int) -> None:
    """Write ``fig`` to ``p`` at ``dpi`` dots per inch, creating its folders, and close it (written or not).

    Raises
    ------
    ValueError
        Naming ``option``, when the folder cannot be created or the file cannot be written.
    """
    import matplotlib.pyplot as plt  # lazy: plotting stays out of the CLI's start-up

    try:
        make_parent(p, option)
        printable_figure(fig).savefig(p, dpi=dpi)
    except OSError as err:
        raise ValueError(f"{option}: cannot write {str(p)!r}: {err.strerror}") from err
    finally:
        plt.close(fig)
