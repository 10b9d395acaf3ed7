"""Output paths for plots: checked before any work is done, folders created when written."""

from __future__ import annotations

from pathlib import Path

__all__ = ["PLOT_FORMATS", "check_plot_path", "make_parent"]

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
        If ``path`` is a directory, has no or another extension, or lies under an existing file; the message
        names ``option``.

    Examples
    --------
    >>> check_plot_path("out/step.txt")
    Traceback (most recent call last):
    ...
    ValueError: --plot: 'out/step.txt' has extension .txt; supported formats: png, pdf, svg (e.g. step.png)
    """
    p = Path(path)
    if p.is_dir() or str(path).endswith(("/", "\\")):
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
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(
                    f"{option}: cannot write {str(path)!r}: {str(parent)!r} is a file, not a folder"
                )
            break
    return p


def make_parent(p: Path, option: str) -> None:
    """Create ``p``'s parent folders; a failure is a ValueError naming ``option``."""
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValueError(f"{option}: cannot create the folder {str(p.parent)!r}: {err.strerror}") from err
