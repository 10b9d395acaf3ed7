"""Read NCCL topology XML: the file NCCL writes with ``NCCL_TOPO_DUMP_FILE`` and reads with
``NCCL_TOPO_FILE``.

The format is a tree written by NCCL's ``src/graph/xml.cc`` and read by ``src/graph/topo.cc``::

    <system version="1">
      <cpu numaid="0" affinity="ffffffff,00000000" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
        <pci busid="0000:16:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">  PCIe switch
          <pci busid="0000:18:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16">  GPU
            <gpu dev="0" sm="90" rank="0" gdr="1">
              <nvlink target="fffffff:ff:ff.0" count="18" tclass="0x068000"/>
            </gpu>
          </pci>
          <pci busid="0000:19:00.0" class="0x020700" ...>                                         NIC
            <nic><net name="mlx5_0" dev="0" speed="400000" port="1" gdr="1" .../></nic>
          </pci>
        </pci>
      </cpu>
    </system>

A ``pci`` element is a GPU (class ``0x03xxxx``, or any ``pci`` holding a ``gpu``), a NIC (``0x02xxxx``:
``0x020000`` Ethernet, ``0x020700`` InfiniBand; or any ``pci`` holding a ``nic``), an NVSwitch or CPU link
target (``0x0680xx``, skipped) or, like NCCL reads any other class, a PCIe switch (``0x0604xx`` bridges).
``net`` speeds are in Mb/s per direction; ``link_speed`` is the PCIe per-lane rate in GT/s. Hand-written files
such as Azure's ``ndv4-topo.xml`` list only CPUs, switches and bare ``pci`` endpoints; NCCL fills in NVLinks
and NIC speeds at run time, so those fields are None here.

:func:`extract_xml_documents` pulls every ``<system>...</system>`` out of a larger text (a case file with
commentary), and :meth:`NcclTopology.from_text` parses one. Document type declarations are refused, so
entity-expansion attacks cannot reach the parser.
"""  # noqa: E501  (a verbatim NCCL topology dump in the example)

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TypedDict
from xml.parsers import expat

from aifabric.discovery._text import decode
from aifabric.errors import ParseError

__all__ = [
    "MAX_XML_DEPTH",
    "MAX_XML_DOCUMENTS",
    "CpuNode",
    "GpuNode",
    "NcclTopology",
    "NetDevice",
    "NicNode",
    "NvLink",
    "PciSwitch",
    "extract_xml_documents",
    "parse_nccl_topologies",
]

_SYSTEM_START = re.compile(r"^[ \t]*<system\b", re.MULTILINE)
#: Longest ``<system ...>`` start tag looked for: a text of unclosed ``<system`` lines stays linear.
_MAX_START_TAG = 512
_SYSTEM_END = re.compile(r"</system\s*>")
_GT_PER_S = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*GT/s\b", re.IGNORECASE)
_HEX_WORD = re.compile(r"^[0-9a-fA-F]{1,16}$")
#: Deepest element nesting accepted. A real dump is ``system > cpu > pci (switches) > pci > gpu > nvlink``,
#: under 10 levels (PCIe hierarchies are a few switches deep); this bounds a hostile file's cost.
MAX_XML_DEPTH = 64
#: Most ``<system>`` documents in one text (one per node of a cluster dump; each costs a parse).
MAX_XML_DOCUMENTS = 4096


# -- data objects --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CpuNode:
    """A ``<cpu>`` element: one NUMA node of the host.

    Attributes
    ----------
    numaid : int or None
        NUMA node id.
    arch, vendor : str or None
        ``x86_64``/``arm64``/``ppc64`` and ``GenuineIntel``/``AuthenticAMD``/...
    familyid, modelid : int or None
        CPU family and model (NCCL picks the inter-socket bandwidth from them).
    affinity : str or None
        CPU mask as written: comma-separated 32-bit hex words, most significant first.
    line : int
        1-based line of the element in the input.
    """

    numaid: int | None
    arch: str | None
    vendor: str | None
    familyid: int | None
    modelid: int | None
    affinity: str | None
    line: int

    def cpu_ids(self) -> frozenset[int]:
        """CPU ids set in :attr:`affinity` (empty if there is no mask).

        >>> sorted(CpuNode(0, None, None, None, None, "00000000,00000003", 1).cpu_ids())
        [0, 1]
        """
        if not self.affinity:
            return frozenset()
        mask = int("".join(self.affinity.split(",")), 16)
        return frozenset(i for i in range(mask.bit_length()) if mask >> i & 1)


@dataclass(frozen=True)
class PciSwitch:
    """A PCIe switch or bridge: a ``pci`` element of class ``0x0604xx`` (or of a class NCCL does not know).

    Attributes
    ----------
    busid : str
        PCI bus id (``0000:16:00.0``; Azure's synthetic switches use ``ffff:ff:0X.0``).
    link_speed_gt_per_s : float or None
        Per-lane PCIe rate of the upstream link, GT/s (16 = Gen4, 32 = Gen5).
    link_width : int or None
        Lanes of the upstream link.
    parent : str or None
        Bus id of the switch above it, None if it hangs off the CPU.
    children : tuple of str
        Bus ids of the ``pci`` elements directly below it.
    numaid : int or None
        NUMA node of the enclosing ``<cpu>``.
    line : int
        1-based line of the element in the input.
    """

    busid: str
    link_speed_gt_per_s: float | None
    link_width: int | None
    parent: str | None
    children: tuple[str, ...]
    numaid: int | None
    line: int


@dataclass(frozen=True)
class NvLink:
    """An ``<nvlink>`` of a GPU: ``count`` links to ``target`` (an NVSwitch, a peer GPU or the CPU)."""

    target: str
    count: int
    tclass: str | None


@dataclass(frozen=True)
class GpuNode:
    """A GPU: its ``pci`` element and, in NCCL dumps, the ``<gpu>`` inside it.

    Attributes
    ----------
    busid : str or None
        PCI bus id of the GPU (None for a ``<gpu>`` outside any ``pci``).
    dev : int or None
        CUDA device index on the node.
    sm : int or None
        Compute capability x 10 (``90`` = Hopper, ``100`` = Blackwell).
    rank : int or None
        NCCL rank of the GPU in the communicator that wrote the dump.
    gdr : bool or None
        Whether GPU Direct RDMA is possible.
    nvlinks : tuple of NvLink
        The GPU's NVLink groups (empty in hand-written files).
    pci_switch : str or None
        Bus id of the PCIe switch directly above the GPU, None if it hangs off the CPU.
    numaid : int or None
        NUMA node of the enclosing ``<cpu>``.
    link_speed_gt_per_s : float or None
        Per-lane PCIe rate of the GPU's link, GT/s.
    link_width : int or None
        Lanes of the GPU's link.
    line : int
        1-based line of the element in the input.
    """

    busid: str | None
    dev: int | None
    sm: int | None
    rank: int | None
    gdr: bool | None
    nvlinks: tuple[NvLink, ...]
    pci_switch: str | None
    numaid: int | None
    link_speed_gt_per_s: float | None
    link_width: int | None
    line: int

    @property
    def nvlink_count(self) -> int:
        """Total NVLinks of the GPU (sum over its ``<nvlink>`` elements)."""
        return sum(link.count for link in self.nvlinks)


@dataclass(frozen=True)
class NetDevice:
    """A ``<net>`` port of a NIC.

    Attributes
    ----------
    name : str
        Device name (``mlx5_0``, ``eth0``).
    dev : int or None
        NCCL net device index.
    speed_bytes_per_s : float or None
        Per-direction rate, bytes/s (the file gives Mb/s: 400000 -> 5e10).
    port : int or None
        Port number on the device.
    gdr : bool or None
        Whether GPU Direct RDMA is possible through this port.
    guid : str or None
        Port GUID as written.
    maxconn : int or None
        Maximum connections NCCL may open.
    """

    name: str
    dev: int | None
    speed_bytes_per_s: float | None
    port: int | None
    gdr: bool | None
    guid: str | None
    maxconn: int | None


@dataclass(frozen=True)
class NicNode:
    """A NIC: its ``pci`` element (class ``0x0200xx``/``0x0207xx``) and the ``<net>`` ports inside.

    Attributes
    ----------
    busid : str or None
        PCI bus id (None for a ``<nic>`` directly under a ``<cpu>``, e.g. a socket interface).
    pci_class : str or None
        PCI class code as written (``0x020700`` InfiniBand, ``0x020000`` Ethernet).
    nets : tuple of NetDevice
        Its ports (empty in hand-written files).
    pci_switch : str or None
        Bus id of the PCIe switch directly above the NIC, None if it hangs off the CPU.
    numaid : int or None
        NUMA node of the enclosing ``<cpu>``.
    link_speed_gt_per_s : float or None
        Per-lane PCIe rate of the NIC's link, GT/s.
    link_width : int or None
        Lanes of the NIC's link.
    line : int
        1-based line of the element in the input.
    """

    busid: str | None
    pci_class: str | None
    nets: tuple[NetDevice, ...]
    pci_switch: str | None
    numaid: int | None
    link_speed_gt_per_s: float | None
    link_width: int | None
    line: int


@dataclass(frozen=True)
class NcclTopology:
    """One ``<system>`` of an NCCL topology XML file.

    Build it with :meth:`from_text`. Elements the model does not use (``c2c``, ``pcilink``, NVSwitch
    ``pci`` entries, attributes such as ``host_hash``) are skipped.

    Attributes
    ----------
    version : str or None
        The ``version`` attribute of ``<system>``.
    cpus : tuple of CpuNode
    pci_switches : tuple of PciSwitch
    gpus : tuple of GpuNode
    nics : tuple of NicNode
        In document order.
    line : int
        1-based line of ``<system>`` in the input.
    source : str or None
        File name or description of the input.
    pci_vendors : tuple of (str, str)
        ``(busid, vendor)`` of every ``pci`` element with a ``vendor`` attribute (PCI vendor ID as written,
        lower case: ``0x10de`` NVIDIA, ``0x1b36`` a QEMU bridge...), in document order.

    References
    ----------
    .. [1] NVIDIA, NCCL source, ``src/graph/xml.cc`` (writer) and ``src/graph/topo.cc`` (reader),
       https://github.com/NVIDIA/nccl
    """

    version: str | None
    cpus: tuple[CpuNode, ...]
    pci_switches: tuple[PciSwitch, ...]
    gpus: tuple[GpuNode, ...]
    nics: tuple[NicNode, ...]
    line: int = 1
    source: str | None = None
    pci_vendors: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_text(cls, text: str | bytes, source: str | None = None) -> NcclTopology:
        """Parse the one ``<system>`` document in ``text``.

        ``text`` may be a bare XML file or a larger text holding exactly one ``<system>...</system>``
        (use :func:`parse_nccl_topologies` when it holds several).

        Parameters
        ----------
        text : str or bytes
            The XML, possibly inside commentary. Bytes are decoded as UTF-8.
        source : str, optional
            File name or description, used in error messages.

        Returns
        -------
        NcclTopology

        Raises
        ------
        ParseError
            If there is no ``<system>`` or more than one, the XML is malformed or declares a document
            type, or an attribute is not of its type (``dev="x"``). The error names the 1-based line in
            ``text``.

        References
        ----------
        .. [1] NVIDIA, NCCL ``src/graph/xml.cc``, ``ncclTopoDumpXmlToFile`` / ``ncclTopoGetXmlFromFile``.

        Examples
        --------
        >>> topo = NcclTopology.from_text('''<system version="1">
        ...   <cpu numaid="0" arch="x86_64">
        ...     <pci busid="ffff:ff:01.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
        ...       <pci busid="0001:00:00.0" class="0x030200"><gpu dev="0" sm="90" rank="0" gdr="1"/></pci>
        ...       <pci busid="0101:00:00.0" class="0x020700">
        ...         <nic><net name="mlx5_0" dev="0" speed="400000" port="1" gdr="1"/></nic>
        ...       </pci>
        ...     </pci>
        ...   </cpu>
        ... </system>''')
        >>> topo.gpus[0].pci_switch, topo.nics[0].nets[0].speed_bytes_per_s / 1e9  # GB/s
        ('ffff:ff:01.0', 50.0)
        """
        documents = _documents(decode(text, source), source)
        if len(documents) != 1:
            raise ParseError(
                f"expected one <system> document, found {len(documents)}"
                + (" (use parse_nccl_topologies)" if documents else ""),
                line=documents[1][0] if len(documents) > 1 else None,
                source=source,
            )
        first_line, document = documents[0]
        return _parse_document(document, first_line, source)

    def gpu(self, dev: int) -> GpuNode:
        """The GPU with CUDA device index ``dev``.

        Raises
        ------
        KeyError
            If no GPU has that index (hand-written files give none).
        """
        for gpu in self.gpus:
            if gpu.dev == dev:
                return gpu
        raise KeyError(f"no GPU with dev={dev}")

    def gpus_by_switch(self) -> dict[str | None, tuple[GpuNode, ...]]:
        """GPUs grouped by the PCIe switch above them (None: directly under a CPU)."""
        groups: dict[str | None, list[GpuNode]] = {}
        for gpu in self.gpus:
            groups.setdefault(gpu.pci_switch, []).append(gpu)
        return {switch: tuple(members) for switch, members in groups.items()}

    def nics_near(self, gpu: GpuNode) -> tuple[NicNode, ...]:
        """NICs under the same PCIe switch as ``gpu`` (NCCL path type PIX); empty if it has no switch."""
        if gpu.pci_switch is None:
            return ()
        return tuple(nic for nic in self.nics if nic.pci_switch == gpu.pci_switch)


# -- public functions ----------------------------------------------------------------------------------------


def extract_xml_documents(text: str) -> list[str]:
    """Return every ``<system ...>...</system>`` document found in ``text``, in order.

    A document starts at a line whose first non-blank characters are ``<system`` and ends at the next
    ``</system>``; commentary around and between documents is dropped.

    Parameters
    ----------
    text : str
        A file holding one or more NCCL topology XML documents, e.g. a case file with commentary.

    Returns
    -------
    list of str
        The documents' text, possibly empty.

    Raises
    ------
    ParseError
        If a ``<system`` has no closing ``</system>``.

    Examples
    --------
    >>> extract_xml_documents("note\\n<system version='1'></system>\\nmore\\n<system/>")
    ["<system version='1'></system>", '<system/>']
    """
    return [document for _, document in _documents(text, None)]


def parse_nccl_topologies(text: str | bytes, source: str | None = None) -> list[NcclTopology]:
    """Parse every ``<system>`` document in ``text`` (see :meth:`NcclTopology.from_text`).

    Parameters
    ----------
    text : str or bytes
        A file holding one or more topology documents, e.g. a case file with commentary.
    source : str, optional
        File name or description, used in error messages.

    Returns
    -------
    list of NcclTopology
        One per ``<system>``, in order; line numbers refer to ``text``.

    Raises
    ------
    ParseError
        If ``text`` holds no ``<system>`` document, or one of them is malformed.
    """
    documents = _documents(decode(text, source), source)
    if not documents:
        raise ParseError("no <system> document found", source=source)
    return [_parse_document(document, first_line, source) for first_line, document in documents]


# -- parsing helpers -----------------------------------------------------------------------------------------


def _documents(text: str, source: str | None) -> list[tuple[int, str]]:
    """(1-based first line, text) of each ``<system>`` document.

    A ``<system`` whose start tag does not close within :data:`_MAX_START_TAG` characters is commentary.
    """
    found: list[tuple[int, str]] = []
    position = 0
    line, counted = 1, 0  # the line at offset ``counted``: lines are counted once, not from 0 each time
    while True:
        start = _SYSTEM_START.search(text, position)
        if start is None:
            return found
        close = text.find(">", start.end(), start.end() + _MAX_START_TAG)
        if close < 0:
            position = start.end()
            continue
        if len(found) == MAX_XML_DOCUMENTS:
            raise ParseError(f"more than {MAX_XML_DOCUMENTS} <system> documents", line=line, source=source)
        begin = start.start() + len(start.group(0)) - len(start.group(0).lstrip())
        line, counted = line + text.count("\n", counted, begin), begin
        first_line = line
        if text[close - 1] == "/":
            found.append((first_line, text[begin : close + 1]))
            position = close + 1
            continue
        end = _SYSTEM_END.search(text, close + 1)
        if end is None:
            raise ParseError("<system> is never closed by </system>", line=first_line, source=source)
        found.append((first_line, text[begin : end.end()]))
        position = end.end()


class _Tree:
    """An ElementTree built by expat, with the line of every element (``ET.Element`` keeps none).

    ElementTree's own ``XMLParser`` drives the same expat parser but does not expose line numbers, so the
    tree is assembled here with ``ET.TreeBuilder`` from expat's callbacks.
    """

    def __init__(self, document: str, first_line: int, source: str | None) -> None:
        self.lines: dict[ET.Element, int] = {}
        self._first_line = first_line
        self._source = source
        builder = ET.TreeBuilder()
        parser = expat.ParserCreate()
        depth = 0

        def start(tag: str, attrs: dict[str, str]) -> None:
            nonlocal depth
            depth += 1
            if depth > MAX_XML_DEPTH:
                raise ParseError(
                    f"elements nested deeper than {MAX_XML_DEPTH} levels",
                    line=parser.CurrentLineNumber + first_line - 1,
                    source=source,
                )
            element = builder.start(tag, attrs)
            self.lines[element] = parser.CurrentLineNumber + first_line - 1

        def end(tag: str) -> None:
            nonlocal depth
            depth -= 1
            builder.end(tag)

        def refuse_doctype(*_: object) -> None:
            raise ParseError(
                "document type declarations are not allowed in NCCL topology XML",
                line=parser.CurrentLineNumber + first_line - 1,
                source=source,
            )

        parser.StartElementHandler = start
        parser.EndElementHandler = end
        parser.StartDoctypeDeclHandler = refuse_doctype
        parser.EntityDeclHandler = refuse_doctype
        try:
            parser.Parse(document, True)
        except expat.ExpatError as err:
            raise ParseError(
                f"malformed XML: {expat.ErrorString(err.code)}",
                line=err.lineno + first_line - 1,
                source=source,
            ) from err
        except UnicodeEncodeError as err:  # a lone surrogate in a str cannot reach the parser
            raise ParseError(f"the text is not valid Unicode ({err.reason})", source=source) from err
        self.root: ET.Element = builder.close()

    def line(self, element: ET.Element) -> int:
        return self.lines[element]

    def error(self, element: ET.Element, message: str) -> ParseError:
        return ParseError(f"<{element.tag}>: {message}", line=self.line(element), source=self._source)


@dataclass
class _Collected:
    cpus: list[CpuNode]
    switches: list[PciSwitch]
    gpus: list[GpuNode]
    nics: list[NicNode]
    vendors: list[tuple[str, str]] = field(default_factory=list)


def _parse_document(document: str, first_line: int, source: str | None) -> NcclTopology:
    tree = _Tree(document, first_line, source)
    root = tree.root
    if root.tag != "system":
        raise tree.error(root, "the root element must be <system>")
    out = _Collected([], [], [], [])
    for child in root:
        if child.tag == "cpu":
            cpu = CpuNode(
                numaid=_int(tree, child, "numaid"),
                arch=child.get("arch"),
                vendor=child.get("vendor"),
                familyid=_int(tree, child, "familyid"),
                modelid=_int(tree, child, "modelid"),
                affinity=_affinity(tree, child),
                line=tree.line(child),
            )
            out.cpus.append(cpu)
            _walk(tree, child, cpu.numaid, out)
    busids = [s.busid for s in out.switches] + [g.busid for g in out.gpus] + [n.busid for n in out.nics]
    seen: set[str] = set()
    for busid in busids:
        if busid is not None and busid in seen:
            raise ParseError(f"bus id {busid} appears twice", line=first_line, source=source)
        if busid is not None:
            seen.add(busid)
    return NcclTopology(
        version=root.get("version"),
        cpus=tuple(out.cpus),
        pci_switches=tuple(out.switches),
        gpus=tuple(out.gpus),
        nics=tuple(out.nics),
        line=first_line,
        source=source,
        pci_vendors=tuple(out.vendors),
    )


def _walk(tree: _Tree, cpu: ET.Element, numaid: int | None, out: _Collected) -> None:
    """Visit every device under a ``<cpu>`` in document order, depth first, without recursion.

    The stack holds one iterator per open switch ``<pci>`` with the switch's bus id, so a deep hierarchy
    costs memory, not Python stack frames (the parser already refused more than :data:`MAX_XML_DEPTH` levels).
    """
    stack: list[tuple[Iterator[ET.Element], str | None]] = [(iter(cpu), None)]
    while stack:
        children, switch = stack[-1]
        element = next(children, None)
        if element is None:
            stack.pop()
        elif element.tag == "nic":  # a NIC without a PCI device (e.g. a socket interface)
            out.nics.append(_nic(tree, None, element, numaid, switch))
        elif element.tag == "gpu":
            out.gpus.append(_gpu(tree, None, element, numaid, switch))
        elif element.tag == "pci" and _pci(tree, element, numaid, switch, out):
            stack.append((iter(element), element.get("busid")))


def _pci(tree: _Tree, element: ET.Element, numaid: int | None, switch: str | None, out: _Collected) -> bool:
    """Record the device of one ``<pci>``; True if it is a switch whose children must be visited."""
    busid = element.get("busid")
    if not busid:
        raise tree.error(element, "missing busid")
    pci_class = (element.get("class") or "").lower()
    if element.get("vendor"):
        out.vendors.append((busid, (element.get("vendor") or "").lower()[:16]))
    gpu = element.find("gpu")
    nic = element.find("nic")
    # NCCL's reader (topo.cc, kvDictPciClass) matches class prefixes: 0x03 GPU, 0x02 NIC, 0x0680xx
    # NVSwitch/CPU link targets, and treats every other class, bridges 0x0604xx included, as a PCI switch.
    if gpu is not None or pci_class.startswith("0x03"):
        out.gpus.append(_gpu(tree, element, gpu, numaid, switch))
    elif nic is not None or pci_class.startswith("0x02"):
        out.nics.append(_nic(tree, element, nic, numaid, switch))
    elif not pci_class.startswith("0x0680"):
        out.switches.append(
            PciSwitch(
                busid=busid,
                link_speed_gt_per_s=_link_speed(tree, element),
                link_width=_int(tree, element, "link_width"),
                parent=switch,
                children=tuple(child.get("busid") or "" for child in element.findall("pci")),
                numaid=numaid,
                line=tree.line(element),
            )
        )
        return True
    return False


def _gpu(
    tree: _Tree, pci: ET.Element | None, gpu: ET.Element | None, numaid: int | None, switch: str | None
) -> GpuNode:
    return GpuNode(
        nvlinks=tuple(_nvlink(tree, link) for link in _children(gpu, "nvlink")),
        dev=_int(tree, gpu, "dev") if gpu is not None else None,
        sm=_int(tree, gpu, "sm") if gpu is not None else None,
        rank=_int(tree, gpu, "rank") if gpu is not None else None,
        gdr=_bool(tree, gpu, "gdr") if gpu is not None else None,
        **_placement(tree, pci, gpu, numaid, switch),
    )


#: The most NVLinks one ``<nvlink>`` element may count: the most a GPU has, 18 (H100 SXM, B200: NVIDIA
#: Hopper and Blackwell architecture whitepapers).
_MAX_NVLINKS = 18


def _nvlink(tree: _Tree, link: ET.Element) -> NvLink:
    target = link.get("target")
    count = _int(tree, link, "count")
    if not target or count is None:
        raise tree.error(link, "an nvlink needs a target and a count")
    if not 1 <= count <= _MAX_NVLINKS:
        raise tree.error(link, f"count={count} NVLinks: a GPU has 1 to {_MAX_NVLINKS} links to one target")
    return NvLink(target=target, count=count, tclass=link.get("tclass"))


def _nic(
    tree: _Tree, pci: ET.Element | None, nic: ET.Element | None, numaid: int | None, switch: str | None
) -> NicNode:
    return NicNode(
        nets=tuple(_net(tree, net) for net in _children(nic, "net")),
        pci_class=pci.get("class") if pci is not None else None,
        **_placement(tree, pci, nic, numaid, switch),
    )


def _net(tree: _Tree, net: ET.Element) -> NetDevice:
    name = net.get("name")
    if not name:
        raise tree.error(net, "missing name")
    speed_mbps = _net_speed(tree, net)
    return NetDevice(
        name=name,
        dev=_int(tree, net, "dev"),
        speed_bytes_per_s=speed_mbps * 1e6 / 8 if speed_mbps is not None else None,  # Mb/s -> bytes/s
        port=_int(tree, net, "port"),
        gdr=_bool(tree, net, "gdr"),
        guid=net.get("guid"),
        maxconn=_int(tree, net, "maxconn"),
    )


#: ``speed`` NCCL writes for a NIC that does not report one (NVIDIA/nccl ``src/graph/topo.cc``,
#: ``ncclTopoAddNet``: "if (mbps <= 0) mbps = 10000; // Some NICs define speed = -1").
UNKNOWN_NET_SPEED = -1.0
#: Fastest ``speed`` a ``<net>`` may carry, Mb/s: a 1.6 Tb/s port (IEEE 802.3dj, the fastest Ethernet; IB
#: XDR is 800 Gb/s) fused eight to a device (NCCL NIC fusion, ``NCCL_NET_MAX_DEVS_PER_NIC``: 4 up to the
#: v11 plugin API, 8 in ``src/include/net/net_v12.h``).
MAX_NET_SPEED_MBPS = 8 * 1_600_000


def _net_speed(tree: _Tree, net: ET.Element) -> float | None:
    """The ``speed`` of ``<net>``, Mb/s per direction; None when absent or NCCL's unknown (-1).

    Raises
    ------
    ParseError
        Naming ``speed``, its value and the line, for a value no NIC reports (0, below 0 other than -1,
        above :data:`MAX_NET_SPEED_MBPS`), NaN or text.
    """
    speed = _float(tree, net, "speed")
    if speed is None or speed == UNKNOWN_NET_SPEED:
        return None
    if not 0 < speed <= MAX_NET_SPEED_MBPS:
        raise tree.error(
            net,
            f"speed={net.get('speed')!r} is not a NIC speed (Mb/s, 1 to {MAX_NET_SPEED_MBPS:,}; -1: unknown)",
        )
    return speed


class _Placement(TypedDict):
    """Where a GPU or NIC sits: the fields :class:`GpuNode` and :class:`NicNode` share."""

    busid: str | None
    pci_switch: str | None
    numaid: int | None
    link_speed_gt_per_s: float | None
    link_width: int | None
    line: int


def _placement(
    tree: _Tree, pci: ET.Element | None, device: ET.Element | None, numaid: int | None, switch: str | None
) -> _Placement:
    """The placement of a device given as its ``<pci>``, its ``<gpu>``/``<nic>`` element, or both."""
    anchor = pci if pci is not None else device
    assert anchor is not None  # one of the two is always given by the callers
    return _Placement(
        busid=pci.get("busid") if pci is not None else None,
        pci_switch=switch,
        numaid=numaid,
        link_speed_gt_per_s=_link_speed(tree, pci) if pci is not None else None,
        link_width=_int(tree, pci, "link_width") if pci is not None else None,
        line=tree.line(anchor),
    )


def _children(element: ET.Element | None, tag: str) -> list[ET.Element]:
    """The ``tag`` children of ``element``, none when it is absent."""
    return element.findall(tag) if element is not None else []


def _int(tree: _Tree, element: ET.Element, name: str) -> int | None:
    value = element.get(name)
    if value is None or value.strip() == "":
        return None
    text = value.strip()
    try:
        return int(text, 16) if text.lower().startswith("0x") else int(text, 10)
    except ValueError as err:
        raise tree.error(element, f"{name}={value!r} is not an integer") from err


def _float(tree: _Tree, element: ET.Element, name: str) -> float | None:
    value = element.get(name)
    if value is None or value.strip() == "":
        return None
    if not re.fullmatch(r"\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*", value):
        raise tree.error(element, f"{name}={value!r} is not a number")
    number = float(value)
    if not math.isfinite(number):
        raise tree.error(element, f"{name}={value!r} is not a finite number")
    return number


def _bool(tree: _Tree, element: ET.Element, name: str) -> bool | None:
    value = _int(tree, element, name)
    return None if value is None else value != 0


def _link_speed(tree: _Tree, element: ET.Element) -> float | None:
    value = element.get("link_speed")
    if value is None or value.strip() == "" or value.strip().lower().startswith("unknown"):
        return None
    match = _GT_PER_S.match(value)
    if not match:
        raise tree.error(element, f"link_speed={value!r} is not of the form '<rate> GT/s'")
    return float(match.group(1))


def _affinity(tree: _Tree, element: ET.Element) -> str | None:
    value = element.get("affinity")
    if value is None:
        return None
    if not all(_HEX_WORD.match(word) for word in value.split(",")):
        raise tree.error(element, f"affinity={value!r} is not a comma-separated hex mask")
    return value
