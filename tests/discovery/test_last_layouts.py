"""The last pasted layouts of issue 9 (items 1-3 of the layout9 brief): hand-written logs, expected objects.

Rows: the 4 GB all_reduce row of one DGX H100 (NVIDIA/nccl-tests #290: 15870 us, 270.63 GB/s algbw, 473.60
busbw = 270.63 x 2 x 7 / 8) and a 2 GB row built the same way (8000 us: 2147483648 B / 8000 us = 268.44 GB/s,
busbw 268.44 x 14 / 8 = 469.77).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.discovery.conftest import CASE_08
from tests.discovery.test_evidence_compare import NVLS_OFF, _info
from tests.discovery.test_evidence_compare import _log as _info_log
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.spec import ClusterSpec
from aifabric.discovery.compare import compare_nccl_tests
from aifabric.discovery.nccl_info import Evidence, parse_nccl_info
from aifabric.discovery.nccl_tests import parse_nccl_tests
from aifabric.discovery.nccl_xml import NcclTopology
from aifabric.discovery.node import inspect_node_text
from aifabric.discovery.nvsmi import TopoMatrix
from aifabric.discovery.paste import parse_pasted
from aifabric.errors import ParseError

HEADER = (
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
    "   busbw #wrong"
)
ROW_2G = "  2147483648     536870912     float     sum      -1   8000.0  268.44  469.77      0   8000.0  268.44  469.77      0"  # noqa: E501
ROW_4G = "  4294967296    1073741824     float     sum      -1    15870  270.63  473.60      0    15773  272.30  476.53      0"  # noqa: E501
OUT_ONLY_4G = "  4294967296    1073741824     float     sum      -1    15870  270.63  473.60      0"
COMMAND = "$ ./all_reduce_perf -b 2G -e 4G -f 2 -g 8"
FOOTER = "# Avg bus bandwidth    : 471.685"


def _log(*lines: str) -> str:
    return "\n".join([COMMAND, HEADER, *lines, FOOTER]) + "\n"


# -- item 1: rows without the in-place group under the full 13-column header ---------------------------------


def test_out_of_place_rows_under_the_full_header_read_in_place_as_missing() -> None:
    out_2g = ROW_2G[: ROW_2G.index("0   8000.0", 60) + 1]
    (table,) = parse_nccl_tests(_log(out_2g, OUT_ONLY_4G))
    assert [r.size_bytes for r in table.rows] == [2147483648, 4294967296]
    assert all(r.in_place is None for r in table.rows)  # missing, not zero
    half = table.rows[1].out_of_place
    assert half is not None and half.time_s == pytest.approx(15870e-6) and half.busbw_bytes_per_s == 473.6e9
    assert half.wrong == 0
    assert table.n_ranks == 8  # busbw/algbw = 473.60/270.63 = 2 x 7 / 8 still pins 8 ranks
    # the verdict: the same healthy single DGX H100 as the full row (NVIDIA/nccl-tests #290)
    assert compare_nccl_tests(_log(out_2g, OUT_ONLY_4G)).tables[0].verdict == "healthy"
    # in-place asked for: refused, never answered with the out-of-place half (issue 9, new-user trial)
    with pytest.raises(ParseError, match=r"line 2: --place in-place: no row of the table prints an in-place"):
        compare_nccl_tests(_log(OUT_ONLY_4G), place="in_place")


def test_a_row_of_mixed_halves_and_a_wrong_count_is_still_refused() -> None:
    with pytest.raises(ParseError, match=r"line 3: row has 11 fields, the header has 13 columns"):
        parse_nccl_tests(_log(OUT_ONLY_4G + "  15773  272.30"))


# -- item 2: a row wrapped onto two lines --------------------------------------------------------------------


@pytest.mark.parametrize("split_after", [1, 5, 6, 9, 12], ids=lambda n: f"after field {n}")
def test_a_row_wrapped_at_a_space_is_joined_back(split_after: int) -> None:
    fields = ROW_4G.split()
    first, second = "  " + "   ".join(fields[:split_after]), "   ".join(fields[split_after:])
    text = _log(ROW_2G, first, second)
    (table,) = parse_pasted(text, "mail.txt")
    assert [r.size_bytes for r in table.rows] == [2147483648, 4294967296]
    row = table.rows[1]
    assert row.line == 4  # the first of its two lines
    assert row.out_of_place is not None and row.out_of_place.time_s == pytest.approx(15870e-6)
    assert row.in_place is not None and row.in_place.busbw_bytes_per_s == 476.53e9
    assert table.avg_busbw_bytes_per_s == 471.685e9
    assert compare_nccl_tests(text).tables[0].verdict == "healthy"


def test_two_whole_rows_are_never_joined() -> None:
    (table,) = parse_nccl_tests(_log(ROW_2G, OUT_ONLY_4G, ROW_4G.replace("4294967296 ", "8589934592 ")))
    assert len(table.rows) == 3 and table.rows[1].in_place is None


def test_a_wrapped_first_row_without_header_gets_its_header() -> None:
    fields = ROW_4G.split()
    text = "\n".join([COMMAND, "  ".join(fields[:7]), "  ".join(fields[7:]), ROW_2G]) + "\n"
    (table,) = parse_pasted(text, "mail.txt")
    assert [(r.line, r.size_bytes) for r in table.rows] == [(2, 4294967296), (4, 2147483648)]
    assert table.rows[0].in_place is not None and table.rows[0].in_place.time_s == pytest.approx(15773e-6)


# -- item 3: the last row cut mid-line -----------------------------------------------------------------------


@pytest.mark.parametrize("cut", [20, 47, 70, 100])
def test_the_last_row_cut_mid_line_is_dropped_with_a_note(cut: int) -> None:
    text = "\n".join([COMMAND, HEADER, ROW_2G, ROW_4G[:cut]]) + "\n\n"
    (table,) = parse_pasted(text, "cut.txt")
    assert [r.size_bytes for r in table.rows] == [2147483648]
    assert table.cut_line == 4
    assert table.notes == ("line 4: last row cut mid-line (the copy stopped there): dropped",)
    compared = compare_nccl_tests(text, source="cut.txt").tables[0]
    assert "line 4: last row cut mid-line (the copy stopped there): dropped" in compared.assumptions
    assert [r.size_bytes for r in compared.rows] == [2147483648]


def test_a_cut_row_inside_the_text_is_still_an_error() -> None:
    with pytest.raises(ParseError, match=r"line 4: row has 4 fields"):
        parse_nccl_tests(_log(ROW_2G, ROW_4G[:50], ROW_4G))


def test_the_cut_line_follows_the_paste_when_a_header_is_supplied() -> None:
    # no header: parse_pasted supplies it, so the parser's line 3 is the paste's line 2
    (table,) = parse_pasted("\n".join(["all_reduce_perf -g 8", ROW_2G, ROW_4G[:60]]))
    assert table.cut_line == 3 and table.rows[0].line == 2


# -- item 5: INFO lines with impossible counts ---------------------------------------------------------------

COMM = "node-a:101:130 [0] NCCL INFO comm 0x55d0 rank 0 nRanks {r} nNodes {n} localRanks {lr} localRank 0"


@pytest.mark.parametrize(
    ("ranks", "nodes", "local", "message"),
    [
        ("0", "1", "8", "nRanks 0 is not a rank count (1 to 131,072)"),
        ("-16", "2", "8", "nRanks -16 is not a rank count (1 to 131,072)"),
        ("1000000000000", "2", "8", "nRanks 1000000000000 is not a rank count (1 to 131,072)"),
        ("16", "32", "8", "nNodes 32 is more than nRanks 16"),
        ("16", "2", "64", "localRanks 64 is more than nRanks 16"),
        ("16", "0", "8", "nNodes 0 is below 1"),
        ("16", "2", "-1", "localRanks -1 is below 1"),
    ],
)
def test_impossible_communicator_counts_name_the_line_and_value(
    ranks: str, nodes: str, local: str, message: str, tmp_path: Path
) -> None:
    bad = COMM.format(r=ranks, n=nodes, lr=local)
    info = parse_nccl_info(["NCCL INFO NCCL version 2.19.3", bad])  # reading never raises
    assert info.n_ranks is None and info.n_nodes is None  # no count taken from it: never a guess
    assert info.count_errors == (Evidence(2, message),)
    text = "\n".join([COMMAND, bad, HEADER, ROW_4G, FOOTER]) + "\n"
    with pytest.raises(ParseError, match=rf"^bad\.log:2: NCCL INFO {re.escape(message)}$"):
        compare_nccl_tests(text, source="bad.log")
    log = tmp_path / "bad.log"
    log.write_text(text)
    result = CliRunner().invoke(app, ["nccl-tests", "compare", str(log)])
    assert result.exit_code == 2
    assert result.stderr.strip().count("\n") == 0 and f":2: NCCL INFO {message}" in result.stderr


def test_old_nranks_print_is_checked_too() -> None:
    info = parse_nccl_info(
        ["h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 0 cudaDev 0 busId 18000 - Init COMPLETE"]
    )
    assert info.count_errors == (Evidence(1, "nRanks 0 is not a rank count (1 to 131,072)"),)


def test_possible_counts_after_an_impossible_one_are_still_read() -> None:
    info = parse_nccl_info([COMM.format(r=0, n=1, lr=1), COMM.format(r=16, n=2, lr=8)])
    assert (info.n_ranks, info.n_nodes, info.local_ranks) == (16, 2, 8)
    assert len(info.count_errors) == 1


# -- item 4: nvidia-smi topo -m cut after a GPU row ----------------------------------------------------------

HEADER_LINE_08 = 34  # the "GPU0 GPU1 ..." header of case 08 (GKE A4, 8 x B200, 8 NICs, NV18 everywhere)


def _case_08_up_to(case_text: dict[str, str], last_line: int, tail: str | None = None) -> str:
    lines = case_text[CASE_08].split("\n")[:last_line]
    return "\n".join([*lines, *([tail] if tail is not None else [])]) + "\n"


def test_matrix_cut_after_a_gpu_row_is_scored_on_the_gpus_read(case_text: dict[str, str]) -> None:
    m = TopoMatrix.from_text(_case_08_up_to(case_text, HEADER_LINE_08 + 4))  # GPU0..GPU3 rows, no legend
    assert m.gpus == ("GPU0", "GPU1", "GPU2", "GPU3") and m.cut_gpus == ("GPU4", "GPU5", "GPU6", "GPU7")
    assert m.nics == tuple(f"NIC{i}" for i in range(8))
    # case 08 matrix: GPU0 NV18 to every GPU, PIX to NIC0/NIC1, NODE to NIC2/NIC3, SYS to NIC4-7
    assert m.nvlink_pairs()[0] == ("GPU0", "GPU1", 18) and len(m.nvlink_pairs()) == 6  # 4 GPUs: 6 pairs
    assert m.nearest_nics("GPU3")[:2] == [("NIC2", "PIX"), ("NIC3", "PIX")]
    assert ("GPU0", "GPU5") not in m.links  # a cut GPU is in no link
    assert m.missing == (
        "rows GPU4, GPU5, GPU6, GPU7 cut (the matrix stops after GPU3): those GPUs are not scored; the node "
        "is scored on the 4 GPUs read",
        "rows NIC0, NIC1, NIC2, NIC3, NIC4, NIC5, NIC6, NIC7 cut: GPU-NIC paths read from the GPU rows, "
        "NIC-to-NIC paths unknown",
    )
    assert m.cpu_affinity["GPU3"] == frozenset([*range(56), *range(112, 168)])


def test_matrix_cut_inside_a_gpu_row_drops_that_row(case_text: dict[str, str]) -> None:
    lines = case_text[CASE_08].split("\n")
    text = _case_08_up_to(case_text, HEADER_LINE_08 + 5, lines[HEADER_LINE_08 + 5][:40])  # GPU5 cut
    m = TopoMatrix.from_text(text)
    assert m.gpus == tuple(f"GPU{i}" for i in range(5)) and m.cut_gpus == ("GPU5", "GPU6", "GPU7")


def test_a_matrix_without_any_gpu_row_is_still_refused(case_text: dict[str, str]) -> None:
    with pytest.raises(ParseError, match=r"line 35: matrix ends before the row of GPU0 \(0 of 8"):
        TopoMatrix.from_text(_case_08_up_to(case_text, HEADER_LINE_08))


def test_inspect_scores_a_cut_matrix_and_names_what_is_missing(
    case_text: dict[str, str], tmp_path: Path
) -> None:
    path = tmp_path / "cut.txt"
    path.write_text(_case_08_up_to(case_text, HEADER_LINE_08 + 4))
    result = CliRunner().invoke(app, ["inspect", str(path), "--json"])
    assert result.exit_code == 0, result.output
    (node,) = json.loads(result.stdout)
    assert node["gpus"] == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert any("rows GPU4, GPU5, GPU6, GPU7 cut" in m for m in node["missing"])
    # the 8 NICs are shared by the 8 GPUs of the node, 4 of them cut: one NIC per GPU, as the whole matrix
    assert node["cluster_spec"]["scale_out"]["nics_per_gpu"] == 1


# -- item 7: compare passes the environment and transport the log shows --------------------------------------

P2P_OFF = "node-a:101:101 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1"


def _one_node_log(info: list[str], time_us: float) -> str:
    """One node of 8 H100, 4 GB all_reduce at ``time_us`` (busbw = 4294967296 / t x 2 x 7 / 8)."""
    algbw = 4294967296 / (time_us * 1e-6) / 1e9
    row = (f"  4294967296  1073741824  float  sum  -1  {time_us:.1f}  {algbw:.2f}  {algbw * 1.75:.2f}  0  "
           f"{time_us:.1f}  {algbw:.2f}  {algbw * 1.75:.2f}  0")  # fmt: skip
    return "\n".join([COMMAND, *info, HEADER, row]) + "\n"


def test_p2p_disable_in_the_env_echo_is_predicted_with_shm() -> None:
    probe = compare_nccl_tests(_one_node_log([P2P_OFF], 100000.0)).tables[0]
    assert "NCCL_P2P_DISABLE=1: predicted with it" in probe.settings.notes
    assert "read from the log: NCCL_P2P_DISABLE line 2" in probe.settings.notes
    # env_tiers: SHM through host memory, bounded by the H100's PCIe Gen5 x16 line rate (64 GB/s per
    # direction), far below its NVLink (~470 GB/s busbw)
    predicted = probe.rows[0].predicted
    assert predicted.busbw_bytes_per_s < 64e9
    at_model = _one_node_log([P2P_OFF], predicted.time_s * 1e6)
    assert compare_nccl_tests(at_model).tables[0].verdict == "healthy"  # the user's own setting: no fault
    # the same numbers without the env echo: far below an NVLink node (NVIDIA/nccl-tests #290: 473.6 GB/s)
    plain = compare_nccl_tests(_one_node_log([], predicted.time_s * 1e6)).tables[0]
    assert plain.verdict != "healthy" and plain.rows[0].flagged


def test_algo_and_proto_echoed_by_nccl_are_used_and_their_lines_named() -> None:
    info = [
        "node-a:101:101 [0] NCCL INFO NCCL_ALGO set by environment to Ring",
        "node-a:101:101 [0] NCCL INFO NCCL_PROTO set by environment to Simple",
    ]
    table = compare_nccl_tests(_one_node_log(info, 15870.0)).tables[0]
    assert (table.rows[0].predicted.algorithm, table.rows[0].predicted.protocol) == ("ring", "Simple")
    assert "read from the log: NCCL_ALGO line 2, NCCL_PROTO line 3" in table.settings.notes


def test_the_line_named_is_the_setting_not_prose() -> None:
    prose = "Rerun later with NCCL_P2P_DISABLE=1 it was slower."  # commentary: sets nothing
    table = compare_nccl_tests(_one_node_log([P2P_OFF, prose], 100000.0)).tables[0]
    assert "read from the log: NCCL_P2P_DISABLE line 2" in table.settings.notes


def test_socket_transport_from_info_is_predicted_with_tcp() -> None:
    # Two nodes over NET/Socket: the prediction uses the catalogue's tcp-socket transport, and says which line
    table = compare_nccl_tests(_info_log(_info(NVLS_OFF, network="Socket", gdr=False), 8.0)).tables[0]
    assert table.net is not None and table.net.key == "tcp-socket"
    assert any(n.startswith("the network ran over NET/Socket (line ") for n in table.assumptions)


COLLNET_ON = "node-a:101:101 [0] NCCL INFO NCCL_COLLNET_ENABLE set by environment to 1"
# NVIDIA/nccl src/plugin/net.cc: "NET/Plugin: Loaded collnet plugin %s (v8)" (the HPC-X SHARP plugin)
SHARP = "node-a:101:101 [0] NCCL INFO NET/Plugin: Loaded collnet plugin SHARP (v8)"


def test_collnet_enable_is_passed_where_the_switches_reduce() -> None:
    # with the SHARP plugin line: CollNet was set up, on Quantum-2 switches that reduce
    table = compare_nccl_tests(_info_log(_info(NVLS_OFF, COLLNET_ON, SHARP), 330.0)).tables[0]
    assert table.info.collnet_plugin == "SHARP"
    assert table.settings.engine_env == {"NCCL_COLLNET_ENABLE": "1"}
    assert "NCCL_COLLNET_ENABLE=1: predicted with it" in table.settings.notes


@pytest.mark.parametrize(
    "channels",
    [
        [],  # no channel line at all
        # NCCL >= 2.19 prints nChannels in the collnet place: equal counts say nothing (NVIDIA/nccl init.cc)
        [
            "node-a:101:130 [0] NCCL INFO 16 coll channels, 16 collnet channels, 0 nvls channels, 16 p2p "
            "channels"
        ],  # fmt: skip
    ],
)
def test_collnet_enabled_is_not_collnet_ran(channels: list[str]) -> None:
    # issue 9: NCCL_COLLNET_ENABLE=1 alone made the prediction use CollNet (516 GB/s against the 392.7 of
    # case_03 T7's Ring figure); without evidence it ran, predict what NCCL runs without it
    table = compare_nccl_tests(_info_log(_info(NVLS_OFF, COLLNET_ON, *channels), 330.0)).tables[0]
    assert table.settings.engine_env == {}
    assert any(n.startswith("NCCL_COLLNET_ENABLE=1: not applied to the prediction (enabled is not ran")
               for n in table.settings.notes)  # fmt: skip
    assert all(not r.predicted.algorithm.startswith("collnet") for r in table.rows)
    assert table.verdict == "healthy"


def test_collnet_enable_on_ethernet_switches_is_noted_not_applied() -> None:
    spec = ClusterSpec.from_dict(
        {"name": "roce", "nodes": 2, "accelerator": "h100-sxm",
         "scale_out": {"nic": "connectx-7", "nic_speed": "400 Gb/s", "fabric": "ethernet",
                       "switch": "spectrum-4-sn5600-800g"}}
    )  # fmt: skip
    table = compare_nccl_tests(_info_log(_info(NVLS_OFF, COLLNET_ON, SHARP), 330.0), cluster=spec).tables[0]
    (note,) = [n for n in table.settings.notes if n.startswith("NCCL_COLLNET_ENABLE=1: not applied")]
    assert "'spectrum-4-sn5600-800g' has no in-network reduction (SHARP)" in note
    assert table.settings.engine_env == {}


# -- item 6: VMs recognised from NCCL's topology XML ---------------------------------------------------------

CASE_21 = "case_21_aws_p4d_p5_nccl_topology_xml.txt"
# A hand-written NCCL_TOPO_DUMP_FILE of a 2 x H100 SXM VM (the layout of NVIDIA/nccl-tests #256's H200 VMs):
# both GPUs and the NIC on the flattened root bus 00 of one <cpu>, no PCIe switch, no <nvlink> listed.
VM_XML = """<system version="1">
  <cpu numaid="0" affinity="ffffffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:00:04.0" class="0x030200" vendor="0x10de" device="0x2330" link_speed="32.0 GT/s PCIe" link_width="16">
      <gpu dev="0" sm="90" rank="0" gdr="1"/>
    </pci>
    <pci busid="0000:00:05.0" class="0x030200" vendor="0x10de" device="0x2330" link_speed="32.0 GT/s PCIe" link_width="16">
      <gpu dev="1" sm="90" rank="1" gdr="1"/>
    </pci>
    <pci busid="0000:00:06.0" class="0x020700" vendor="0x15b3" device="0x1021" link_speed="32.0 GT/s PCIe" link_width="16">
      <nic><net name="mlx5_0" dev="0" speed="400000" port="1" gdr="1" maxconn="131072"/></nic>
    </pci>
  </cpu>
</system>
"""  # noqa: E501
QEMU_PORT = (
    '    <pci busid="0000:00:02.0" class="0x060400" vendor="0x1b36" device="0x000c" link_width="16"/>\n'
)


def _vm_finding(text: str, gpu: str | None = None) -> str | None:
    (node,) = inspect_node_text(text, source="vm.xml", gpu=gpu)
    return next((f.message for f in node.warnings if f.code == "vm"), None)


def test_flattened_nvlink_gpus_without_nvlink_are_a_vm() -> None:
    topology = NcclTopology.from_text(VM_XML)
    assert all(g.pci_switch is None and not g.nvlinks for g in topology.gpus)
    message = _vm_finding(VM_XML)  # sm=90: modelled as h100-sxm, an NVLink part
    assert message is not None
    assert message.startswith(
        "a virtual machine (NCCL topology dump): all 2 GPUs, NVLink parts, hang directly off the CPU (no "
        "PCIe switch, a flattened PCIe root) and the dump lists no NVLink"
    )
    assert "NCCL connects them through host memory (SHM, 'via SHM' in its INFO log)" in message
    # the same layout with PCIe GPUs (no NVLink to miss) is a plain PCIe box, not a VM by this signature
    assert _vm_finding(VM_XML, gpu="h100-pcie") is None


def test_a_hypervisor_pci_vendor_names_the_vm() -> None:
    text = VM_XML.replace("  </cpu>", QEMU_PORT + "  </cpu>")
    topology = NcclTopology.from_text(text)
    assert ("0000:00:02.0", "0x1b36") in topology.pci_vendors
    message = _vm_finding(text, gpu="h100-pcie")
    assert message is not None
    assert "PCI devices with a hypervisor's vendor ID: 0000:00:02.0 (0x1b36 Red Hat QEMU)" in message


def test_cloud_topology_files_are_not_called_vms(case_text: dict[str, str]) -> None:
    # AWS p5 (case 21): GPUs under PCIe switches, no <nvlink> (NVSwitch): a Nitro instance, P2P works
    for node in inspect_node_text(case_text[CASE_21], source=CASE_21):
        assert not any(f.code == "vm" for f in node.warnings)
