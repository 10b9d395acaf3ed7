"""Text input shared by the discovery readers (nccl-tests logs, NCCL topology XML, ``nvidia-smi topo -m``)."""

from __future__ import annotations

from aifabric.errors import ParseError


def decode(text: str | bytes, source: str | None) -> str:
    """``text`` as ``str``: bytes decode as UTF-8, else a ``ParseError`` names the offending line."""
    if isinstance(text, bytes):
        return _utf8(text, source, "input is not UTF-8 text")
    if not isinstance(text, str):
        raise TypeError(f"text must be str or bytes, got {type(text).__name__}")
    return text


def nonempty_text(text: str | bytes, source: str | None, empty: str) -> str:
    """``text`` as ``str`` (bytes decode as UTF-8); a ``ParseError`` for bytes that do not, or ``empty`` (at
    line 1) for text that is blank."""
    if isinstance(text, bytes):
        text = _utf8(text, source, "not UTF-8 text")
    if not text.strip():
        raise ParseError(empty, line=1, source=source)
    return text


def line_count(text: str) -> int:
    """Lines in ``text``, a last line without a newline included."""
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _utf8(data: bytes, source: str | None, message: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise ParseError(f"{message} ({err.reason})", line=line, source=source) from err
