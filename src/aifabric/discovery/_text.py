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


#: Longest line the discovery readers accept, characters (1 MiB). NCCL's longest lines, the ring orders of
#: ``NCCL_DEBUG=INFO`` ("Channel 00/32 : 0 1 2 ...") are about 6 characters per rank: 100 kB at 16k ranks.
#: Every regex of the readers runs on one line, so this bounds what any one match can cost.
MAX_LINE_CHARS = 1 << 20


def split_lines(text: str, source: str | None) -> list[str]:
    """``text`` split at newlines; a ``ParseError`` names the first line over :data:`MAX_LINE_CHARS`."""
    lines = text.split("\n")
    if len(text) > MAX_LINE_CHARS:
        for index, line in enumerate(lines):
            if len(line) > MAX_LINE_CHARS:
                raise ParseError(
                    f"line of {len(line):,} characters, above the limit of {MAX_LINE_CHARS:,}",
                    line=index + 1,
                    source=source,
                )
    return lines


def line_count(text: str) -> int:
    """Lines in ``text``, a last line without a newline included."""
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _utf8(data: bytes, source: str | None, message: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise ParseError(f"{message} ({err.reason})", line=line, source=source) from err
