"""Public outputs, tenth set (``fixtures/public9/README.md`` names each source; each file's first line too):
what the readers make of them.

Logs: rows, first and last size with the out-of-place busbw as printed (GB/s), collective, ranks, nodes, GPU
and release; where a text holds no nccl-tests table, why. NCCL INFO excerpts: the release, the network and
its devices, link layers, the transports inside a node, the ranks, whether trees were printed. Topologies:
GPUs, NICs, NVLink, the nearest NIC, NUMA nodes. ibstatus: the ports and their rates. Inputs ``inspect``
has no reader for (ibdev2netdev, show_gids, ethtool, dcgmi, nvlink capabilities, NCCL's topology log, sysfs
XGMI counts, INFO lines): one line, exit 2, naming what the text is.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.discovery import test_public_outputs2 as checks  # the checks the third set makes
from tests.discovery.test_public_logs import Read  # what one table must read as
from tests.discovery.test_public_outputs3 import assert_fixtures_covered
from tests.discovery.test_public_outputs5 import InfoRead, info_read
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.discovery.ib_ports import port_rates_in_text
from aifabric.discovery.nccl_info import parse_nccl_info

FIXTURES = Path(__file__).parent / "fixtures" / "public9"

LOGS: dict[str, Read] = {
    # a VM: every bus ID printed [0x00]; one 16 GiB row, busbw/algbw = 479.97/274.27 = 1.75 = 2 x 7/8
    "h200_vm_one_row_16g_bus_id_zero.log": Read(
        1, (17179869184, 479.97), (17179869184, 479.97), "all_reduce", 8, 1, "NVIDIA H200"
    ),
    # rccl-tests' banner block ("RCCL version : 2.28.3-amdsmi-bdf-topology:360c5c6+", "Hostname :"), no
    # rank lines: the ranks, and so sum/-1's collective (all_reduce or reduce_scatter), stay open; the
    # 32 KiB row cut after its algbw
    "rccl_version_block_hostname_librccl_rows_cut.log": Read(
        5, (1024, 0.04), (16384, 0.54), None, None, None, None, "2.28.3"
    ),
}

#: Texts without an nccl-tests table, and what the reader says of them.
NO_TABLE = {
    "alltoall_h800_v2270_preview_tagged_2x2_header_cut.log": "the text stops after the run's header (line 9)",
}

#: INFO excerpts: (release, network, its devices, link layers, transports inside a node, ranks, trees).
INFO: dict[str, InfoRead] = {
    # before: ("2.24.3", None, (), (), (), None, False): the lines were pasted without "host:pid:tid [0]
    # NCCL INFO", so only the bare banner was read; "NET/IB : Using [0]ibp0:1/IB/SHARP ... [7]ibp7:1/IB/
    # SHARP", "Using network IBext_v8" and "ncclCommInitRankConfig comm 0x... rank 0 nranks 8" say the rest
    "info_nccl2243_unprefixed_lines_ibp_sharp_ras_mnnvl_cut.log": (
        "2.24.3",
        "IBext_v8",
        tuple(f"ibp{k}:1" for k in range(8)),
        ("IB",),
        (),
        8,
        False,
    ),
    # "[3] NCCL INFO ...": the device only, no host; "rank 3 nranks 8" on each Init COMPLETE line
    "info_device_only_prefix_init_timings_8r_cut.log": (None, None, (), (), (), 8, False),
}

#: Topologies: GPUs read, NICs, (NVLink pairs, links per pair), GPU -> (nearest NIC, path), NUMA nodes.
TOPOLOGIES: dict[str, checks.TopologyRead] = {
    # CPU and NUMA affinity cells blank: no NUMA node known
    "topo_2gpu_nv12_8nic_blank_affinity_cells.txt": (
        2,
        8,
        (1, 12),
        {"GPU0": ("NIC6", "PXB"), "GPU1": ("NIC7", "PXB")},
        set(),
    ),
    # the header starts at column 0 ("GPU0    GPU1 ..."); row GPU5 cut after NIC1; NUMA nodes 3, 1, 7
    "topo_a100_header_at_column0_10nic_numa_3_1_7_cut.txt": (
        5,
        10,
        (10, 12),
        {"GPU0": ("NIC0", "PXB"), "GPU2": ("NIC2", "PXB"), "GPU4": ("NIC4", "PXB")},
        {1, 3, 7},
    ),
    # header "  \tGPU0\tGPU1...": two blanks and a tab; only row GPU0 whole
    "topo_vllm_omni_indented_tab_header_18nic_nv12_cut.txt": (1, 18, (0, 0), {"GPU0": ("NIC4", "PXB")}, {0}),
    # four RTX 3090 on two NVLink bridges (NV4), PHB/NODE otherwise, no NIC
    "topo_quad_3090_nv4_pairs_phb_node_after_smi_version.txt": (4, 0, (2, 4), {}, {0}),
}

#: ibstatus: (device, port, active, Gb/s) of each port whose rate the text gives whole.
IB_PORTS = {
    # RoCE bonds at "200 Gb/sec (4X HDR)"; the fourth cut in its state
    "ibstatus_mlx5_bond_roce_200g_cut.txt": [
        ("mlx5_bond_0", 1, True, 200.0),
        ("mlx5_bond_1", 1, True, 200.0),
        ("mlx5_bond_2", 1, True, 200.0),
    ],
}

#: Inputs ``inspect`` cannot use, and its one line (before: no hint at all, unless said otherwise).
REFUSED = {
    "ibdev2netdev_column_t_comments_12dev.txt": "(it looks like ibdev2netdev output",
    "ibdev2netdev_one_vf_then_ifconfig_cut.txt": "(it looks like ibdev2netdev output",
    "show_gids_empty_then_ethtool_veth_ibv_devices_cut.txt": "(it looks like show_gids output",
    "ethtool_i_then_ethtool_s_mlx5_cut.txt": "(it looks like ethtool output",
    "ethtool_s_grep_prio_counters_no_header.txt": "(it looks like ethtool output",
    # an ibv_devinfo -v port block copied without its "hca_id:" line
    "ibv_devinfo_v_port_block_without_hca_id_cut.txt": "(it looks like ibv_devinfo output",
    # while the ibv_devinfo hint was widened to port keys, ibstatus (which shares "link_layer:") read as it
    "ibstatus_mlx5_bond_roce_200g_cut.txt": "(it looks like ibstat or ibstatus output",
    "dcgmi_nvlink_status_8gpu_18_links_up.txt": "(it looks like dcgmi nvlink output",
    # "Link 0, P2P is supported: true": nvidia-smi nvlink --capabilities
    "nvlink_capabilities_v100_link_p2p_supported_cut.txt": "(it looks like nvidia-smi nvlink output",
    "nccl_system_dump_unprefixed_nvs_4cpu_pairs_cut.txt": "(it looks like NCCL's topology log",
    "info_rccl_system_dump_xgmi_mi100_cut.log": "(it looks like NCCL's topology log",
    "xgmi_num_links_sysfs_matrix_mi250.txt": "(it looks like the XGMI link counts of AMD GPUs",
    "info_nccl2243_unprefixed_lines_ibp_sharp_ras_mnnvl_cut.log": "(it looks like NCCL_DEBUG=INFO lines",
    "info_device_only_prefix_init_timings_8r_cut.log": "(it looks like NCCL_DEBUG=INFO lines",
    # rows GPU3-GPU7 and NIC0-NIC7 without the header line: the reader asks for it (its own policy)
    "topo_rows_from_gpu3_then_nic_rows_tabs_numa_1_4_5_6_7.txt": "the matrix starts at row GPU3 without",
}


def test_every_fixture_is_covered_and_names_its_source() -> None:
    covered = set(LOGS) | set(NO_TABLE) | set(INFO) | set(TOPOLOGIES) | set(IB_PORTS) | set(REFUSED)
    assert_fixtures_covered(FIXTURES, covered, 15)


def _info(path: Path, want: InfoRead) -> None:
    assert info_read(path) == want


def _ports(path: Path, want: list[tuple[str, int, bool, float]]) -> None:
    ports = port_rates_in_text(path.read_text(encoding="utf-8"))
    assert [(p.device, p.port, p.active, p.gbps) for p in ports] == want


def _refused(path: Path, reason: str) -> None:
    checks.assert_refused(["inspect", str(path)], reason)


#: Each table above and the check its fixtures go through.
_CHECKED: tuple[tuple[dict[str, Any], Callable[[Path, Any], None]], ...] = (
    (LOGS, checks.assert_log_reads),
    (NO_TABLE, checks.assert_no_table),
    (INFO, _info),
    (TOPOLOGIES, checks.assert_topology_reads),
    (IB_PORTS, _ports),
    (REFUSED, _refused),
)
_CASES = [(check, name, want) for table, check in _CHECKED for name, want in sorted(table.items())]


@pytest.mark.parametrize(("check", "name", "want"), _CASES, ids=[f"{c.__name__}-{n}" for c, n, _ in _CASES])
def test_each_fixture_reads_as_its_table_says(
    check: Callable[[Path, Any], None], name: str, want: Any
) -> None:
    check(FIXTURES / name, want)


def test_info_lines_without_their_prefix_read_as_with_it() -> None:
    # the same lines under NCCL's "host:pid:tid [dev] NCCL INFO " prefix read the same, the banner aside
    # (NCCL prints it to stdout without the prefix)
    lines = (FIXTURES / "info_nccl2243_unprefixed_lines_ibp_sharp_ras_mnnvl_cut.log").read_text().splitlines()
    bare = parse_nccl_info(lines)
    prefixed = parse_nccl_info([f"h:1:1 [0] NCCL INFO {line}" for line in lines])
    fields = ("network", "plugin", "collnet_plugin", "net_devices", "link_layers", "n_ranks")
    fields = (*fields, "nvls_available")
    assert [getattr(bare, f) for f in fields] == [getattr(prefixed, f) for f in fields]
    assert bare.env == prefixed.env == {"NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_PCI_RELAXED_ORDERING": "1"}
    assert bare.nvls_available is True  # "NVLS multicast support is available on dev 0"


def test_a_bare_line_is_read_only_where_it_starts_with_an_info_format() -> None:
    # prose or a row that mentions a format mid-line is not NCCL's message; nor is nccl-tests' own
    # "NCCL version" line without "+cuda" (the banner)
    info = parse_nccl_info(
        [
            "we then saw Using network Socket in the log",
            "note: NVLS multicast support is not available here?",
            "NCCL version 2.19.3 (nccl-tests)",
            "  1048576  262144  float  sum  -1  10.0  104.86  183.50  0",
        ]
    )
    assert info.empty


def test_nvlink_of_a_cut_row_the_node_counts_names_the_gpu() -> None:
    # before: "modelled as h100-sxm (assumed)" ("no NVLink in the matrix") while the same report counted 2
    # GPUs joined by NV12: row GPU1 is cut in its NIC cells but its GPU cells are whole, so the node counts
    # it and its NVLink; NV12 between GPUs is an A100 SXM board (node_layout's _NV_GPU), as for whole rows
    path = FIXTURES / "topo_vllm_omni_indented_tab_header_18nic_nv12_cut.txt"
    r = CliRunner().invoke(app, ["inspect", str(path), "--json"])
    assert r.exit_code == 0, r.output
    node = json.loads(r.stdout)
    node = node[0] if isinstance(node, list) else node
    assert node["accelerator"] == "a100-sxm-80gb"
    assert any("NV12 between GPUs" in a for a in node["assumptions"])
