"""The across-node share of a node's NICs (``gdr_network_factor``) and the note ``inspect`` prints with it."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.discovery.node_layout import NodeLayout
from aifabric.discovery.node_paths import GDR_PATHS, NO_GDR_FACTOR, GpuNicPath
from aifabric.discovery.node_spec import gdr_network_factor

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

FIXTURES = Path(__file__).parent / "fixtures"

PATHS = ("PIX", "PXB", "PHB", "NODE", "SYS")
LINKS = ((24e9, "Gen4 x16"), (48e9, "Gen5 x16"), (12e9, "Gen4 x8"), (6e9, "Gen3 x8"))


@st.composite
def _layouts(draw: st.DrawFn) -> tuple[NodeLayout, dict[str, GpuNicPath | None], int, float]:
    """A node of 1-16 GPUs and 1-32 NICs, each GPU paired to a random NIC over a random path (some with a
    PCIe link speed), the spec's GPUs per NIC and one NIC's effective rate."""
    n_gpus = draw(st.integers(1, 16))
    n_nics = draw(st.integers(1, 32))
    gpus = tuple(f"GPU{i}" for i in range(n_gpus))
    nics = tuple(f"NIC{i}" for i in range(n_nics))
    pairing: dict[str, GpuNicPath | None] = {}
    pcie: dict[tuple[str, str], tuple[float, str]] = {}
    for g in gpus:
        nic, path = draw(st.sampled_from(nics)), draw(st.sampled_from(PATHS))
        pairing[g] = GpuNicPath(g, nic, nic, path, path in GDR_PATHS, "")
        if draw(st.booleans()):
            pcie[(g, nic)] = draw(st.sampled_from(LINKS))
    layout = NodeLayout("nvidia-smi", gpus, nics, {}, {}, {}, {}, {}, gpu_nic_pcie=pcie)
    gpus_per_nic = draw(st.sampled_from([d for d in range(1, n_gpus + 1) if n_gpus % d == 0]))
    return layout, pairing, gpus_per_nic, draw(st.floats(1e9, 120e9))


@settings(max_examples=300, deadline=None)
@given(_layouts())
def test_network_factor_stays_a_share_of_the_modelled_nics(case):
    """Every GPU's share of its modelled NIC bandwidth is in (0, 1] (the docstring's derivation), so their
    mean is too, whatever the pairing, the sharing or the PCIe paths."""
    layout, pairing, gpus_per_nic, nic = case
    factor = gdr_network_factor(layout, pairing, nic, gpus_per_nic)
    assert 0.0 < factor <= 1.0, factor


def test_nics_shared_unevenly_do_not_give_more_than_the_modelled_share():
    """``topo_nv18_6nic_gpus_without_nic_cut.txt``: 6 NICs for the 7 GPUs read (8 in the node, modelled as 4
    NICs of 2 GPUs). The pairing puts GPU0 (PIX) and GPU3 (SYS) on NIC0, so NIC0 runs staged (2/3) and each of
    the two gets half of it, 2/3 of its modelled half-NIC; GPU1, GPU5 (SYS, alone on NIC4, NIC5) and GPU2,
    GPU4, GPU6 (PIX, alone) get a whole NIC, at least their modelled half: 1. Mean: (2 x 2/3 + 5) / 7 =
    0.905 (the former count, 5 NICs' worth over 7 // 2 = 3 modelled NICs, gave 1.67)."""
    r = runner.invoke(app, ["inspect", str(FIXTURES / "topo_nv18_6nic_gpus_without_nic_cut.txt"), "--json"])
    assert r.exit_code == 0, r.stdout + r.stderr
    node = json.loads(r.stdout)
    node = node[0] if isinstance(node, list) else node
    assert node["network_factor"] == pytest.approx((2 * NO_GDR_FACTOR + 5) / 7)


def test_note_names_the_pcie_link_that_hides_the_staging():
    """``public4/topo_4gpu_nv12_26nic_all_sys_cut.txt``: A100 SXM (PCIe Gen4 x16: 32 GB/s x 0.900 DMA payload
    = 28.8 GB/s), every NIC SYS, 400 Gb/s ConnectX-7 (50 GB/s x 0.983 = 49.15 GB/s). Staged in host memory the
    NIC gives 49.15 x 0.667 = 32.8 GB/s, above the GPU's 28.8: the PCIe link sets the figure, as with
    GPUDirect RDMA, and the 2-node ring busbw is 4 GPUs x 28.8 = 115.2 GB/s (ring all_reduce busbw across
    nodes is the node's NIC bandwidth together). The note says so with those numbers."""
    path = FIXTURES / "public4" / "topo_4gpu_nv12_26nic_all_sys_cut.txt"
    r = runner.invoke(app, ["inspect", str(path)])
    assert r.exit_code == 0, r.stdout + r.stderr
    line = next(x for x in r.stdout.splitlines() if "of one GPU-local NIC per GPU" in x)
    assert "67%" in line and "32.8 GB/s" in line and "28.8 GB/s per GPU" in line, line
    assert "the PCIe link sets it" in line, line
    j = runner.invoke(app, ["inspect", str(path), "--json"])
    node = json.loads(j.stdout)
    node = node[0] if isinstance(node, list) else node
    assert node["across_node_bound"] == "gpu_pcie_link"
    ring2 = next(e for e in node["expected_busbw"] if e["nodes"] == 2)
    assert ring2["busbw_bytes_per_s"] == pytest.approx(4 * node["across_node_per_gpu_bytes_per_s"], rel=0.01)
