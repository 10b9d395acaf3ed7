"""Physics defects a new-user trial found: each test runs one command; its docstring holds the command,
what it printed and what the physics (or NCCL) says it should do."""

import pytest
import yaml
from tests.trial.commands import EXAMPLE, example_cluster, result_json
from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py


def test_nvls_tree_stages_network_bytes_in_host_memory_when_gpudirect_is_off():
    """``aifabric collective all_reduce --nodes 2 -s 1GB --env NCCL_NET_GDR_LEVEL=LOC`` printed 4269.06 us,
    busbw 439.21 GB/s (nvls_tree/Simple, "tree across 2 nodes through its 8 NVLS heads' NICs (262 GB/s
    algbw)"), 4 us from the 4265.06 us with GPUDirect RDMA on: the NICs keep their full rate. Ring with the
    same variable goes from 4952.81 us to 7339.11 us (x 1.48), the README's host staging (0.667 of the NIC's
    rate, NVIDIA/nccl #412). The same with ``scale_out.nic_path: SYS`` in a cluster YAML (nvls_tree 4269 us,
    ring 7358 us). NVLS-tree's inter-node tree crosses the same NICs, and the run is 100% scale-out bound:
    its time must grow by about 1/0.667 too (at least x 1.3, leaving room for the latency share)."""
    base = ["collective", "all_reduce", "--nodes", "2", "-s", "1GB"]
    on = result_json(base)
    off = result_json([*base, "--env", "NCCL_NET_GDR_LEVEL=LOC"])
    assert on["bottleneck"] == "scale-out"
    assert off["time_s"] >= 1.3 * on["time_s"], (on["algorithm"], on["time_s"], off["time_s"])


def test_more_nic_bandwidth_is_never_slower_for_a_fixed_algorithm(tmp_path):
    """``aifabric collective all_reduce -c my200.yaml --nodes 2 -s 8MiB`` (examples/cluster.yaml at 1:1 with
    ``nic_speed: 200 Gb/s``) printed 106.79 us (tree/LL128); with 400 Gb/s NICs 169.02 us (nvls_tree/Simple).
    That is NCCL's own choice: in NVIDIA/nccl v2.30.7 ``src/graph/tuning.cc`` (ncclTopoTuneModel) NVLS-tree's
    per-channel busBw is ``min(intraBw, bwInter x 2 (nNodes <= 2), perChMaxNVLSTreeBw)``, so it grows with the
    NICs, while Tree's is ``bwIntra`` at ``nNodes <= 2`` whatever the NICs; at 400 Gb/s NVLS-tree's price
    (100.9 us) falls below tree/LL128's (106.8 us) and NCCL runs it. ``ncclTopoGetAlgoTime`` prices
    ``lat + S / bw`` with no term for the NVLS pipeline's fill (68 us here, case 03), so NCCL's pick is slower
    than the plan it passed over. The product's rule "more bandwidth is never slower" therefore holds for
    each fixed algorithm/protocol (forced or as a candidate), and where the default is slower on the faster
    NICs its explanation says NCCL runs a pick slower than the next best, naming that one's time."""
    paths = {
        speed: example_cluster(tmp_path, f"nic{speed}", nic_speed=f"{speed} Gb/s") for speed in (200, 400)
    }
    base = ["collective", "all_reduce", "--nodes", "2", "-s", "8MiB"]
    runs = {speed: result_json([*base, "-c", path]) for speed, path in paths.items()}
    pairs = {s: run["candidates"] for s, run in runs.items()}
    times = {s: {(c["algorithm"], c["protocol"]): c["time_s"] for c in cands} for s, cands in pairs.items()}
    for pair, slow_nic_s in times[200].items():
        assert times[400][pair] <= slow_nic_s * 1.0001, (pair, slow_nic_s, times[400][pair])
    for algo, proto in (("nvls_tree", "Simple"), ("tree", "LL128"), ("ring", "LL128")):
        forced = {
            s: result_json([*base, "-c", p, "--algo", algo, "--proto", proto]) for s, p in paths.items()
        }
        assert {r["algorithm"] for r in forced.values()} == {algo}, forced
        assert forced[400]["time_s"] <= forced[200]["time_s"] * 1.0001, (algo, proto, forced)
    fast, slow = runs[400], runs[200]
    if fast["time_s"] > slow["time_s"]:
        best_s = min(times[400].values())
        assert best_s <= slow["time_s"] * 1.0001, (best_s, slow["time_s"])  # the 200 Gb/s plan is still there
        why = fast["explanation"]
        assert "though it is slower" in why and "tuner" in why, why
        assert f"{best_s * 1e6:.1f} us" in why.split("though it is slower")[1], why


def test_a_pcie_scale_up_never_runs_at_nvlink_rate(tmp_path):
    """``aifabric collective all_reduce -c pcie.yaml --ranks 8 -s 1GiB`` on examples/cluster.yaml (h100-sxm)
    with ``scale_up: {kind: pcie}`` printed busbw 364.46 GB/s, "ring over 8 ranks on scale-up at 370.8 GB/s
    per GPU"; ``--engine links`` the same, its hottest link "gpu[0]->pcie[0] at 98%": a PCIe link carrying
    NVLink 4's 370.8 GB/s, and ``cluster show`` lists "8-GPU NVLink 4 (Hopper) with NVSwitch gen 3" among the
    parts of a PCIe node. A GPU's PCIe 5.0 x16 link carries 32 GT/s x 16 lanes x 128/130 = 63 GB/s per
    direction (PCI-SIG PCIe 5.0 base specification), and a ring's busbw is at most each GPU's link rate.
    The combination is physical: a node that does not wire or expose an SXM part's NVLink (a VM hiding it)
    runs its peer traffic over PCIe, and ``aifabric`` discovery writes such nodes as ``kind: pcie``
    (discovery/node_spec.py). Expected: it runs at the PCIe rate, busbw <= 64 GB/s with both engines, and
    ``cluster show`` names the node's PCIe link, no NVLink and no NVSwitch."""
    spec = yaml.safe_load(EXAMPLE.read_text())
    spec["scale_up"] = {"kind": "pcie"}
    path = tmp_path / "pcie.yaml"
    path.write_text(yaml.safe_dump(spec))
    args = ["collective", "all_reduce", "-c", str(path), "--ranks", "8", "-s", "1GiB"]
    for engine in ("formula", "links"):
        busbw = result_json([*args, "--engine", engine])["busbw_bytes_per_s"]
        assert busbw <= 64e9, (engine, busbw)
    shown = runner.invoke(app, ["cluster", "show", str(path)])
    assert shown.exit_code == 0, shown.stdout + shown.stderr
    assert "PCIe Gen5" in shown.stdout and "NVSwitch" not in shown.stdout and "NVLink" not in shown.stdout
