"""Read the ``nvidia-smi topo -m`` matrix: which devices of one node talk over NVLink or PCIe.

The format, as printed by the NVIDIA driver (tab-separated; often pasted with spaces)::

            GPU0    GPU1    NIC0    CPU Affinity    NUMA Affinity   GPU NUMA ID
    GPU0     X      NV18    PIX     0-55,112-167    0               N/A
    GPU1    NV18     X      NODE    0-55,112-167    0               N/A
    NIC0    PIX     NODE     X

    Legend:
      X    = Self
      SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes
      ...
    NIC Legend:
      NIC0: mlx5_0

A header row names the devices (``GPU<i>``, then ``NIC<i>``; drivers before the NIC legend existed name
the NICs ``mlx5_<i>`` directly), then up to three per-GPU columns: ``CPU Affinity`` (a Linux cpulist),
``NUMA Affinity`` and ``GPU NUMA ID`` (older drivers print fewer). Each device has one row with one cell
per device column. A cell is the path type between the two devices, from closest to farthest:

======  ======================================================================
code    meaning (driver legend, paraphrased)
======  ======================================================================
X       the device itself
NV#     a bonded set of # NVLinks (NV18: H100/H200/B200 SXM via NVSwitch)
PIX     at most one PCIe bridge (the same PCIe switch)
PXB     several PCIe bridges, no host bridge
PHB     through a PCIe host bridge (the CPU root complex)
NODE    through the interconnect between host bridges of one NUMA node
SYS     through the SMP interconnect between NUMA nodes (QPI/UPI/xGMI)
======  ======================================================================

Drivers before ``NODE`` existed printed ``SOC`` ("the SMP link between CPU sockets") for ``SYS``.

``nvidia-smi topo -mp`` (``--matrix_pci``) prints the same matrix with PCIe paths only: GPUs joined by NVLink
show their PCIe path (``NODE``, ``SYS``...). When the paste shows that command above the matrix,
:attr:`TopoMatrix.pci_only` is set and :attr:`TopoMatrix.missing` says NVLink is not shown, so no reader
concludes from it that the GPUs have none. ``nvidia-smi topo -p2p`` prints a GPU-by-GPU matrix of
peer-access status codes (``OK``, ``CNS``, ``GNS``, ``TNS``, ``NS``, ``DR``, ``U``): it is refused in one
line, as it holds no paths (``nvidia-smi topo --help``, driver legend).

:meth:`TopoMatrix.from_text` finds the matrix inside a larger text (commentary before it, the legends after
it), keeps every cell as printed and normalises the older codes only where it ranks paths.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from aifabric.discovery._text import clean_lines, decode, split_lines
from aifabric.errors import ParseError

__all__ = [
    "AFFINITY_CUT",
    "AFFINITY_ROW_CUT",
    "PATH_ORDER",
    "PCI_ONLY",
    "TopoMatrix",
    "normalize_path_code",
    "parse_cpulist",
    "refuse_headerless_rows",
    "refuse_rocm_smi",
]

#: PCIe/SMP path types from closest to farthest (nvidia-smi legend order); NVLink (``NV#``) is closer still.
PATH_ORDER: tuple[str, ...] = ("PIX", "PXB", "PHB", "NODE", "SYS")

# Codes printed by older drivers (before NODE existed), mapped to today's names: SOC was "the SMP link
# between CPU sockets". They are kept as printed in TopoMatrix.links and normalised only for ranking.
_LEGACY_CODES = {"SOC": "SYS"}
_NVLINK = re.compile(r"^NV(\d{1,4})$")
#: The banner of ``rocm-smi --showtopo`` (AMD), whose GPU-by-GPU tables look like a matrix header.
_ROCM_SMI = "ROCm System Management Interface"
#: ``nvidia-smi topo -p2p`` cell codes (its legend: Status Ok, Chipset/GPU/Topology not supported, Not
#: supported, Disabled by regkey, Unknown); none is a ``topo -m`` path code.
_P2P_STATUS = frozenset({"OK", "CNS", "GNS", "TNS", "NS", "DR", "U"})
#: An ``nvidia-smi topo`` command line in a paste; group 1 is the matrix option.
_TOPO_COMMAND = re.compile(r"nvidia-smi\s+topo\s+(-mp|--matrix_pci|-m|--matrix|-p2p)\b")
#: What :attr:`TopoMatrix.missing` says about a ``topo -mp`` matrix.
PCI_ONLY = "NVLink not shown: nvidia-smi topo -mp prints PCIe paths only (run nvidia-smi topo -m for NVLink)"
_CODE = r"X|NV\d{1,4}|PIX|PXB|PHB|NODE|SYS|SOC"
#: Two cells a paste glued together (``PIXNODE``: the tab between them lost; a published B200 matrix).
_GLUED = re.compile(rf"^({_CODE})({_CODE})$")
_DEVICE = re.compile(r"^[A-Za-z][\w.:-]*\d$")
#: Two device labels of the header a paste glued together (``NIC8NIC9``: the tab between them lost, as in a
#: published H100 matrix whose rows glue ``NODENODE`` too).
_GLUED_LABELS = re.compile(r"^((?:GPU|NIC|mlx5_)\d+)((?:GPU|NIC|mlx5_)\d+)$")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_TRAILING_COLUMNS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_NIC_LEGEND = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
#: A matrix row's device name (``GPU5``, ``NIC0``, ``mlx5_0`` in old releases).
_ROW_NAME = re.compile(r"(?:GPU|NIC|mlx\d_)\d{1,4}")
#: Upper bound on CPU (or NUMA node) ids a cpulist may name; guards against absurd ranges in bad input.
_MAX_CPU_ID = 1 << 16
#: Most physical lines one matrix line may have been wrapped onto (a terminal 40 columns wide wraps the
#: header of an 8-GPU, 8-NIC matrix onto 6).
_MAX_WRAPS = 16
#: The most GPUs one node's matrix may show: NCCL's limit on nodes of one type in a node's topology,
#: ``NCCL_TOPO_MAX_NODES`` = 256 (NVIDIA/nccl ``src/graph/topo.h``, 2.18-2.2x releases).
MAX_MATRIX_GPUS = 256
#: What :attr:`TopoMatrix.missing` says when the affinity columns were cut.
AFFINITY_CUT = "affinity columns cut: CPU/NUMA affinity unknown"
#: What it says of the last row when the copy stops inside its affinity values (printed, but cut).
AFFINITY_ROW_CUT = "row {} cut in its affinity columns: its CPU/NUMA affinity unknown"


def normalize_path_code(code: str) -> str:
    """Return today's name of a ``nvidia-smi topo -m`` cell code.

    ``SOC`` (older drivers: "the SMP link between CPU sockets") becomes ``SYS``; every other code,
    ``NV#`` included, is returned unchanged.

    Parameters
    ----------
    code : str
        A cell as printed, e.g. ``"SOC"``, ``"NV12"``, ``"PIX"``.

    Returns
    -------
    str
        The normalised code.

    Examples
    --------
    >>> normalize_path_code("SOC"), normalize_path_code("NV18")
    ('SYS', 'NV18')
    """
    return _LEGACY_CODES.get(code, code)


def _is_known_code(code: str) -> bool:
    return code == "X" or bool(_NVLINK.match(code)) or normalize_path_code(code) in PATH_ORDER


def _path_rank(code: str) -> int:
    """Sort key: NVLink first, then PIX < PXB < PHB < NODE < SYS; the device itself (X) last."""
    norm = normalize_path_code(code)
    if _NVLINK.match(norm):
        return 0
    if norm in PATH_ORDER:
        return 1 + PATH_ORDER.index(norm)
    return len(PATH_ORDER) + 1


def parse_cpulist(text: str) -> frozenset[int] | None:
    """Read a Linux cpulist such as ``"0-55,112-167"``; ``"N/A"`` gives None.

    Parameters
    ----------
    text : str
        Comma-separated ids and inclusive ranges, as in ``/sys/devices/system/node/node0/cpulist``.

    Returns
    -------
    frozenset of int or None
        The ids, or None for ``N/A`` (no affinity reported, e.g. in a VM).

    Raises
    ------
    ValueError
        If the list is malformed, a range is reversed, or an id exceeds 65535.

    Examples
    --------
    >>> sorted(parse_cpulist("0-2,8"))
    [0, 1, 2, 8]
    """
    text = text.strip()
    if text.upper() == "N/A":
        return None
    ranges: list[tuple[int, int]] = []
    for part in text.split(","):
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", part.strip())
        if not match:
            raise ValueError(f"malformed cpulist {text!r}")
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) is not None else low
        if high < low or high > _MAX_CPU_ID:
            raise ValueError(f"implausible range {part!r} in cpulist {text!r}")
        ranges.append((low, high))
    # Merged before they are expanded: a list repeating "0-65535" costs its length, not 65,536 ids per entry.
    ids: list[int] = []
    covered = -1
    for low, high in sorted(ranges):
        ids.extend(range(max(low, covered + 1), high + 1))
        covered = max(covered, high)
    return frozenset(ids)


@dataclass(frozen=True)
class TopoMatrix:
    """The device matrix of one node, as printed by ``nvidia-smi topo -m``.

    Build it with :meth:`from_text`. Device names are the labels of the matrix (``GPU0``, ``NIC3``,
    or ``mlx5_0`` on older drivers).

    Attributes
    ----------
    gpus : tuple of str
        GPU labels in matrix order (``GPU0``, ``GPU1``, ...).
    nics : tuple of str
        NIC labels in matrix order (``NIC0``, ... or ``mlx5_0``, ... on older drivers).
    links : dict
        ``(a, b) -> code`` for every ordered pair of devices, the diagonal (``"X"``) included; codes as
        printed (``NV18``, ``PIX``, ``SOC``...).
    cpu_affinity : dict
        GPU label -> CPU ids local to it, or None (``N/A`` or no ``CPU Affinity`` column).
    numa_affinity : dict
        GPU label -> NUMA node ids local to it, or None (``N/A`` or no ``NUMA Affinity`` column).
    gpu_numa_id : dict
        GPU label -> NUMA node of the GPU's own memory (Grace systems), or None (``N/A`` or no column).
    nic_names : dict
        NIC label -> device name from the ``NIC Legend`` (``NIC0 -> mlx5_0``); empty without a legend.
    line : int
        1-based line of the header row in the input.
    source : str or None
        File name or description of the input.
    missing : tuple of str
        What a partial matrix lacks, one sentence each (empty for a whole matrix).
    cut_gpus : tuple of str
        GPUs of the header whose rows were cut (the matrix stops after a GPU row): not in :attr:`gpus`.
    cut_gpu_links : dict
        ``(a, b) -> code`` for the GPU pairs with a cut GPU on one side whose cell the text holds (the read
        rows' cells under a cut GPU's column, a cut row's own GPU cells), both ways; not in :attr:`links`.
    pci_only : bool
        True when the paste shows ``nvidia-smi topo -mp`` above the matrix: PCIe paths only, NVLink not
        shown (:data:`PCI_ONLY` is then in :attr:`missing`).

    References
    ----------
    .. [1] NVIDIA, ``nvidia-smi topo -m`` legend (printed below the matrix; NVIDIA System Management
       Interface documentation, ``nvidia-smi topo --help``).
    """

    gpus: tuple[str, ...]
    nics: tuple[str, ...]
    links: dict[tuple[str, str], str] = field(hash=False)
    cpu_affinity: dict[str, frozenset[int] | None] = field(hash=False)
    numa_affinity: dict[str, frozenset[int] | None] = field(hash=False)
    gpu_numa_id: dict[str, int | None] = field(hash=False)
    nic_names: dict[str, str] = field(hash=False)
    line: int = 1
    source: str | None = None
    missing: tuple[str, ...] = ()
    cut_gpus: tuple[str, ...] = ()
    pci_only: bool = False
    cut_gpu_links: dict[tuple[str, str], str] = field(default_factory=dict, hash=False)

    # -- construction -----------------------------------------------------------------------------------

    @classmethod
    def from_text(cls, text: str | bytes, source: str | None = None) -> TopoMatrix:
        """Parse the first ``nvidia-smi topo -m`` matrix found in ``text``.

        The header is the first line whose first token is ``GPU0`` followed by other device names or
        ``CPU Affinity``; lines before it are ignored. Columns may be separated by tabs or spaces, and
        ANSI escape sequences (the driver underlines the header on a terminal) are removed, then each line's
        leading timestamp and launcher tag (as a job log prints them: :func:`~aifabric.discovery._text.
        clean_line`, the same as ``nccl-tests compare``).

        Parameters
        ----------
        text : str or bytes
            The output of ``nvidia-smi topo -m``, possibly inside a larger file. Bytes are decoded as
            UTF-8.
        source : str, optional
            File name or description, used in error messages.

        Returns
        -------
        TopoMatrix

        A partial matrix is read for what it holds, and :attr:`missing` says what is not there: GPU rows cut
        (the matrix stops after a GPU row, or inside the last one with nothing after it: the GPUs read are
        kept, the others listed in :attr:`cut_gpus`), NIC rows cut after the GPU rows (the GPU rows already
        give every GPU-NIC path), columns cut at the right (a
        header or rows cut at a fixed width: the NICs whose column no GPU row reaches are dropped) and the
        affinity columns cut. Lines wrapped by a terminal are joined: a line that does not start with a
        device label continues the row above it (the header continues until the first row).

        Raises
        ------
        ParseError
            If no matrix is found, no GPU row is read, a row has fewer cells than there are GPUs or an
            extra cell, a cell code is not one the driver prints, the diagonal is not ``X``, the two cells
            of a pair differ, or an affinity value is malformed. The error names the 1-based line.

        References
        ----------
        .. [1] NVIDIA, ``nvidia-smi topo -m`` legend (printed below every matrix).

        Examples
        --------
        >>> m = TopoMatrix.from_text(
        ...     "\\tGPU0\\tGPU1\\tNIC0\\tCPU Affinity\\tNUMA Affinity\\tGPU NUMA ID\\n"
        ...     "GPU0\\t X \\tNV18\\tPIX\\t0-55\\t0\\t\\tN/A\\n"
        ...     "GPU1\\tNV18\\t X \\tNODE\\t0-55\\t0\\t\\tN/A\\n"
        ...     "NIC0\\tPIX\\tNODE\\t X \\n")
        >>> m.nvlink_pairs(), m.nearest_nics("GPU1"), m.numa_nodes()
        ([('GPU0', 'GPU1', 18)], [('NIC0', 'NODE')], {0})
        """
        lines = split_lines(decode(text, source), source)
        return _parse_first_matrix(clean_lines([_ANSI.sub("", raw).rstrip("\r") for raw in lines]), source)

    # -- queries ----------------------------------------------------------------------------------------

    @property
    def affinity_cut(self) -> bool:
        """Whether affinity columns were printed but cut (all of them, or the last row's): affinity unknown
        because the copy stops, not because the machine reports none."""
        cut_row = AFFINITY_ROW_CUT.partition("{}")[2]
        return AFFINITY_CUT in self.missing or any(m.endswith(cut_row) for m in self.missing)

    @property
    def devices(self) -> tuple[str, ...]:
        """All device labels in matrix order: the GPUs, then the NICs."""
        return self.gpus + self.nics

    def link(self, a: str, b: str) -> str:
        """Return the cell between devices ``a`` and ``b`` as printed (``"NV18"``, ``"PIX"``, ``"SOC"``...).

        Raises
        ------
        KeyError
            If either label is not a device of the matrix.
        """
        return self.links[(a, b)]

    def path_type(self, a: str, b: str) -> str:
        """Return the cell between ``a`` and ``b`` with older codes normalised (``SOC`` -> ``SYS``)."""
        return normalize_path_code(self.link(a, b))

    def nvlink_pairs(self) -> list[tuple[str, str, int]]:
        """GPU pairs joined by NVLink, as ``(gpu_a, gpu_b, n_links)`` with ``gpu_a`` before ``gpu_b``.

        ``n_links`` is the ``#`` of the ``NV#`` cell: the number of bonded NVLinks between the two GPUs
        (through NVSwitch on SXM systems, where every pair shows the GPU's full link count).
        """
        pairs: list[tuple[str, str, int]] = []
        for i, a in enumerate(self.gpus):
            for b in self.gpus[i + 1 :]:
                match = _NVLINK.match(self.links[(a, b)])
                if match:
                    pairs.append((a, b, int(match.group(1))))
        return pairs

    def nearest_nics(self, gpu: str) -> list[tuple[str, str]]:
        """Every NIC with its path code from ``gpu``, closest first (PIX < PXB < PHB < NODE < SYS).

        Ties keep matrix order. Codes are returned as printed; older codes rank as their modern names.

        Raises
        ------
        KeyError
            If ``gpu`` is not a GPU of the matrix.
        """
        if gpu not in self.gpus:
            raise KeyError(f"{gpu!r} is not a GPU of this matrix (GPUs: {', '.join(self.gpus)})")
        order = {nic: i for i, nic in enumerate(self.nics)}
        ranked = sorted(self.nics, key=lambda nic: (_path_rank(self.links[(gpu, nic)]), order[nic]))
        return [(nic, self.links[(gpu, nic)]) for nic in ranked]

    def numa_nodes(self) -> set[int]:
        """NUMA nodes named in the ``NUMA Affinity`` column (empty if absent or all ``N/A``)."""
        nodes: set[int] = set()
        for value in self.numa_affinity.values():
            if value is not None:
                nodes |= value
        return nodes

    def nic_name(self, nic: str) -> str:
        """The device name of a NIC label from the NIC Legend (``NIC0 -> mlx5_0``), else the label."""
        return self.nic_names.get(nic, nic)


# -- parsing helpers ----------------------------------------------------------------------------------------


def _parse_first_matrix(lines: list[str], source: str | None) -> TopoMatrix:
    """The first matrix of the cleaned ``lines`` whose header parses.

    Raises
    ------
    ParseError
        The first header's error if no header parses, or "no matrix found" if no line looks like one.
    """
    first_error: ParseError | None = None
    for header_index in _header_candidates(lines):
        header, last = _unwrap_header(lines, header_index)
        try:
            devices, trailing, cut = _parse_header(header, header_index + 1, source)
        except ParseError as err:  # a sentence that starts with "GPU0 GPU1": keep looking
            first_error = first_error or err
            continue
        if cut:
            trailing, cut = _short_column_name(header, lines, last, devices, trailing)
        matrix = _parse_body(lines, header_index, last, devices, trailing, cut, source)
        # a matrix with NV# cells is topo -m output whatever command the paste shows above it
        pci = _command_above(lines, header_index) in ("-mp", "--matrix_pci") and not matrix.nvlink_pairs()
        return _pci_only(matrix) if pci else matrix
    refuse_rocm_smi(lines, source)
    if first_error is not None:
        raise first_error
    refuse_headerless_rows(lines, source)
    raise ParseError(
        "no nvidia-smi topo -m matrix found (expected a header line starting with GPU0)", source=source
    )


def refuse_headerless_rows(lines: list[str], source: str | None) -> None:
    """Raise the one-line refusal of matrix rows pasted without the header line that names their columns.

    Raises
    ------
    ParseError
        Naming the first row and its 1-based line, when a line is a matrix row (:func:`_headerless_row`).
    """
    row = next((i for i, line in enumerate(lines) if _headerless_row(line)), None)
    if row is not None:  # the paste starts at a row: the device names above it were not copied
        raise ParseError(
            f"the matrix starts at row {lines[row].split()[0]} without its header line (device names GPU0 "
            "GPU1 ... NIC0 ...): copy the line above it too",
            line=row + 1,
            source=source,
        )


def _headerless_row(line: str) -> bool:
    """A matrix row (``GPU5  NV18 ... X ...``): a device name, then cells, its own ``X`` among them."""
    cells = line.split()
    return len(cells) > 2 and _ROW_NAME.fullmatch(cells[0]) is not None and "X" in cells[1:]


def refuse_rocm_smi(lines: list[str], source: str | None) -> None:
    """Raise the one-line refusal of ``rocm-smi`` output (its banner) if ``lines`` hold one.

    Raises
    ------
    ParseError
        Naming the banner's 1-based line, when there is one.
    """
    at = next((i for i, line in enumerate(lines) if _ROCM_SMI in line), None)
    if at is not None:
        raise ParseError(
            "this is rocm-smi output (AMD GPUs: weights, hops, link types or NUMA nodes), not nvidia-smi "
            "topo -m; inspect reads nvidia-smi topo -m or an NCCL topology XML",
            line=at + 1,
            source=source,
        )


def _command_above(lines: list[str], header_index: int) -> str | None:
    """The option of the last ``nvidia-smi topo`` command line above the header (``-m``, ``-mp``...)."""
    for line in reversed(lines[:header_index]):
        match = _TOPO_COMMAND.search(line)
        if match:
            return match.group(1)
    return None


def _pci_only(matrix: TopoMatrix) -> TopoMatrix:
    """``matrix`` marked as ``topo -mp`` output: NVLink not shown."""
    return replace(matrix, pci_only=True, missing=(*matrix.missing, PCI_ONLY))


def _unknown_code(code: str, device: str, lineno: int, source: str | None) -> ParseError:
    """The error for a cell code ``topo -m`` never prints; a ``topo -p2p`` status code says which output it
    is instead."""
    if code in _P2P_STATUS:
        return ParseError(
            f"this is nvidia-smi topo -p2p output (peer-access status such as {code!r}), not topo -m: it has "
            "no PCIe paths, NVLink counts or NICs; inspect reads nvidia-smi topo -m or an NCCL topology XML",
            line=lineno,
            source=source,
        )
    return ParseError(f"unknown path code {code!r} in row {device}", line=lineno, source=source)


def _header_candidates(lines: list[str]) -> list[int]:
    """Indices of lines that look like a matrix header: ``GPU0`` then device names or ``CPU Affinity``."""
    found = []
    for i, line in enumerate(lines):
        tokens = line.split()
        if (
            tokens
            and tokens[0] == "GPU0"
            and (len(tokens) == 1 or _DEVICE.match(tokens[1]) or tokens[1] == "CPU")
        ):
            found.append(i)
    return found


def _unwrap_header(lines: list[str], header_index: int) -> tuple[str, int]:
    """The header line with the lines a terminal wrapped it onto joined back (up to the first row), and the
    index of its last physical line."""
    header, last = lines[header_index], header_index
    while (
        last + 1 < len(lines)
        and last - header_index < _MAX_WRAPS
        and lines[last + 1].strip()
        and not _is_row(lines[last + 1])
        and not _NIC_LEGEND.match(lines[last + 1])
    ):
        last += 1
        header += lines[last]
    return header, last


def _is_row(line: str) -> bool:
    """Whether ``line`` starts a matrix row: a device label, then a path code (``GPU1  NV18 ...``)."""
    tokens = line.split()
    return len(tokens) > 1 and bool(_DEVICE.match(tokens[0])) and _is_known_code(tokens[1])


def _cut_label(tokens: list[str], labels: set[str], after: list[str]) -> bool:
    """Whether a matrix line is the start of a row label cut where the copy stops: one token that begins a
    device name (``NIC``, ``GPU1``) but is none, with nothing after it (the last line, or a blank next)."""
    last = not after or not after[0].strip()
    return last and len(tokens) == 1 and tokens[0] not in labels and _is_cut_name(tokens[0])


def _is_cut_name(token: str) -> bool:
    """Whether ``token`` is the start of a device label or column name cut at the right (``NIC``, ``CP``)."""
    return any(name.startswith(token) for name in ("GPU", "NIC", "mlx5_", *_TRAILING_COLUMNS)) or bool(
        re.fullmatch(r"(?:GPU|NIC|mlx5_)\d*", token)
    )


def _parse_header(line: str, lineno: int, source: str | None) -> tuple[list[str], list[str], bool]:
    """Devices, trailing column names, and whether the header was cut at the right."""
    tokens = _unglued_labels(line.split())
    n = 0
    while n < len(tokens) and _DEVICE.match(tokens[n]):
        n += 1
    devices, rest = tokens[:n], tokens[n:]
    if len(set(devices)) != len(devices):
        raise ParseError("a device appears twice in the matrix header", line=lineno, source=source)
    if not any(d.startswith("GPU") for d in devices):
        raise ParseError("the matrix header names no GPU", line=lineno, source=source)
    trailing: list[str] = []
    at = 0  # the trailing column names are matched token by token: linear in the line
    while at < len(rest):
        for name in _TRAILING_COLUMNS:
            words = name.split()
            if rest[at : at + len(words)] == words:
                if name in trailing:
                    raise ParseError(
                        "a column appears twice in the matrix header", line=lineno, source=source
                    )
                trailing.append(name)
                at += len(words)
                break
        else:
            tail = " ".join(rest[at:])
            if len(rest) - at <= 2 and any(c.startswith(tail) for c in _TRAILING_COLUMNS):
                return devices, trailing, True  # "CPU Aff", "NUMA": the line was cut there
            if at == len(rest) - 1 and _is_cut_name(rest[at]):
                return devices, trailing, True  # "NIC": a device label cut before its number
            raise ParseError(f"unknown column {rest[at]!r} in the matrix header", line=lineno, source=source)
    return devices, trailing, False


def _short_column_name(
    header: str, lines: list[str], header_last: int, devices: list[str], trailing: list[str]
) -> tuple[list[str], bool]:
    """The trailing columns and whether the header is cut, for a header that ends in the first whole words
    of one more column's name (``CPU Affinity  NUMA``: a page that shortened ``NUMA Affinity``, or a copy
    that stops after that word).

    The rows decide: where every GPU row holds one value per column with that column counted, the values
    under the word are that column's whole (nvidia-smi prints each row's values under their header word),
    so it is read as the column it begins; otherwise the header stays cut and the affinity is unknown.
    """
    words = header.split()
    for name in _TRAILING_COLUMNS:
        head = name.split()
        shown = next((k for k in range(len(head) - 1, 0, -1) if words[-k:] == head[:k]), 0)
        if not shown or name in trailing:
            continue
        width = 1 + len(devices) + len(trailing) + 1
        rows, _ = _logical_rows(lines, header_last + 1, devices, width)
        gpu_rows = [text.split() for _, text in rows if _is_gpu(text.split()[0])]
        if gpu_rows and all(len(_unglued(tokens)) == width for tokens in gpu_rows):
            return [*trailing, name], False
    return trailing, True


def _unglued_labels(tokens: list[str]) -> list[str]:
    """``tokens`` with each pair of device labels a paste glued together split apart (``NIC8NIC9`` ->
    ``NIC8``, ``NIC9``); a label ends at its digits, so the split is unique.

    >>> _unglued_labels(["GPU7", "NIC8NIC9", "NIC10"])
    ['GPU7', 'NIC8', 'NIC9', 'NIC10']
    """
    out: list[str] = []
    for token in tokens:
        glued = _GLUED_LABELS.match(token)
        out.extend(glued.groups() if glued else (token,))
    return out


def _logical_rows(
    lines: list[str], first: int, devices: list[str], width: int
) -> tuple[list[tuple[int, str]], int]:
    """The matrix rows from line index ``first``: ``(1-based line, text)`` with wrapped lines joined, and the
    index of the first line after the matrix.

    A row ends at a blank line or at a line that starts with a device label; a line that starts otherwise
    continues the row above while that row is short of ``width`` tokens or the line after it starts a row.
    """
    labels = set(devices)
    rows: list[tuple[int, str]] = []
    index = first
    while index < len(lines) and lines[index].strip():
        tokens = lines[index].split()
        if _cut_label(tokens, labels, lines[index + 1 : index + 2]):
            break  # the copy stops in the next row's label ("NIC" of NIC6): that row and those after are cut
        if tokens[0] in labels or not rows:
            rows.append((index + 1, lines[index]))
        else:
            lineno, text = rows[-1]
            follows = index + 1 < len(lines) and lines[index + 1].split()[:1] != []
            next_is_row = follows and lines[index + 1].split()[0] in labels
            if len(text.split()) >= width and not next_is_row or index + 1 - lineno > _MAX_WRAPS:
                break
            rows[-1] = (lineno, text + lines[index])
        index += 1
    return rows, index


def _parse_body(
    lines: list[str],
    header_index: int,
    header_last: int,
    devices: list[str],
    trailing: list[str],
    header_cut: bool,
    source: str | None,
) -> TopoMatrix:
    """Read the rows under a parsed header (``lines[header_index:header_last + 1]``) into a matrix.

    What a partial matrix keeps and the errors raised are those of :meth:`TopoMatrix.from_text`.
    """
    all_gpus, nics = _split_devices(devices, header_index + 1, source)
    rows, end = _logical_rows(lines, header_last + 1, devices, 1 + len(devices) + len(trailing))
    _check_next_row(lines, end, devices, source)
    ends = not any(line.strip() for line in lines[end:])  # nothing follows the matrix: the copy stops in it
    by_device = _rows_by_device(_without_cut_nic_row(rows, nics, len(devices), ends), devices, nics, source)
    gpus, cut_gpus = _present_gpus(all_gpus, by_device, len(devices), lines[end:], header_last, source)
    reached = _reached_columns(gpus, len(all_gpus), by_device, devices, source)
    missing, partial = _missing_parts(
        gpus, cut_gpus, nics, by_device, devices, trailing, reached=reached, header_cut=header_cut
    )
    unread = _last_row_cut_in_affinity(gpus, by_device, len(devices) + len(trailing), ends and not partial)
    if unread:
        missing.append(AFFINITY_ROW_CUT.format(unread))
    kept = devices[:reached]
    links, cpu_affinity, numa_affinity, gpu_numa_id = _read_rows(
        kept, gpus, cut_gpus, by_device, devices, trailing, partial=partial, unread=unread, source=source
    )
    kept_nics = kept[len(all_gpus) :]
    _check_symmetric(links, by_device, source)
    _mirror_cut_nic_rows(links, kept_nics, gpus)
    cut_links = _cut_gpu_links(links, all_gpus, cut_gpus, by_device, source)
    if cut_gpus:
        links = {
            pair: code for pair, code in links.items() if pair[0] not in cut_gpus and pair[1] not in cut_gpus
        }
    return TopoMatrix(
        gpus=tuple(gpus),
        nics=tuple(kept_nics),
        links=links,
        cpu_affinity=cpu_affinity,
        numa_affinity=numa_affinity,
        gpu_numa_id=gpu_numa_id,
        nic_names=_nic_legend(lines[end:], set(kept_nics)),
        line=header_index + 1,
        source=source,
        missing=tuple(missing),
        cut_gpus=tuple(cut_gpus),
        cut_gpu_links=cut_links,
    )


def _cut_gpu_links(
    links: dict[tuple[str, str], str],
    all_gpus: list[str],
    cut_gpus: list[str],
    by_device: dict[str, tuple[int, list[str]]],
    source: str | None,
) -> dict[tuple[str, str], str]:
    """The GPU-to-GPU cells with a cut GPU on one side that the text holds, both ways: the read rows' cells
    under the cut GPUs' columns, and a cut row's own GPU cells where the copy reached all of them (it stops
    in the row's NIC columns). Each pair is one path, printed in both rows (the ``nvidia-smi topo -m``
    matrix is symmetric).

    Raises
    ------
    ParseError
        If a cut row's GPU cell is not a code the driver prints or ``X`` is off its diagonal.
    """
    cut = set(cut_gpus)
    gpus = set(all_gpus)
    out = {(a, b): code for (a, b), code in links.items() if (a in cut or b in cut) and {a, b} <= gpus}
    for gpu in cut_gpus:
        lineno, tokens = by_device.get(gpu, (0, []))
        if _cells_in(tokens, len(all_gpus)) == len(all_gpus):
            for pair, code in _row_cells(gpu, tokens[: len(all_gpus)], all_gpus, lineno, source).items():
                out.setdefault(pair, code)
    for (a, b), code in list(out.items()):
        out.setdefault((b, a), code)
    return {(a, b): code for (a, b), code in out.items() if a != b}


def _split_devices(devices: list[str], lineno: int, source: str | None) -> tuple[list[str], list[str]]:
    """The GPU and NIC labels of the header, in order.

    Raises
    ------
    ParseError
        If a GPU column follows a NIC column, the header names no GPU, or more than
        :data:`MAX_MATRIX_GPUS`.
    """
    gpus = [d for d in devices if _is_gpu(d)]
    nics = [d for d in devices if not _is_gpu(d)]
    if len(gpus) > MAX_MATRIX_GPUS:
        raise ParseError(
            f"the matrix header names {len(gpus):,} GPUs; one node's matrix holds at most {MAX_MATRIX_GPUS} "
            "(NCCL_TOPO_MAX_NODES)",
            line=lineno,
            source=source,
        )
    if devices != gpus + nics:
        raise ParseError("GPU columns must come before NIC columns", line=lineno, source=source)
    if not gpus:
        raise ParseError("the matrix header names no GPU", line=lineno, source=source)
    return gpus, nics


def _check_next_row(lines: list[str], end: int, devices: list[str], source: str | None) -> None:
    """Refuse a GPU row just after the matrix that the header does not name (the header was cut)."""
    after = lines[end].split()[:1] if end < len(lines) else []
    if after and _is_gpu(after[0]) and after[0] not in devices:
        raise ParseError(
            f"row {after[0]} is not a device of the header (was the header cut?)", line=end + 1, source=source
        )


def _without_cut_nic_row(
    rows: list[tuple[int, str]], nics: list[str], n_devices: int, input_ends: bool
) -> list[tuple[int, str]]:
    """``rows`` without its last row when the copy stopped inside it: a NIC row, the input's last line
    (blank lines after it, as a saved file's last newline leaves, are nothing), with fewer cells than the
    header's devices. It is then read as a cut NIC row (GPU-NIC paths from the
    GPU rows), as when the copy stops at a line's end."""
    if not (input_ends and rows):
        return rows
    tokens = _unglued(rows[-1][1].split())
    if tokens[0] in nics and len(tokens) - 1 < n_devices:
        return rows[:-1]
    return rows


def _rows_by_device(
    rows: list[tuple[int, str]], devices: list[str], nics: list[str], source: str | None
) -> dict[str, tuple[int, list[str]]]:
    """Device label -> ``(1-based line, tokens after the label)``, rows in header order.

    Reading stops quietly where the NIC rows were cut (a line that names no device follows).

    Raises
    ------
    ParseError
        If a row is out of header order or names another device.
    """
    by_device: dict[str, tuple[int, list[str]]] = {}
    for at, (lineno, text) in enumerate(rows):
        tokens = _unglued(text.split())
        expected = devices[at] if at < len(devices) else None
        if tokens[0] != expected:
            if expected in nics and tokens[0] not in devices:
                break  # the NIC rows were cut: what follows is not the matrix
            raise ParseError(
                f"expected the row of {expected or 'no more devices'}, found {tokens[0]!r}",
                line=lineno,
                source=source,
            )
        by_device[tokens[0]] = (lineno, tokens[1:])
    return by_device


def _unglued(tokens: list[str]) -> list[str]:
    """``tokens`` with each pair of cell codes a paste glued together split apart (``PIXNODE`` -> ``PIX``,
    ``NODE``). The split is unique: every code starts with a letter and ``NV#`` ends at its digits.

    >>> _unglued(["GPU5", "NV18", "PIXNODE", "0-191"])
    ['GPU5', 'NV18', 'PIX', 'NODE', '0-191']
    """
    out: list[str] = []
    for token in tokens:
        glued = _GLUED.match(token)
        out.extend(glued.groups() if glued else (token,))
    return out


def _reached_columns(
    gpus: list[str],
    n_header_gpus: int,
    by_device: dict[str, tuple[int, list[str]]],
    devices: list[str],
    source: str | None,
) -> int:
    """How many device columns every GPU row reaches: columns cut at the right (never fewer than the GPUs).

    A row with values after fewer cells than devices lost a cell inside: that is an error, not a cut.

    Raises
    ------
    ParseError
        If a row has an unknown code among its cells, fewer cells than the header's GPUs, or fewer cells
        than the other rows (one row cut, not the paste's width).
    """
    for device in gpus:
        lineno, tokens = by_device[device]
        cells = _cells_in(tokens, len(devices))
        if cells < len(devices) and len(tokens) >= len(devices):
            raise _unknown_code(tokens[cells], device, lineno, source)
        if cells < n_header_gpus or (cells < len(devices) and len(tokens) > cells):
            raise ParseError(
                f"row {device} has {cells} cells, the header has {len(devices)} devices",
                line=lineno,
                source=source,
            )
    reach = {g: _cells_in(by_device[g][1], len(devices)) for g in gpus}
    reached = min(reach.values())
    if reached < len(devices) and max(reach.values()) != reached:  # one row cut, not the paste's width
        device = min(gpus, key=lambda g: reach[g])
        raise ParseError(
            f"row {device} has {reached} cells, the header has {len(devices)} devices",
            line=by_device[device][0],
            source=source,
        )
    return reached


def _missing_parts(
    gpus: list[str],
    cut_gpus: list[str],
    nics: list[str],
    by_device: dict[str, tuple[int, list[str]]],
    devices: list[str],
    trailing: list[str],
    *,
    reached: int,
    header_cut: bool,
) -> tuple[list[str], bool]:
    """What a partial matrix lacks (one sentence each, :attr:`TopoMatrix.missing`), and whether its
    affinity columns are unreadable (``partial``)."""
    n_header_gpus = len(devices) - len(nics)
    missing = []
    if cut_gpus:
        missing.append(
            f"rows {', '.join(cut_gpus)} cut (the matrix stops after {gpus[-1]}): those GPUs are not scored; "
            f"the node is scored on the {len(gpus)} GPUs read"
        )
    if reached < len(devices):
        missing.append(f"columns {', '.join(devices[reached:])} cut: those NICs are not scored")
    cut_rows = [d for d in nics[: max(0, reached - n_header_gpus)] if d not in by_device]
    if cut_rows:
        missing.append(
            f"rows {', '.join(cut_rows)} cut: GPU-NIC paths read from the GPU rows, NIC-to-NIC paths unknown"
        )
    partial = reached < len(devices) or header_cut
    short = any(len(by_device[g][1]) < len(devices) + len(trailing) for g in gpus[:-1]) or (
        len(by_device[gpus[-1]][1]) < len(devices) + len(trailing) and list(by_device)[-1] != gpus[-1]
    )
    if (partial or short) and (trailing or header_cut) or (cut_rows and not trailing):
        missing.append(AFFINITY_CUT)
        partial = True
    return missing, partial


def _last_row_cut_in_affinity(
    gpus: list[str], by_device: dict[str, tuple[int, list[str]]], width: int, stops_here: bool
) -> str | None:
    """The last GPU row when the copy stops inside its affinity values (``stops_here``: nothing follows the
    matrix and its columns are whole; the row is the last one read and short of ``width`` tokens): its
    values may be cut, so none is read; the rows above keep theirs."""
    last = gpus[-1]
    if stops_here and list(by_device)[-1] == last and len(by_device[last][1]) < width:
        return last
    return None


def _read_rows(
    kept: list[str],
    gpus: list[str],
    cut_gpus: list[str],
    by_device: dict[str, tuple[int, list[str]]],
    devices: list[str],
    trailing: list[str],
    *,
    partial: bool,
    unread: str | None = None,
    source: str | None,
) -> tuple[
    dict[tuple[str, str], str],
    dict[str, frozenset[int] | None],
    dict[str, frozenset[int] | None],
    dict[str, int | None],
]:
    """The cells of the rows read over the ``kept`` columns, and each GPU's CPU affinity, NUMA affinity and
    GPU NUMA ID (all None when ``partial``; those of the ``unread`` row None)."""
    links: dict[tuple[str, str], str] = {}
    cpu_affinity: dict[str, frozenset[int] | None] = {}
    numa_affinity: dict[str, frozenset[int] | None] = {}
    gpu_numa_id: dict[str, int | None] = {}
    for device in kept:
        if device not in by_device or device in cut_gpus:
            continue
        lineno, tokens = by_device[device]
        links.update(_row_cells(device, tokens[: len(kept)], kept, lineno, source))
        extra = tokens[len(devices) :]
        if device in gpus:
            unknown = partial or device == unread
            values = {} if unknown else _trailing_values(extra, trailing, device, lineno, source)
            cpu_affinity[device] = _cpus(values.get("CPU Affinity"), lineno, source)
            numa_affinity[device] = _cpus(values.get("NUMA Affinity"), lineno, source)
            gpu_numa_id[device] = _numa_id(values.get("GPU NUMA ID"), lineno, source)
        elif not partial and extra and len(extra) != len(trailing):
            raise ParseError(
                f"row {device} has {len(extra)} values after its {len(devices)} cells, expected 0 or "
                f"{len(trailing)}",
                line=lineno,
                source=source,
            )
    return links, cpu_affinity, numa_affinity, gpu_numa_id


def _row_cells(
    device: str, given: list[str], kept: list[str], lineno: int, source: str | None
) -> dict[tuple[str, str], str]:
    """``(device, other) -> code`` for the cells ``given`` of one row under the ``kept`` columns.

    Raises
    ------
    ParseError
        If the row has fewer cells than columns, a code is not one the driver prints, or ``X`` is off the
        diagonal (or missing from it).
    """
    if len(given) < len(kept):
        raise ParseError(
            f"row {device} has {len(given)} cells, the header has {len(kept)} devices",
            line=lineno,
            source=source,
        )
    links: dict[tuple[str, str], str] = {}
    for other, code in zip(kept, given, strict=True):
        if not _is_known_code(code):
            raise _unknown_code(code, device, lineno, source)
        if (code == "X") != (other == device):
            raise ParseError(
                f"row {device}, column {other}: {code!r} ('X' marks the diagonal only)",
                line=lineno,
                source=source,
            )
        links[(device, other)] = code
    return links


def _mirror_cut_nic_rows(links: dict[tuple[str, str], str], nics: list[str], gpus: list[str]) -> None:
    """Fill in the rows of NICs that were cut: their GPU cells mirror the GPU rows, their diagonal is X."""
    for nic in nics:
        for g in gpus:
            links.setdefault((nic, g), links[(g, nic)])
        links.setdefault((nic, nic), "X")


def _check_symmetric(
    links: dict[tuple[str, str], str], by_device: dict[str, tuple[int, list[str]]], source: str | None
) -> None:
    """Refuse a matrix whose two cells of a pair differ: the path between two devices is one path, and
    ``nvidia-smi topo -m`` prints it in both (``SOC`` and ``SYS`` are the same code).

    Raises
    ------
    ParseError
        Naming both cells, at the line of the later row, the earlier row's line in the message.
    """
    for (a, b), code in links.items():
        mirror = links.get((b, a))
        if mirror is not None and normalize_path_code(mirror) != normalize_path_code(code):
            first, second = sorted(((by_device[a][0], a, b, code), (by_device[b][0], b, a, mirror)))
            raise ParseError(
                f"row {second[1]}, column {second[2]}: {second[3]!r}, but row {first[1]}, column {first[2]} "
                f"(line {first[0]}): {first[3]!r}; the matrix is not symmetric (edited or corrupted?)",
                line=second[0],
                source=source,
            )


def _present_gpus(
    gpus: list[str],
    by_device: dict[str, tuple[int, list[str]]],
    n_devices: int,
    after: list[str],
    header_last: int,
    source: str | None,
) -> tuple[list[str], list[str]]:
    """The GPUs whose rows were read, and those cut: the matrix stopped after a GPU row, or in the middle of
    its last row when nothing follows the matrix (that row, short of its ``n_devices`` cells, is cut too).

    Raises
    ------
    ParseError
        If no GPU row is read (there is nothing to score).
    """
    present = [g for g in gpus if g in by_device]
    last = present[-1] if present else None
    if (
        last is not None
        and list(by_device)[-1] == last
        and len(present) > 1
        and not any(line.strip() for line in after)
        and _cells_in(by_device[last][1], n_devices) < _cells_in(by_device[present[0]][1], n_devices)
    ):
        present.pop()  # the copy stopped inside this row
    if not present:
        raise ParseError(
            f"matrix ends before the row of {gpus[0]} (0 of {len(gpus)} GPU rows read)",
            line=min(header_last + 2, header_last + 1 + len(after)),
            source=source,
        )
    return present, gpus[len(present) :]


def _cells_in(tokens: list[str], n: int) -> int:
    """How many of the first ``n`` tokens of a row are path codes (a row cut at the right has fewer)."""
    count = 0
    for token in tokens[:n]:
        if not _is_known_code(token):
            break
        count += 1
    return count


def _is_gpu(device: str) -> bool:
    return re.fullmatch(r"GPU\d+", device) is not None


def _trailing_values(
    extra: list[str], trailing: list[str], device: str, lineno: int, source: str | None
) -> dict[str, str]:
    if len(extra) != len(trailing):
        raise ParseError(
            f"row {device} has {len(extra)} values for the {len(trailing)} columns "
            f"{', '.join(trailing) or '(none)'}",
            line=lineno,
            source=source,
        )
    return dict(zip(trailing, extra, strict=True))


def _cpus(value: str | None, lineno: int, source: str | None) -> frozenset[int] | None:
    if value is None:
        return None
    try:
        return parse_cpulist(value)
    except ValueError as err:
        raise ParseError(str(err), line=lineno, source=source) from err


def _numa_id(value: str | None, lineno: int, source: str | None) -> int | None:
    if value is None or value.upper() == "N/A":
        return None
    if not value.isdigit() or int(value) > _MAX_CPU_ID:
        raise ParseError(f"GPU NUMA ID {value!r} is not a node number or N/A", line=lineno, source=source)
    return int(value)


def _nic_legend(lines: list[str], nics: set[str]) -> dict[str, str]:
    names: dict[str, str] = {}
    for line in lines:
        match = _NIC_LEGEND.match(line)
        if match and match.group(1) in nics and match.group(1) not in names:
            names[match.group(1)] = match.group(2)
        if line.lstrip().startswith("GPU0") and names:
            break  # the legend of a second matrix, if any, is not ours
    return names
