"""Input and reader defects a trial of this release's new options found (-g N on RCCL, the storage servers'
ports, the MI300X compute profile, the deepseek-3fs entry, ibstat port rates): each test runs one command or
reader; its docstring holds the input, what the product did and what it should do (README: bad input exits 2
with one line naming the field and the value as typed; exit 1 is an internal error)."""

from pathlib import Path

import pytest
import yaml
from tests.trial.commands import EXAMPLE, result_json, runner

from aifabric.cli.app import app
from aifabric.discovery.node import inspect_node_text

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

#: 8 x MI300X on one xGMI board (the MI300X acceptance guide's host, as tests/engines/test_cases_public_node5)
MI300X_NODE = dict(name="mi300x-node", accelerator="mi300x", gpus_per_node=8, nodes=1, cpu_vendor="amd")
MI300X_NODE |= {"scale_up": {"kind": "nvswitch"}, "scale_out": None}


def _write(tmp_path: Path, name: str, spec: dict) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def _example_with(tmp_path: Path, name: str, **fields: object) -> str:
    """examples/cluster.yaml (32 x 8 H100) with top-level ``fields`` replaced; returns its path."""
    spec = yaml.safe_load(EXAMPLE.read_text())
    spec.update(name=name, **fields)
    return _write(tmp_path, name, spec)


def test_one_thread_driving_eight_gpus_needs_no_launch_cost_to_turn_msccl_off(tmp_path):
    """``aifabric collective all_reduce -c mi300x.yaml --size 8MiB --nccl-version 2.20.5 --gpus-per-thread 8``
    exits 2: "--gpus-per-thread: needs --launch-us too (the host launch floor is GPUs per thread x launch)".
    --gpus-per-thread now also puts the 8 ranks in one process, which turns RCCL's MSCCL off
    (mscclCommCompatible; with ``--launch-us 0`` the row runs ring/Simple at 132.1 GB/s busbw, the MI300X
    acceptance guide's -g 8 row measured 132.49). A user who ran ``rccl-tests -g 8`` and knows no launch
    cost cannot say so: the option must run alone (launch floor 0, the MSCCL rule applied), as with
    --launch-us 0."""
    cluster = _write(tmp_path, "mi300x", MI300X_NODE)
    args = ["collective", "all_reduce", "-c", cluster, "--size", "8MiB", "--nccl-version", "2.20.5"]
    r = runner.invoke(app, [*args, "--gpus-per-thread", "8", "--json"])
    assert r.exit_code == 0, (r.stdout + r.stderr)[-400:]
    assert '"msccl' not in r.stdout.lower(), r.stdout[:600]


def test_storage_server_ports_without_a_server_nic_are_refused(tmp_path):
    """A cluster file with ``storage: {system: ddn-ai400x2-turbo, units: 4, unit_nics: 2}`` (ports per server
    but no ``unit_nic``) runs ``aifabric checkpoint FILE --nodes 16 -m llama3-70b --tp 8 --pp 2`` with exit 0
    and the same 20 GB/s per node (file system aggregate) as without ``unit_nics``: the field is silently
    dropped. StorageSpec refuses ``unit_nic`` without ``units`` ("the storage servers' NICs need
    storage.units"); ``unit_nics`` without ``unit_nic`` says as little and must be refused the same way:
    exit 2, one line naming storage.unit_nics and unit_nic."""
    cluster = _example_with(
        tmp_path, "ddn-ports", storage={"system": "ddn-ai400x2-turbo", "units": 4, "unit_nics": 2}
    )
    r = runner.invoke(
        app, ["checkpoint", cluster, "--nodes", "16", "-m", "llama3-70b", "--tp", "8", "--pp", "2"]
    )
    assert r.exit_code == 2, r.stdout[-400:]
    assert "unit_nics" in r.stderr and "unit_nic" in r.stderr.replace("unit_nics", ""), r.stderr


def test_the_mi300x_fp8_refusal_does_not_deny_its_fp8_matrix_cores(tmp_path):
    """``aifabric train -c mi300x-cluster.yaml -m llama3-8b --tp 2 --global-batch 64 --fp8`` exits 2 with
    "fp8: the mi300x has no FP8 tensor cores (no peak_fp8_flops in the catalogue)". The AMD Instinct MI300X
    datasheet gives FP8 at 2,614.9 TFLOPS dense (twice its BF16 1,307.4, the figure the catalogue cites);
    CDNA 3 matrix cores run FP8. What is missing is the catalogue's figure (and the MI300X compute profile
    says it has no FP8 efficiency), not the hardware: the line must say that, not that the GPU lacks FP8."""
    cluster = _example_with(tmp_path, "mi300x-cluster", accelerator="mi300x", nodes=8)
    r = runner.invoke(app, ["train", "-c", cluster, "-m", "llama3-8b", "--tp", "2", "-B", "64", "--fp8"])
    out = r.stdout + r.stderr
    assert r.exit_code in (0, 2), out[-400:]
    assert "has no FP8 tensor cores" not in out, out[-400:]


def test_a_storage_units_refusal_names_the_options_typed():
    """``aifabric checkpoint --nodes 16 -m llama3-70b --tp 8 --pp 2 --storage deepseek-3fs
    --storage-units 180`` exits 2 with "storage.units: 'deepseek-3fs' publishes no per-unit write
    bandwidth; give storage.aggregate_write": neither field was typed (the preset has no storage block)
    and the command line cannot set storage.aggregate_write by that name. The line must name what was
    typed (--storage-units) and the option that supplies the figure (--storage-write), as other commands
    map fields to options (scale-across's sites.count -> --sites)."""
    args = ["checkpoint", "--nodes", "16", "-m", "llama3-70b", "--tp", "8", "--pp", "2"]
    r = runner.invoke(app, [*args, "--storage", "deepseek-3fs", "--storage-units", "180"])
    assert r.exit_code == 2, r.stdout[-400:]
    assert "--storage-units" in r.stderr and "--storage-write" in r.stderr, r.stderr


def test_electing_the_unfused_megatron_loss_under_torchtitan_is_refused():
    """``aifabric train -c dgx-h100-superpod --nodes 8 -m llama3-8b --tp 2 -B 576 --framework torchtitan
    --elementwise megatron-unfused-ce`` exits 0 and charges Megatron-Core's cross-entropy run without
    --cross-entropy-loss-fusion (52 B per vocabulary element and token; step 8.193 s against torchtitan's
    own 8.102 s): --help defines the set as "Megatron-Core's cross-entropy run without
    --cross-entropy-loss-fusion", a Megatron-LM flag, while --framework torchtitan already prices
    torchtitan's loss (cross_entropy on upcast logits). The pair describes no run: exit 2 naming
    --elementwise and --framework."""
    args = ["train", "-c", "dgx-h100-superpod", "--nodes", "8", "-m", "llama3-8b", "--tp", "2", "-B", "576"]
    r = runner.invoke(app, [*args, "--framework", "torchtitan", "--elementwise", "megatron-unfused-ce"])
    assert r.exit_code == 2, r.stdout[-400:]
    assert "--elementwise" in r.stderr and "--framework" in r.stderr, r.stderr


def _ibstat(device: str, state: str, rate: int) -> str:
    """One ``ibstat`` block as infiniband-diags prints it (NVIDIA/nccl#1591's paste)."""
    return (
        f"CA '{device}'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tPort 1:\n\t\tState: {state}\n"
        f"\t\tPhysical state: LinkUp\n\t\tRate: {rate}\n\t\tLink layer: InfiniBand\n"
    )


#: nvidia-smi topo -m of 2 GPUs, each on its own NIC (PIX), and a third NIC (front-end) on neither
TOPO = """\tGPU0\tGPU1\tNIC0\tNIC1\tNIC2\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tNV18\tPIX\tSYS\tSYS\t0-31\t0\t\tN/A
GPU1\tNV18\t X \tSYS\tPIX\tSYS\t32-63\t1\t\tN/A
NIC0\tPIX\tSYS\t X \tSYS\tSYS
NIC1\tSYS\tPIX\tSYS\t X \tSYS
NIC2\tSYS\tSYS\tSYS\tSYS\t X

Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks

NIC Legend:

  NIC0: mlx5_0
  NIC1: mlx5_1
  NIC2: mlx5_2
"""


def test_a_front_end_port_rate_is_not_taken_for_the_gpus_down_nics():
    """ibstat of the GPUs' NICs mlx5_0 and mlx5_1 (State: Down, Rate: 10) and of the front-end mlx5_2
    (Active, Rate: 25), above a topo -m that pairs GPU0-NIC0 and GPU1-NIC1 (PIX): inspect reads the node's
    NIC speed as 25 Gb/s, "NIC speed from the port rate ibstat prints: 25 Gb/s (mlx5_2 port 1 ...)", not
    assumed. ib_ports.nic_port_rate documents falling back to every active port only "when no port is of
    those devices" (the GPUs' NICs); here both GPU NICs' ports are printed, and a down port "tells nothing"
    (module docstring), so the GPUs' speed is unknown: the front-end's 25 Gb/s must not be used (the
    400 Gb/s assumption stands, noted as assumed, as when the GPU port alone is down)."""
    text = _ibstat("mlx5_0", "Down", 10) + _ibstat("mlx5_1", "Down", 10) + _ibstat("mlx5_2", "Active", 25)
    (node,) = inspect_node_text(text + "\n" + TOPO, source="paste.txt")
    assert node.nic_speed_bytes_per_s != 25e9 / 8, node.assumptions
    assert node.nic_speed_assumed, node.assumptions


def test_restating_the_storage_units_keeps_the_servers_ports(tmp_path):
    """A cluster file with ``storage: {system: deepseek-3fs, units: 2, unit_nic: connectx-6, unit_nics: 1}``
    checkpoints (``aifabric checkpoint FILE --nodes 16 -m llama3-70b --tp 8 --pp 2``) at 3 GB/s per node,
    "bottleneck: storage servers' NICs" (2 servers x 200 Gb/s x 0.96 payload / 16 nodes). The same command
    with ``--storage-units 2``, the file's own value, exits 2: "storage.units: 'deepseek-3fs' publishes no
    per-unit write bandwidth; give storage.aggregate_write": cli/checkpoint.py _with_storage rebuilds the
    storage block from system, units and aggregates only, so any storage option (--storage-units,
    --storage-read, --storage-write, --storage) silently drops unit_nic and unit_nics. An option that
    restates the file must give the file's result."""
    storage = {"system": "deepseek-3fs", "units": 2, "unit_nic": "connectx-6", "unit_nics": 1}
    cluster = _example_with(tmp_path, "3fs-two-servers", storage=storage)
    args = ["checkpoint", cluster, "--nodes", "16", "-m", "llama3-70b", "--tp", "8", "--pp", "2", "--json"]
    plain = runner.invoke(app, args)
    assert plain.exit_code == 0, plain.stderr
    restated = runner.invoke(app, [*args, "--storage-units", "2"])
    assert restated.exit_code == 0, restated.stderr
    assert restated.stdout == plain.stdout


def test_a_storage_system_without_gpudirect_storage_bounces_through_host_memory(tmp_path):
    """A cluster file with ``storage: {system: deepseek-3fs, units: 180, unit_nic: connectx-6, unit_nics: 2}``
    (README's own 3FS example) checkpoints (``aifabric checkpoint FILE --nodes 16 -m llama3-70b --tp 8 --pp 2
    --json``) with write stages "GPU<->host PCIe", "node front-end NICs", "storage servers' NICs": no "host
    bounce buffer (no GDS)" stage, the GPUDirect Storage path. The catalogue entry says ``gds: false``
    (3FS reads and writes through its USRBIO client into host memory, deepseek-ai/3FS README), but
    storage/paths.py never reads StorageSystem.gds: only --no-gds adds the bounce buffer. A system without
    GDS must take the host path by default (and --gds on it be refused naming the system)."""
    storage = {"system": "deepseek-3fs", "units": 180, "unit_nic": "connectx-6", "unit_nics": 2}
    cluster = _example_with(tmp_path, "3fs", storage=storage)
    args = ["checkpoint", cluster, "--nodes", "16", "-m", "llama3-70b", "--tp", "8", "--pp", "2"]
    out = result_json(args)
    assert "host bounce buffer (no GDS)" in out["write"]["stages"], out["write"]["stages"]
