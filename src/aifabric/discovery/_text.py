"""Text input shared by the discovery readers (nccl-tests logs, NCCL topology XML, ``nvidia-smi topo -m``)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from aifabric.errors import ParseError
from aifabric.inputs import decode_text, read_input_text


def decode(text: str | bytes, source: str | None) -> str:
    """``text`` as ``str``: bytes decode as UTF-8 or as their byte-order mark says
    (:func:`aifabric.inputs.decode_text`), else a ``ParseError`` names the offending line."""
    if isinstance(text, bytes):
        return decode_text(text, source, "input is not UTF-8 text")
    if not isinstance(text, str):
        raise TypeError(f"text must be str or bytes, got {type(text).__name__}")
    return text


def nonempty_text(text: str | bytes, source: str | None, empty: str) -> str:
    """``text`` as ``str`` (bytes decode as :func:`decode` does); a ``ParseError`` for bytes that do not, or
    ``empty`` (at line 1) for text that is blank."""
    if isinstance(text, bytes):
        text = decode_text(text, source)
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


#: A leading timestamp: ISO 8601 / log4j style, bracketed, or a bare clock time.
_STAMP = re.compile(
    r"^(?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?\s+"
    r"|\[\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?\]\s*"
    r"|\[?\d\d:\d\d:\d\d(?:[.,]\d{1,9})?\]?\s+)"
)
#: A launcher tag: Open MPI ``--tag-output`` (indented too, as a list item's code block quotes it), MPICH
#: ``-prepend-rank``, Slurm ``srun -l``, torchrun, ``kubectl logs --prefix`` (``[pod/<pod>/<container>] ``).
_TAG = re.compile(
    r"^(?:\s*\[\d{1,6},\d{1,6}\]<std(?:out|err)>:|\[\d{1,6}\] |\[default\d{1,6}\]:|\s*\d{1,6}: "
    r"|\[pod/[A-Za-z0-9.-]{1,253}/[A-Za-z0-9.-]{1,63}\] )"
)
#: A host name in front of a line, as ``pdsh`` and ``clush`` print it (``gpu-node-01: ``): a DNS label or name
#: (RFC 1123) followed by a colon and a space.
_HOST = re.compile(r"^([A-Za-z0-9][A-Za-z0-9.-]{0,252}): ")
#: Lines a host name must start before it counts as a launcher prefix: ``pdsh`` prefixes every line a host
#: prints, while a word such as ``NOTE: `` heads a line or two of prose.
HOST_PREFIX_MIN_LINES = 3


#: Prefixes stripped from one line at most (a timestamp, a launcher tag, a host, in any order: ``kubectl logs
#: --prefix --timestamps`` puts the tag before the timestamp, a timestamped job log puts it after).
MAX_PREFIXES = 4


def clean_line(line: str) -> str:
    """``line`` without its leading timestamps and launcher tags, in any order, the forms
    :mod:`aifabric.discovery.paste` lists (Open MPI ``[1,0]<stdout>:``, ``[0] ``, Slurm ``0: ``,
    ``[default0]:``, ``[pod/<pod>/<container>] ``).

    >>> clean_line("[1,0]<stdout>:  4294967296  1073741824  float  sum  -1  15870")
    '  4294967296  1073741824  float  sum  -1  15870'
    >>> clean_line("2024-03-01T10:00:00.123Z 0: # nThread 1 nGpus 8")
    '# nThread 1 nGpus 8'
    >>> clean_line("[pod/x/y] 2026-12-02T05:00:00Z    8    2  float")
    '8    2  float'
    """
    return split_prefix(line, frozenset())[1]


def split_prefix(line: str, hosts: frozenset[str]) -> tuple[str, str]:
    """``line`` as (its stream, its content): the launcher tags and ``hosts`` names in front of it, joined by
    a space (timestamps are not part of the stream: they change every line), and the line without them.

    >>> split_prefix("node001: [1,0]<stdout>: 2024-03-01 10:00:00 # nThread 1", frozenset({"node001"}))
    ('node001 [1,0]<stdout>:', '# nThread 1')
    """
    stream: list[str] = []
    for _ in range(MAX_PREFIXES):
        probe = line.lstrip(" ") if stream else line  # a tag's own space may come before a timestamp
        stamp = _STAMP.match(probe)
        if stamp is not None:
            line = probe[stamp.end() :]
            continue
        tag = _TAG.match(line)
        host = _HOST.match(line)
        if tag is not None:
            stream.append(tag.group(0).strip())
            line = line[tag.end() :]
        elif host is not None and host.group(1) in hosts:
            stream.append(host.group(1))
            line = line[host.end() :]
        else:
            break
    return " ".join(stream), line


def prefixed_lines(lines: list[str]) -> list[tuple[str, str]]:
    """Each of ``lines`` as (its stream, its content) (:func:`split_prefix`), where a ``pdsh``/``clush``
    host prefix (``gpu-node-01: ``, ``10.0.0.1: ``) counts only when that host name starts at least
    :data:`HOST_PREFIX_MIN_LINES` lines.

    A name heading fewer lines (``NOTE: ``, ``CASE: ``) stays: only a name repeated as a launcher repeats it
    is taken for one, so real content is not eaten.
    """
    heads = [_HOST.match(clean_line(line)) for line in lines]
    counts = Counter(match.group(1) for match in heads if match)
    hosts = frozenset(name for name, count in counts.items() if count >= HOST_PREFIX_MIN_LINES)
    return [split_prefix(line, hosts) for line in lines]


def clean_lines(lines: list[str]) -> list[str]:
    """Each of ``lines`` without its prefixes (:func:`prefixed_lines`).

    >>> clean_lines(["n1: # nThread 1", "n1:   8  2  float", "n1: # Avg", "NOTE: kept"])
    ['# nThread 1', '  8  2  float', '# Avg', 'NOTE: kept']
    """
    return [content for _, content in prefixed_lines(lines)]


def demultiplexed(lines: list[str]) -> list[int]:
    """The order to read ``lines`` in so that each launcher stream (kubectl pod, MPI rank, host) is read
    whole: 0-based indices, the streams in the order they first print, each line in its stream's order.

    A line without a prefix continues the stream of the line above it (a terminal-wrapped piece, a line
    printed without a tag). Another pod's or rank's lines printed between the rows of a table then no longer
    split it. Text of one stream (or none) keeps its order.

    >>> demultiplexed(["[0] a", "[1] x", "[0] b", "c", "[1] y"])
    [0, 2, 3, 1, 4]
    """
    streams: dict[str, list[int]] = {}
    current = ""
    for index, (stream, _) in enumerate(prefixed_lines(lines)):
        current = stream or current
        streams.setdefault(current, []).append(index)
    return [index for members in streams.values() for index in members]


def line_count(text: str) -> int:
    """Lines in ``text``, a last line without a newline included."""
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def read_log(path: str | Path) -> tuple[str, str]:
    """Read a text file for the discovery front doors; returns ``(text, source)``.

    The file is refused before it is read if it is not a regular file or is larger than
    :func:`aifabric.inputs.max_input_bytes` (64 MiB unless ``AIFABRIC_MAX_INPUT_BYTES`` says otherwise).

    Raises
    ------
    ParseError
        If the file is empty (line 1) or does not decode (UTF-8, or the encoding its byte-order mark names:
        the line of the first bad byte).
    ConfigError
        If the file cannot be read, is not a regular file or is too large.
    """
    source = str(path)
    text = read_input_text(path)
    if not text.strip():
        raise ParseError(f"the file is empty ({len(text.encode())} bytes)", line=1, source=source)
    return text, source
