"""Files read at the edge: size-checked before reading, YAML with limits, text made safe to print.

Every file aifabric reads from a user (cluster, sweep, calibration and model YAML; ``nvidia-smi topo -m``
text; NCCL topology XML; nccl-tests logs) enters through :func:`read_input_bytes`, which refuses a file
that is not a regular file (``/dev/zero``, a FIFO: reading them never ends) or larger than
:data:`MAX_INPUT_BYTES` (:data:`MAX_YAML_BYTES` for YAML) before reading a byte. YAML goes through
:func:`load_yaml`, a ``SafeLoader`` that
also refuses what ``yaml.safe_load`` lets through and the rest of the code cannot survive:

- aliases that refer to their own anchor (``&a [*a]``: a cyclic value that recursion never leaves);
- "billion laughs": aliases that expand to more than :data:`MAX_YAML_NODES` nodes, or more than
  :data:`MAX_YAML_ALIASES` alias uses;
- nesting deeper than :data:`MAX_YAML_DEPTH` (PyYAML's composer recurses once per level);
- a mapping or a list used as a mapping key (``? [a]: 1``), a key given twice, ``.nan`` and ``.inf``.

Each refusal is a :class:`~aifabric.errors.ParseError` naming the file and the line. The limits are far
above any real description (a cluster file is 4 levels deep, with no aliases) and far below what
exhausts memory or the stack.

The package's own data (the catalogue, presets) is not user input and is read by
:func:`aifabric.package_data.load_package_yaml` instead, without these limits and much faster.
"""

from __future__ import annotations

import codecs
import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BeforeValidator
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.events import AliasEvent, CollectionStartEvent, ScalarEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.reader import ReaderError

from aifabric.errors import ConfigError, ParseError

__all__ = [
    "MAX_INPUT_BYTES",
    "MAX_INPUT_BYTES_ENV",
    "MAX_YAML_ALIASES",
    "MAX_YAML_BYTES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "decode_text",
    "load_json",
    "load_yaml",
    "load_yaml_mapping",
    "load_yaml_mapping_text",
    "load_yaml_text",
    "max_input_bytes",
    "printable",
    "read_input_bytes",
    "read_input_text",
    "read_yaml_text",
]

#: Largest input file read, bytes (64 MiB). The biggest real input, an nccl-tests log of a long sweep with
#: NCCL_DEBUG=INFO on 1,000 ranks, is a few MiB; a file past this limit is refused before it is read.
MAX_INPUT_BYTES = 64 * 2**20
#: Environment variable that overrides :data:`MAX_INPUT_BYTES` (a positive integer, bytes).
MAX_INPUT_BYTES_ENV = "AIFABRIC_MAX_INPUT_BYTES"
#: Largest YAML file read, bytes (1 MiB): 16 x the largest shipped one (``nccl_releases.yaml``, 63 kB).
#: PyYAML's pure-Python loader reads about 0.25 MB/s, so this bounds a YAML file to a few seconds.
#: ``$AIFABRIC_MAX_INPUT_BYTES``, if set, is the limit of every input, YAML included.
MAX_YAML_BYTES = 2**20
#: Deepest YAML nesting accepted (a cluster file is 4 levels deep).
MAX_YAML_DEPTH = 64
#: Most alias uses (``*name``) in one YAML file.
MAX_YAML_ALIASES = 1_000
#: Most nodes a YAML file may expand to once every alias is replaced by its value.
MAX_YAML_NODES = 100_000

# C0 controls but tab and newline, DEL, C1 controls (0x9b is the one-byte CSI): what a terminal would act on
# instead of print (ESC starts colour, cursor and window-title sequences).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def max_input_bytes(default: int = MAX_INPUT_BYTES) -> int:
    """The input size limit in bytes: ``$AIFABRIC_MAX_INPUT_BYTES`` if set, else ``default``
    (:data:`MAX_INPUT_BYTES`; :data:`MAX_YAML_BYTES` for YAML).

    Raises
    ------
    ConfigError
        If the environment variable is set but is not a positive integer.
    """
    raw = os.environ.get(MAX_INPUT_BYTES_ENV)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"{MAX_INPUT_BYTES_ENV}: expected a positive number of bytes, got {raw!r}")
    return value


def read_input_bytes(path: str | Path, *, limit: int | None = None) -> bytes:
    """The bytes of an input file, refused before reading if it is not a regular file or too large.

    Parameters
    ----------
    path : str or Path
        The file.
    limit : int, optional
        Largest size accepted, bytes; default :func:`max_input_bytes`.

    Returns
    -------
    bytes

    Raises
    ------
    ConfigError
        If the file cannot be opened, is a folder or a device, or is larger than ``limit`` (the message
        gives both sizes and the variable that raises the limit).
    """
    p = Path(path)
    limit = max_input_bytes() if limit is None else limit
    try:
        _check_regular(p, os.stat(p), limit)  # before opening: opening a FIFO waits for a writer
        with p.open("rb") as fh:
            _check_regular(p, os.fstat(fh.fileno()), limit)  # the file it opened, if it was swapped
            data = fh.read(limit + 1)  # the file may grow while it is read
    except OSError as err:
        raise ConfigError(f"file {str(p)!r}: {err.strerror or err}") from err
    if len(data) > limit:
        raise ConfigError(_too_large(p, len(data), limit))
    return data


def _check_regular(p: Path, info: os.stat_result, limit: int) -> None:
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file (a device, pipe or socket)"
        raise ConfigError(f"file {str(p)!r}: {kind}; expected a text file")
    if info.st_size > limit:
        raise ConfigError(_too_large(p, info.st_size, limit))


def _too_large(p: Path, size: int, limit: int) -> str:
    return (
        f"file {str(p)!r}: {size:,} bytes, above the input limit of {limit:,} bytes "
        f"(set {MAX_INPUT_BYTES_ENV} to raise it)"
    )


#: Byte-order marks and the encodings they name, longest first: a BOM leaves no doubt, so a file that starts
#: with one is read in its encoding (Windows PowerShell 5.1's ``>`` writes UTF-16LE with FF FE and CRLF,
#: Microsoft Learn, about_Character_Encoding; Notepad's "UTF-8 with BOM" writes EF BB BF). UTF-32 is not
#: listed: its LE mark begins with UTF-16LE's, and no shell writes it by default.
_BOMS: tuple[tuple[bytes, str, str], ...] = (
    (codecs.BOM_UTF8, "utf-8", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16LE"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16BE"),
)


def decode_text(data: bytes, source: str | None, message: str = "not UTF-8 text") -> str:
    """``data`` as text: in the encoding its byte-order mark names (the mark dropped), else UTF-8.

    Raises
    ------
    ParseError
        If the bytes do not decode: ``message`` (or "not UTF-16LE text" and the like after a BOM), the
        reason and the byte, at the line of the first bad byte.

    Examples
    --------
    >>> decode_text(b"\\xff\\xfe" + "a\\r\\nb".encode("utf-16-le"), None)
    'a\\r\\nb'
    >>> decode_text(b"\\xef\\xbb\\xbfnodes: 4", None)
    'nodes: 4'
    """
    bom, encoding, name = next(((b, e, n) for b, e, n in _BOMS if data.startswith(b)), (b"", "utf-8", ""))
    body = data[len(bom) :]
    try:
        return body.decode(encoding)
    except UnicodeDecodeError as err:
        line = body[: err.start].decode(encoding, errors="replace").count("\n") + 1
        what = f"not {name} text after its byte-order mark" if name else message
        raise ParseError(
            f"{what} ({err.reason} at byte {err.start + len(bom)})", line=line, source=source
        ) from err


def read_input_text(path: str | Path, *, limit: int | None = None) -> str:
    """An input file as text: UTF-8, or the encoding its byte-order mark names (:func:`decode_text`; see
    :func:`read_input_bytes`).

    Raises
    ------
    ConfigError
        As :func:`read_input_bytes`.
    ParseError
        If the file does not decode (with the line of the first bad byte) or holds a NUL byte (binary).
    """
    text = decode_text(read_input_bytes(path, limit=limit), str(path))
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise ParseError(f"a NUL byte at offset {nul}: a binary file, not text", line=line, source=str(path))
    return text


def printable(text: object) -> str:
    """``text`` with every control character shown as ``\\xNN`` (ESC as ``\\x1b``), tabs and newlines kept.

    The one helper for every output edge: names read from input files (clusters, nodes, GPUs, collectives
    in logs) go through it before they reach a terminal, an HTML report or a figure, so an ESC in a file
    cannot move the cursor, recolour or retitle the terminal, and what the file held stays visible.

    >>> printable("gpu\\x1b[31mred\\x07")
    'gpu\\\\x1b[31mred\\\\x07'
    """
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def printable_figure(fig: Any) -> Any:
    """A matplotlib figure with every text in it passed through :func:`printable`, returned for saving.

    Called right before a figure is written (SVG for a report, PNG for ``--plot``): titles, labels,
    legends and fixed tick labels (a cluster or log name with an ESC would otherwise reach the file raw,
    and matplotlib warns "Glyph 27 missing" on stderr). Duck-typed, so this module does not import
    matplotlib.
    """
    for artist in fig.findobj(lambda a: callable(getattr(a, "set_text", None))):
        text = artist.get_text()
        if isinstance(text, str) and _CONTROL.search(text):
            artist.set_text(printable(text))
    for ax in fig.get_axes():
        for axis in (ax.xaxis, ax.yaxis):
            fmt = axis.get_major_formatter()
            if isinstance(getattr(fmt, "seq", None), list):  # FixedFormatter: labels given as strings
                fmt.seq = [printable(t) for t in fmt.seq]
    return fig


def whole_number(value: Any) -> Any:
    """``value`` unless it is a YAML boolean or a float: ValueError ``expected an integer, got true``.

    Pydantic's lax mode reads ``true`` as 1 and ``2.0`` as 2, so ``nodes: true`` would build a one-node
    cluster; a count in a file is written as an integer. Other values (an int, a digit string) go on to
    pydantic's own integer check.
    """
    if isinstance(value, bool):
        raise ValueError(f"expected an integer, got {str(value).lower()}")
    if isinstance(value, float):
        raise ValueError(f"expected an integer, got {value!r}")
    return value


def got_suffix(message: str, got: Any) -> str:
    """`` (got VALUE)`` to append to a validation ``message``, or "" when the message already shows the value
    (as Python writes it, or a boolean as YAML does: ``got true``)."""
    said = repr(got) in message or (isinstance(got, bool) and f"got {str(got).lower()}" in message)
    return "" if said else f" (got {got!r})"


#: An integer field of a file (cluster spec, catalogue part): booleans, floats refused (:func:`whole_number`).
Int = Annotated[int, BeforeValidator(whole_number)]


# -- YAML ----------------------------------------------------------------------------------------------------


class _LimitedLoader(yaml.SafeLoader):
    """A ``SafeLoader`` that counts depth, alias uses and expanded nodes while it composes the node graph,
    and refuses non-scalar keys, duplicate keys and non-finite floats while it constructs values."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0
        self._open: set[str] = set()  # anchors whose node is still being composed
        self._sizes: dict[int, int] = {}  # id(node) -> nodes once every alias is expanded

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        event: Any = self.peek_event()
        if isinstance(event, AliasEvent):
            mark: Any = event.start_mark
            self._aliases += 1
            if self._aliases > MAX_YAML_ALIASES:
                raise ComposerError(None, None, f"more than {MAX_YAML_ALIASES} aliases", mark)
            if event.anchor in self._open:
                raise ComposerError(
                    None,
                    None,
                    f"alias *{event.anchor} refers to its own anchor (a cyclic value)",
                    mark,
                )
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_YAML_DEPTH:
            raise ComposerError(None, None, f"nesting deeper than {MAX_YAML_DEPTH} levels", event.start_mark)
        anchor = event.anchor if isinstance(event, ScalarEvent | CollectionStartEvent) else None
        if anchor is not None:
            self._open.add(anchor)
        node = super().compose_node(parent, index)
        self._open.discard(anchor or "")
        if node is None:  # pragma: no cover - PyYAML returns a node for every event it composes
            return None
        self._depth -= 1
        self._sizes[id(node)] = size = 1 + sum(self._sizes.get(id(child), 1) for child in _children(node))
        if size > MAX_YAML_NODES:
            raise ComposerError(
                None,
                None,
                f"the document expands to more than {MAX_YAML_NODES:,} values (each alias counted in full)",
                _mark(node),
            )
        if isinstance(node, MappingNode):
            for key, _ in node.value:
                if not isinstance(key, ScalarNode):
                    kind = "a mapping" if isinstance(key, MappingNode) else "a list"
                    raise ComposerError(
                        None, None, f"{kind} used as a mapping key; keys must be plain values", _mark(key)
                    )
        return node

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:  # ``<<: *base``: its keys may be overridden here
                continue
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise ConstructorError(None, None, f"key {key!r} appears twice", key_node.start_mark)
            seen.add(key)
            if isinstance(value_node, ScalarNode) and value_node.tag in (_FLOAT, _INT):
                try:
                    self.construct_object(value_node)
                except ConstructorError as err:
                    raise ConstructorError(None, None, f"{key}: {err.problem}", err.problem_mark) from err
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_float(self, node: ScalarNode) -> float:
        value: float = super().construct_yaml_float(node)
        if not math.isfinite(value):
            raise ConstructorError(None, None, f"{node.value!r} is not a finite number", node.start_mark)
        return value

    def construct_yaml_int(self, node: ScalarNode) -> int:
        try:
            return super().construct_yaml_int(node)
        except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
            raise ConstructorError(
                None, None, f"an integer of {len(node.value):,} digits is too long", node.start_mark
            ) from None


_FLOAT = "tag:yaml.org,2002:float"
_INT = "tag:yaml.org,2002:int"
_MERGE = "tag:yaml.org,2002:merge"
_LimitedLoader.add_constructor(_FLOAT, _LimitedLoader.construct_yaml_float)
_LimitedLoader.add_constructor(_INT, _LimitedLoader.construct_yaml_int)


def _mark(node: Node) -> Any:
    """Where ``node`` starts (typed ``Any``: the C and pure-Python ``Mark`` classes differ)."""
    return node.start_mark


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def read_yaml_text(path: str | Path) -> str:
    """A YAML file as text, at most :data:`MAX_YAML_BYTES` (see :func:`read_input_text`)."""
    return read_input_text(path, limit=max_input_bytes(MAX_YAML_BYTES))


def load_json(path: str | Path) -> Any:
    """A JSON file (a Hugging Face ``config.json``) read with this module's limits.

    At most :data:`MAX_YAML_BYTES` (configuration files share the YAML limit); ``NaN`` and ``Infinity``,
    which Python's ``json`` accepts and JSON does not, are refused, as is nesting deeper than Python's
    recursion limit.

    Raises
    ------
    ConfigError
        If the file cannot be read or is too large (:func:`read_input_bytes`).
    ParseError
        If it is not UTF-8 or not JSON, naming the file and the line.
    """
    text = read_yaml_text(path)
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as err:
        raise ParseError(f"invalid JSON: {err.msg}", line=err.lineno, source=str(path)) from err
    except ValueError as err:  # a constant refused below, or an integer too long to convert
        raise ParseError(f"invalid JSON: {err}", source=str(path)) from err
    except RecursionError as err:
        raise ParseError("invalid JSON: nesting too deep", source=str(path)) from err


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a finite number")


def load_yaml(path: str | Path) -> Any:
    """Read a YAML file with the limits of this module; returns what ``yaml.safe_load`` would.

    Raises
    ------
    ConfigError
        If the file cannot be read or is too large (:func:`read_input_bytes`).
    ParseError
        If it is not UTF-8, is empty, is not YAML, or breaks a limit; the message names the file and line.
    """
    return load_yaml_text(read_yaml_text(path), str(path))


def load_yaml_text(text: str, source: str) -> Any:
    """YAML ``text`` read with the limits of this module (see :func:`load_yaml`); errors name ``source``."""
    if not text.strip():
        raise ParseError("the file is empty; expected a YAML mapping", line=1, source=source)
    loader = None
    try:
        loader = _LimitedLoader(text)  # its reader refuses control characters here
        return loader.get_single_data()
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        if isinstance(err, ReaderError):  # a control character: no mark, a position
            line = text.count("\n", 0, err.position) + 1
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ParseError(f"malformed YAML: {printable(problem)}", line=line, source=source) from err
    except RecursionError as err:  # pragma: no cover - the depth limit comes first
        raise ParseError(f"nesting too deep (limit {MAX_YAML_DEPTH})", source=source) from err
    finally:
        if loader is not None:
            loader.dispose()


def load_yaml_mapping(path: str | Path) -> dict[str, Any]:
    """Read a YAML file that must hold a mapping (see :func:`load_yaml`).

    Raises
    ------
    ConfigError, ParseError
        As :func:`load_yaml`; a ParseError (line 1) if the top level is not a mapping.
    """
    return load_yaml_mapping_text(read_yaml_text(path), str(path))


def load_yaml_mapping_text(text: str, source: str) -> dict[str, Any]:
    """YAML ``text`` that must hold a mapping (see :func:`load_yaml_mapping`); errors name ``source``."""
    data = load_yaml_text(text, source)
    if not isinstance(data, dict):
        raise ParseError(
            f"expected a YAML mapping at the top level, got a {type(data).__name__}", line=1, source=source
        )
    return data
