"""Physics and documentation defects a new-user trial found (session 9): each test runs one command; its
docstring holds the command, what it printed and what the physics, a datasheet or the README says."""

import re
from pathlib import Path

import pytest
from tests.trial.commands import example_cluster, result_json
from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

README = (Path(__file__).parents[2] / "README.md").read_text()


def test_a_nic_faster_than_its_switch_ports_runs_at_the_port_speed(tmp_path):
    """examples/cluster.yaml at 1:1 on InfiniBand with ``nic: connectx-8, nic_speed: 800 Gb/s`` under
    ``switch: quantum-2-qm9700`` (64 x 400 Gb/s NDR ports, catalogue and NVIDIA's QM9700 datasheet) is
    accepted:
    ``aifabric collective all_reduce -c cx8.yaml -s 1GiB --algo ring --proto Simple`` printed "a domain's
    NICs 786.40" GB/s and 8407.2 us, against 393.20 GB/s and 8799.7 us with ConnectX-7 at 400 Gb/s on the
    same switches (also a 16-node file without nic_speed: 6693.96 vs 7084.89 us). ``cluster show`` sizes
    the QM9700 as 32 ports of 800G (clos._radix: ports x port speed / link speed) and fits 1.6T twin-port
    optics in its NDR cages. A link runs at the slower end's rate: an NDR port carries 400 Gb/s. Expected:
    the file refused (exit 2 naming the switch or the NIC speed) or the NICs costed at 400 Gb/s, never
    faster than the ConnectX-7 cluster."""
    ib = {"fabric": "infiniband", "switch": "quantum-2-qm9700"}
    cx8 = example_cluster(tmp_path, "cx8", nic="connectx-8", nic_speed="800 Gb/s", **ib)
    cx7 = example_cluster(tmp_path, "cx7", nic="connectx-7", nic_speed="400 Gb/s", **ib)
    args = ["collective", "all_reduce", "-s", "1GiB", "--algo", "ring", "--proto", "Simple"]
    r = runner.invoke(app, [*args, "-c", cx8, "--json"])
    if r.exit_code == 2:
        assert "switch" in r.stderr or "nic" in r.stderr, r.stderr
        return
    assert r.exit_code == 0, r.stdout + r.stderr
    fast, slow = result_json([*args, "-c", cx8]), result_json([*args, "-c", cx7])
    assert fast["time_s"] >= 0.99 * slow["time_s"], fast["explanation"]


def _readme(pattern: str) -> float:
    match = re.search(pattern, README)
    assert match, pattern
    return float(match.group(1))


@pytest.mark.parametrize(
    ("claim", "args", "field", "scale"),
    [
        (
            r"8 x H100, all_reduce 4 GiB, NVLS \(nccl-tests #290\) \| 473\.6 GB/s busbw \| ([\d.]+) \|",
            ["--nodes", "1", "-s", "4GiB"],
            "busbw_bytes_per_s",
            1e9,
        ),
        (
            r"4 x V100 PCIe, 128 MB \(Sheffield, NCCL 2\.8\.3\) \| 9\.40 \| ([\d.]+) \|",
            ["-c", "v100-pcie-4gpu", "-s", "128MB"],
            "busbw_bytes_per_s",
            1e9,
        ),
        (
            r"2 x 8 H100, 1 GB all_reduce, 4\.27 ms with GDR, ([\d.]+) ms without",
            ["-c", "h100-ib-2node", "-s", "1GB", "--env", "NCCL_NET_GDR_LEVEL=LOC"],
            "time_s",
            1e-3,
        ),
        (
            r"\(`--embedding-chunks --virtual-stages 8 --tp-comm-overlap`: [^)]+\), it runs at"
            r"\s+([\d.]+)% MFU",
            "train -m llama3-405b --nodes 2048 --tp 8 --pp 16 --dp 128 -B 2048 --seq-len 8192 --zero 2 "
            "--embedding-chunks --virtual-stages 8 --tp-comm-overlap",
            "mfu",
            0.01,
        ),
    ],
    ids=["h100-nvls-4GiB", "v100-pcie-128MB", "h100-2node-no-gdr", "llama3-405b-16k-embedding-chunks"],
)
def test_the_readme_figures_are_what_the_product_prints(claim, args, field, scale):
    """README.md's accuracy table and transport paragraph quote the model's figures. Printed now:
    ``aifabric collective all_reduce --nodes 1 -s 4GiB``: busbw 478.12 GB/s (README: 481.8);
    ``aifabric collective all_reduce -c v100-pcie-4gpu -s 128MB``: busbw 9.58 GB/s (README: 9.98; the
    SHM path tests/collectives/test_trial13_pcie.py describes); ``aifabric collective all_reduce -c
    h100-ib-2node -s 1GB --env NCCL_NET_GDR_LEVEL=LOC``: 6135.05 us (README: 5.96 ms); ``aifabric train -m
    llama3-405b --nodes 2048 --tp 8 --pp 16 --dp 128 -B 2048 --seq-len 8192 --zero 2 --virtual-stages 4``:
    MFU 33.9% (README: 35.1%, the figure tests/training/test_training_public.py calls "before"). The README
    has since moved that sentence to Llama 3's own pipeline (Sec. 3.3.2: one-layer chunks, V = 8, with the
    embedding and the output layer in chunks of their own) and quotes 42.5% for it; the figure is the
    16,384-GPU row of tests/training/test_training_public.py, which runs with TP overlapped
    (``--tp-comm-overlap``): 41.7% printed (42.0% before the GEMMs ran in userbuffer chunks). Expected:
    the README's figure equals the printed one to its last digit."""
    quoted = _readme(claim)
    command = args.split() if isinstance(args, str) else ["collective", "all_reduce", *args]
    printed = result_json(command)[field] / scale
    digits = len(str(quoted).split(".")[1])
    assert round(printed, digits) == quoted, (printed, quoted)


def test_a_chakra_trace_of_a_step_is_timed_no_faster_than_the_step(tmp_path):
    """``aifabric train -m llama3-8b --nodes 2 --tp 8 -B 16 --chakra et/`` printed a 1.259 s step whose DP
    reduce_scatter of 3.754 GB runs across the two nodes (ranks/domains 2/2, 38.205 ms per call); then
    ``aifabric import-chakra et/workload.0.et --nodes 2`` timed the same call at 5.07 ms (its dp group of 2
    placed on ranks 0 and 1, one node's NVLink) and printed "compute 0.8514 s + communication 0.3979 s =
    1.2493 s (no overlap: an upper bound)": an upper bound below the step the trace came from. Expected: the
    serial total of a trace aifabric wrote is at least the step time that wrote it."""
    et = tmp_path / "et"
    layout = ["-m", "llama3-8b", "--nodes", "2", "--tp", "8", "-B", "16"]
    step = result_json(["train", *layout, "--chakra", str(et)])
    trace = result_json(["import-chakra", str(et / "workload.0.et"), "--nodes", "2"])
    assert trace["serial_total_s"] >= step["step_s"], (trace["serial_total_s"], step["step_s"])


def test_a_cluster_total_power_that_claims_the_gpus_includes_them():
    """``aifabric cluster show rubin-nvl72`` printed "power 855.4 kW, cluster, GPUs, hosts and every network"
    and no "cluster power: gpu ..." line; ``--json`` has ``compute_watts`` 0 and ``total_watts`` 855,398 =
    the networks alone (scale-up 0, scale-out 795,200, front-end 56,946, management 3,252), and the optics
    share (12.7 %) is taken of that. 1,008 Rubin GPUs draw far more than nothing: one GB200 NVL72 rack's
    GPUs are 86.4 kW here (gb200-nvl72 --nodes 18), and gb200-nvl72's 576 GPUs give compute_watts 777,600.
    Expected: a total that names the GPUs and hosts includes a positive compute figure, or the headline says
    the GPUs' power is not known and leaves them out of its label."""
    show = result_json(["cluster", "show", "rubin-nvl72"])
    power = next(h for h in show["headlines"] if h["name"] == "power")
    assert show["compute_watts"] > 0 or "GPUs" not in power["note"], (show["compute_watts"], power)
