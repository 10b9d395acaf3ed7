"""Defects a trial of reading machines (NCCL topology dumps, nvidia-smi topo -m) found: each test runs one
command; its docstring holds the command, what it printed and what the cited measurement says."""

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from aifabric import catalog
from aifabric.cli.app import app

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

#: PCIe bus of each H100 of an HGX H100 board as NCCL dumps it; its ConnectX-7 sits on the next bus number.
_BUSES = (0x1B, 0x43, 0x52, 0x61, 0x9D, 0xC3, 0xD1, 0xDF)
_GEN5_X16 = 'link_speed="32.0 GT/s PCIe" link_width="16"'


def _hgx_h100_dump() -> str:
    """``NCCL_TOPO_DUMP_FILE`` of an HGX H100 node as NCCL 2.2x writes it: two sockets, each GPU and its
    400 Gb/s ConnectX-7 under one Gen5 x16 PCIe switch (NVIDIA HGX H100: every GPU and NIC on PCIe Gen5
    x16), 18 NVLinks from each GPU to the NVSwitches."""
    out = ['<system version="1">']
    for sock in range(2):
        out.append(f'  <cpu numaid="{sock}" affinity="ffffffff" arch="x86_64" vendor="GenuineIntel">')
        for g in range(sock * 4, sock * 4 + 4):
            b = _BUSES[g]
            out += [
                f'    <pci busid="0000:{b - 1:02x}:00.0" class="0x060400" {_GEN5_X16}>',
                f'      <pci busid="0000:{b:02x}:00.0" class="0x030200" {_GEN5_X16}>',
                f'        <gpu dev="{g}" sm="90" rank="{g}" gdr="1">',
                '          <nvlink target="fffffff:ffff:ff" count="18" tclass="0x068000"/>',
                "        </gpu>",
                "      </pci>",
                f'      <pci busid="0000:{b + 1:02x}:00.0" class="0x020700" {_GEN5_X16}>',
                f'        <nic><net name="mlx5_{g}" dev="{g}" speed="400000" port="1" gdr="1"/></nic>',
                "      </pci>",
                "    </pci>",
            ]
        out.append("  </cpu>")
    return "\n".join([*out, "</system>"]) + "\n"


def test_a_gen5_nic_path_does_not_cap_a_dgx_h100_rail_below_what_it_measured(tmp_path):
    """``aifabric inspect hgx.xml`` on the NCCL dump above printed "2 nodes, NCCL_ALGO=Ring (the fabric's
    figure): 380.66 GB/s" with "(across nodes: each rail is capped at 48 GB/s by its GPU-NIC PCIe path, Gen5
    x16; NCCL's model: width x per-lane speed / 80)". 48 GB/s is the figure NCCL's graph search scores a
    Gen5 x16 path with, not what it carries: on exactly this hardware (Dell XE9680, 8 x H100 SXM, 8 x
    ConnectX-7 400G on Gen5, 2 nodes, NCCL_ALGO=Ring) nccl-tests measured 391.39 GB/s busbw at 4 GiB
    (NVIDIA/nccl-tests #309 T7, shared case 03), above the 8 x 48 = 384 GB/s the cap allows; ``aifabric
    collective all_reduce -c <the ClusterSpec inspect printed> --nodes 2 -s 4GiB --env NCCL_ALGO=Ring``
    gives 389.69. The inspect figure should be within 2 % of the measurement, as the collective's is."""
    dump = tmp_path / "hgx.xml"
    dump.write_text(_hgx_h100_dump())
    r = runner.invoke(app, ["inspect", str(dump), "--json"])
    assert r.exit_code == 0, r.stdout + r.stderr
    expected = json.loads(r.stdout)[0]["expected_busbw"]
    two = next(e for e in expected if e["nodes"] == 2)
    measured = 391.39e9  # NVIDIA/nccl-tests #309 T7, 4294967296 B row, out-of-place busbw
    assert two["busbw_bytes_per_s"] >= 0.98 * measured, two


def _inline_nic_cluster(path: Path, speed: str) -> None:
    """A 4 x 8 H100 cluster file whose scale-out NIC is an inline part (README: a ``parts:`` section of the
    cluster YAML) of ``speed``."""
    nic = {"name": "Lab NIC", "speed": speed, "power": "10 W", "payload_efficiency": 0.98}
    nic.update({"latency": "2.7 us", "source": "lab part for a trial"})
    spec = {"name": "lab", "accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 4}
    spec["scale_up"] = {"kind": "nvswitch"}
    spec["scale_out"] = {"nic": "labnic", "fabric": "infiniband", "switch": "quantum-2-qm9700", "tiers": 2}
    spec["parts"] = {"nics": {"labnic": nic}}
    path.write_text(yaml.safe_dump(spec))


def test_a_sweep_rerun_after_its_cluster_file_changed_does_not_reuse_old_results(tmp_path):
    """``aifabric sweep sw.yaml --db s.db --csv a.csv`` over ``cluster: lab.yaml`` (4 x 8 H100 on an inline
    100 Gb/s NIC; ``vary: nodes: [2, 4]``, all_reduce 1 GiB) stored 2 points; the NIC was then changed to
    200 Gb/s in lab.yaml and the same command printed "0 point(s) evaluated, 2 already in s.db (resumed)",
    its CSV still the 100 Gb/s times (2 nodes: 11,365.7 us). The point hash is the file's path, not its
    content (sweep/grid.py SweepPoint.params), so an edited design is answered with the old design's numbers.
    Doubling the NIC rate must shorten the 2-node all_reduce, whose bottleneck is the NICs."""
    lab = tmp_path / "lab.yaml"
    _inline_nic_cluster(lab, "100 Gb/s")
    sweep = {"cluster": str(lab), "vary": {"nodes": [2, 4]}}
    sweep["collectives"] = [{"op": "all_reduce", "sizes": ["1 GiB"]}]
    (tmp_path / "sw.yaml").write_text(yaml.safe_dump(sweep))

    def two_node_time(csv: Path) -> float:
        args = ["sweep", str(tmp_path / "sw.yaml"), "--db", str(tmp_path / "s.db"), "--csv", str(csv)]
        r = runner.invoke(app, args)
        assert r.exit_code == 0, r.stdout + r.stderr
        rows = [line.split(",") for line in csv.read_text().splitlines()]
        col = {name: i for i, name in enumerate(rows[0])}
        return next(float(x[col["time_s"]]) for x in rows[1:] if x[col["gpus"]] == "16")

    slow = two_node_time(tmp_path / "a.csv")
    _inline_nic_cluster(lab, "200 Gb/s")
    catalog.reload_catalog()  # the rerun is a new process: no inline part of the first run is left
    fast = two_node_time(tmp_path / "b.csv")
    assert fast < slow, (slow, fast)


#: ``nvidia-smi topo -m`` of a two-socket Grace board (a GB200 compute tray: the ``GPU NUMA ID`` column
#: marks GPU memory as NUMA nodes of the OS, NVLink-C2C), each Grace with two GPUs and three NICs: NODE to
#: the GPUs of its own socket, SYS to the others.
GRACE_TOPO = """\
\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tNIC1\tNIC2\tNIC3\tNIC4\tNIC5\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tNV18\tNV18\tNV18\tNODE\tNODE\tSYS\tSYS\tNODE\tSYS\t0-71\t0\t\t2
GPU1\tNV18\t X \tNV18\tNV18\tNODE\tNODE\tSYS\tSYS\tNODE\tSYS\t0-71\t0\t\t10
GPU2\tNV18\tNV18\t X \tNV18\tSYS\tSYS\tNODE\tNODE\tSYS\tNODE\t72-143\t1\t\t18
GPU3\tNV18\tNV18\tNV18\t X \tSYS\tSYS\tNODE\tNODE\tSYS\tNODE\t72-143\t1\t\t26
NIC0\tNODE\tNODE\tSYS\tSYS\t X \tPIX\tSYS\tSYS\tNODE\tSYS\t\t\t\t
NIC1\tNODE\tNODE\tSYS\tSYS\tPIX\t X \tSYS\tSYS\tNODE\tSYS\t\t\t\t
NIC2\tSYS\tSYS\tNODE\tNODE\tSYS\tSYS\t X \tPIX\tSYS\tNODE\t\t\t\t
NIC3\tSYS\tSYS\tNODE\tNODE\tSYS\tSYS\tPIX\t X \tSYS\tNODE\t\t\t\t
NIC4\tNODE\tNODE\tSYS\tSYS\tNODE\tNODE\tSYS\tSYS\t X \tSYS\t\t\t\t
NIC5\tSYS\tSYS\tNODE\tNODE\tSYS\tSYS\tNODE\tNODE\tSYS\t X \t\t\t\t

NIC Legend:

  NIC0: mlx5_0
  NIC1: mlx5_1
  NIC2: mlx5_2
  NIC3: mlx5_3
  NIC4: mlx5_4
  NIC5: mlx5_5
"""

#: nvidia-smi's path types, nearest first (its topo -m legend).
_NEAR_FIRST = ("PIX", "PXB", "PHB", "NODE", "SYS")


def test_gpudirect_rdma_is_never_granted_to_a_farther_nic_than_one_it_is_refused(tmp_path):
    """``aifabric inspect grace.txt --gpu gb200 --nic-speed "400 Gb/s" --json`` (the matrix above) gave GDR
    false for every NODE path (each GPU's own socket: "staged in host memory, ~2/3 of the NIC") and GDR true
    for every SYS path (the other socket's NICs, across the inter-CPU link), then paired each GPU with a
    NODE NIC without GDR (network factor 0.667, 2-node ring 130.8 GB/s). NCCL grants GPUDirect RDMA when the
    path is at most a level (ncclTopoCheckGdr, src/graph/paths.cc: ``distance <= netGdrLevel``; NCCL 2.27+
    also reaches the GPU's own Grace's NICs over C2C, NET_GDR_C2C default 1), so a NIC farther away never
    gets it when a nearer one is refused; node_paths.py's own C2C note says "a NIC of the other CPU stays
    SYS, without it"."""
    topo = tmp_path / "grace.txt"
    topo.write_text(GRACE_TOPO)
    r = runner.invoke(app, ["inspect", str(topo), "--gpu", "gb200", "--nic-speed", "400 Gb/s", "--json"])
    assert r.exit_code == 0, r.stdout + r.stderr
    paths = json.loads(r.stdout)[0]["gdr"]
    for p in paths:
        if not p["gdr"]:
            farther = [
                q
                for q in paths
                if q["gpu"] == p["gpu"] and _NEAR_FIRST.index(q["path"]) > _NEAR_FIRST.index(p["path"])
            ]
            assert not any(q["gdr"] for q in farther), (p, farther)


#: NVIDIA's GB200 NVL72 specification table (nvidia.com/en-us/data-center/gb200-nvl72): 72 Blackwell GPUs,
#: "HBM3e: up to 13.5 TB", "GPU memory bandwidth: 576 TB/s" (72 x 8 TB/s, catalogue gb200 hbm_bandwidth).
NVL72_SPEC = "72 Blackwell GPUs, 13.5 TB of HBM3e, 576 TB/s of memory bandwidth"


def _claims(text: str) -> list[dict]:
    r = runner.invoke(app, ["announcement", text, "-c", "gb200-nvl72", "--json"])
    assert r.exit_code == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def test_an_announcement_reports_every_figure_it_reads():
    """``aifabric announcement "72 Blackwell GPUs, 13.5 TB of HBM3e, 576 TB/s of memory bandwidth" -c
    gb200-nvl72`` listed two claims, 72 GPUs and 576 TB/s: "13.5 TB" vanished without a verdict, and alone
    (``announcement "13.5 TB of HBM3e"``) it exits 2 with "no number with a unit (TB/s, Gb/s, GPUs, MW)
    found in the text", though 13.5 TB is one. A checker that skips a figure silently reads as if it had
    checked it; each figure gets a row (matches, differs or cannot verify: 72 x 186 GB = 13.4 TB here)."""
    claims = _claims(NVL72_SPEC)
    assert any("13.5" in c["claim"] for c in claims), claims


def test_an_announced_memory_bandwidth_is_checked_against_hbm():
    """The same text: "576 TB/s: cannot verify: no modelled bandwidth figure is within 5% (have: scale-up
    domain bandwidth, ...)". The model has the rack's HBM, 72 x 8,000 GB/s = 576 TB/s (``aifabric ladder
    gb200-nvl72`` prints HBM 8,000 GB/s per GPU), and the text says "memory bandwidth": the claim matches."""
    claim = next(c for c in _claims(NVL72_SPEC) if c["claim"].startswith("576"))
    assert claim["status"] == "matches", claim
