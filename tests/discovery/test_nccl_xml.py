"""Golden and error tests of :mod:`aifabric.discovery.nccl_xml`.

The golden files are Azure's hand-written NCCL topology files for NDv4 (8 x A100, 8 x HDR) and NDv5
(8 x H100, 8 x NDR), Azure/azhpc-images ``topology/ndv4-topo.xml`` and ``ndv5-topo.xml`` (case 17).
"""

from __future__ import annotations

import pytest

from aifabric.discovery.nccl_xml import (
    NcclTopology,
    extract_xml_documents,
    parse_nccl_topologies,
)
from aifabric.errors import ParseError

CASE_17 = "case_17_azure_ndv4_ndv5_topology_xml.txt"

# An NCCL_TOPO_DUMP_FILE-style document (layout of NCCL src/graph/xml.cc, values of an H100 node):
# a two-level PCIe switch, a GPU with 18 NVLinks to the NVSwitch, a 400 Gb/s NIC, a socket NIC.
DUMP = """<system version="1">
  <cpu host_hash="0x1234" numaid="0" affinity="0000ffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:15:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
      <pci busid="0000:16:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
        <pci busid="0000:18:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16">
          <gpu dev="0" sm="90" rank="3" gdr="1">
            <nvlink target="fffffff:ff:ff.0" count="18" tclass="0x068000"/>
          </gpu>
        </pci>
        <pci busid="0000:19:00.0" class="0x020700" link_speed="32.0 GT/s PCIe" link_width="16">
          <nic>
            <net name="mlx5_0" dev="0" speed="400000" port="1" latency="0.000000" guid="0xabcd" maxconn="131072" gdr="1"/>
          </nic>
        </pci>
      </pci>
    </pci>
    <pci busid="0000:a0:00.0" class="0x068000" link_speed="" link_width="0"/>
    <nic>
      <net name="eth0" dev="1" speed="100000" port="0" gdr="0"/>
    </nic>
  </cpu>
</system>
"""  # noqa: E501  (verbatim lines of an NCCL topology dump)


@pytest.fixture(scope="module")
def azure(case_text: dict[str, str]) -> list[NcclTopology]:
    return parse_nccl_topologies(case_text[CASE_17], source=CASE_17)


def test_extract_both_documents(case_text: dict[str, str]) -> None:
    documents = extract_xml_documents(case_text[CASE_17])
    assert len(documents) == 2
    assert all(d.startswith('<system version="1">') and d.endswith("</system>") for d in documents)
    assert NcclTopology.from_text(documents[0]).gpus[0].line == 4  # lines count from the document


@pytest.mark.parametrize("vm", [0, 1], ids=["ndv4", "ndv5"])
def test_azure_vm_has_8_gpus_and_8_nics_under_switches(azure: list[NcclTopology], vm: int) -> None:
    topo = azure[vm]
    assert len(topo.gpus) == 8
    assert len(topo.nics) == 8
    switches = {s.busid for s in topo.pci_switches}
    assert all(gpu.pci_switch in switches for gpu in topo.gpus)
    assert all(nic.pci_switch in switches for nic in topo.nics)
    # Every GPU shares its switch with at least one NIC: GPU Direct RDMA over PIX.
    assert all(topo.nics_near(gpu) for gpu in topo.gpus)
    assert {nic.pci_class for nic in topo.nics} == {"0x020700"}  # InfiniBand
    # Hand-written files leave the run-time fields empty.
    assert {(g.dev, g.sm, g.rank, g.gdr, g.nvlinks) for g in topo.gpus} == {(None, None, None, None, ())}
    assert {n.nets for n in topo.nics} == {()}


def test_ndv4_layout(azure: list[NcclTopology]) -> None:
    ndv4 = azure[0]
    assert ndv4.line == 41 and ndv4.source == CASE_17
    assert [cpu.numaid for cpu in ndv4.cpus] == [0, 1, 2, 3]
    assert {cpu.vendor for cpu in ndv4.cpus} == {"AuthenticAMD"}
    assert (ndv4.cpus[0].familyid, ndv4.cpus[0].modelid) == (23, 49)
    assert len(ndv4.cpus[0].cpu_ids()) == 24
    assert len(ndv4.pci_switches) == 4
    assert {(s.link_speed_gt_per_s, s.link_width) for s in ndv4.pci_switches} == {(16.0, 16)}
    groups = ndv4.gpus_by_switch()
    assert {switch: len(gpus) for switch, gpus in groups.items()} == {
        f"ffff:ff:0{i}.0": 2 for i in range(1, 5)
    }
    first = ndv4.gpus[0]
    assert (first.busid, first.pci_switch, first.numaid, first.line) == (
        "0003:00:00.0",
        "ffff:ff:01.0",
        0,
        44,
    )
    assert [nic.busid for nic in ndv4.nics_near(first)] == ["0103:00:00.0", "0104:00:00.0"]
    assert ndv4.pci_switches[0].children == ("0003:00:00.0", "0103:00:00.0", "0004:00:00.0", "0104:00:00.0")


def test_ndv5_layout(azure: list[NcclTopology]) -> None:
    ndv5 = azure[1]
    assert ndv5.line == 77
    assert [cpu.numaid for cpu in ndv5.cpus] == [0, 1]
    assert {cpu.vendor for cpu in ndv5.cpus} == {"GenuineIntel"}
    assert len(ndv5.cpus[1].cpu_ids()) == 48
    assert len(ndv5.pci_switches) == 8
    assert {(s.link_speed_gt_per_s, s.link_width) for s in ndv5.pci_switches} == {(32.0, 16)}
    # Rail per GPU: each switch holds exactly one GPU and one NIC.
    assert all(len(gpus) == 1 for gpus in ndv5.gpus_by_switch().values())
    assert all(len(ndv5.nics_near(gpu)) == 1 for gpu in ndv5.gpus)
    assert [g.numaid for g in ndv5.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]


def test_dump_document() -> None:
    topo = NcclTopology.from_text("commentary before\n" + DUMP, source="dump")
    assert topo.version == "1" and topo.line == 2
    gpu = topo.gpu(0)
    assert (gpu.busid, gpu.sm, gpu.rank, gpu.gdr) == ("0000:18:00.0", 90, 3, True)
    assert gpu.nvlink_count == 18 and gpu.nvlinks[0].target == "fffffff:ff:ff.0"
    assert gpu.pci_switch == "0000:16:00.0"
    inner, outer = topo.pci_switches[1], topo.pci_switches[0]
    assert (inner.busid, inner.parent, outer.parent) == ("0000:16:00.0", "0000:15:00.0", None)
    ib, eth = topo.nics
    assert ib.busid == "0000:19:00.0" and ib.pci_switch == "0000:16:00.0"
    net = ib.nets[0]
    assert (net.name, net.dev, net.port, net.gdr, net.maxconn) == ("mlx5_0", 0, 1, True, 131072)
    assert net.speed_bytes_per_s == 50e9  # 400000 Mb/s = 400 Gb/s = 50 GB/s per direction
    assert eth.busid is None and eth.nets[0].speed_bytes_per_s == 12.5e9 and eth.nets[0].gdr is False
    assert topo.nics_near(gpu) == (ib,)
    assert len(topo.gpus) == 1  # the NVSwitch pci (class 0x068000) is not a GPU
    with pytest.raises(KeyError):
        topo.gpu(5)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            '<system version="1">\n  <cpu numaid="0">\n    <pci busid="1"></cpu>\n</system>',
            3,
            "malformed XML",
        ),
        ('<system version="1">\n<cpu numaid="x"/>\n</system>', 2, "numaid"),
        (
            '<system>\n<cpu>\n<pci busid="a" class="0x030200"><gpu dev="zero"/></pci>\n</cpu>\n</system>',
            3,
            "dev",
        ),
        (
            '<system>\n<cpu>\n<pci busid="a" class="0x060400" link_speed="fast"/>\n</cpu>\n</system>',
            3,
            "link_speed",
        ),
        ('<system>\n<cpu affinity="zz,00"/>\n</system>', 2, "affinity"),
        ("note\n<system>\n<cpu>\n", 2, "never closed"),
        ('<system>\n<cpu>\n<pci class="0x030200"/>\n</cpu>\n</system>', 3, "busid"),
        (
            '<system>\n<cpu>\n<pci busid="a" class="0x030200"/>\n<pci busid="a" class="0x030200"/>\n'
            "</cpu>\n</system>",
            1,
            "twice",
        ),
        (
            '<system>\n<cpu><pci busid="a" class="0x020700"><nic><net dev="0"/></nic></pci></cpu>\n</system>',
            2,
            "name",
        ),
    ],
)
def test_malformed_documents(text: str, line: int, message: str) -> None:
    with pytest.raises(ParseError, match=message) as info:
        NcclTopology.from_text(text, source="bad.xml")
    assert info.value.line == line
    assert info.value.source == "bad.xml"


def test_entity_declarations_cannot_reach_the_parser() -> None:
    # A document starts at "<system", so a DOCTYPE above it is dropped and its entities stay undefined;
    # one inside <system> is not well-formed. Either way nothing is expanded.
    bomb = '<!DOCTYPE system [<!ENTITY a "aaaaaaaaaa">]>\n<system version="&a;"></system>'
    with pytest.raises(ParseError, match="undefined entity") as info:
        parse_nccl_topologies(bomb)
    assert info.value.line == 2
    with pytest.raises(ParseError, match="malformed XML"):
        NcclTopology.from_text('<system version="1"><!DOCTYPE x [<!ENTITY a "b">]></system>')


def test_document_count_errors(case_text: dict[str, str]) -> None:
    with pytest.raises(ParseError, match="found 2") as info:
        NcclTopology.from_text(case_text[CASE_17])
    assert info.value.line == 77
    with pytest.raises(ParseError, match="no <system>"):
        parse_nccl_topologies("")
    with pytest.raises(ParseError, match="found 0"):
        NcclTopology.from_text(b"no xml here")
    with pytest.raises(ParseError, match="UTF-8"):
        NcclTopology.from_text(b"<system>\n\xff</system>")
