"""Defects a fresh-machine trial of the README's commands found with bad or inconsistent input: each test runs
one command; its docstring holds the command, what it printed and what it should do (README: bad input exits
2 with one line on stderr naming the field and the value, never a traceback; a result is never priced from a
setting the named software or hardware does not have)."""

import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

#: Two DGX-H100-like nodes (8 x H100 SXM on NVSwitch, ConnectX-7), the shape the README's examples use.
H100_NODES = {
    "name": "two-h100",
    "accelerator": "h100-sxm",
    "gpus_per_node": 8,
    "nodes": 2,
    "scale_up": {"kind": "nvswitch"},
}


def cluster_file(tmp_path: Path, **fields: object) -> str:
    """A cluster YAML of :data:`H100_NODES` with ``fields`` added; returns its path."""
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({**H100_NODES, **fields}))
    return str(path)


def call_time_us(args: list[str]) -> float:
    """The ``time ... us`` of a one-size ``aifabric collective`` run; asserts exit 0."""
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.stdout + r.stderr
    found = re.search(r"time ([0-9.]+) us", r.stdout)
    assert found, r.stdout[:400]
    return float(found.group(1))


def test_a_gdr_c2c_setting_the_named_nccl_release_lacks_does_not_change_the_prediction():
    """``aifabric collective all_reduce -c gb200-nvl72 --nodes 36 --size 1GiB --nccl-version 2.25.1 --env
    NCCL_NET_GDR_C2C=1`` gives 2646.88 us, the GPUDirect RDMA time, where the same call without the variable
    gives 2650.88 us (NICs behind the Grace CPU staged through host memory). NCCL_NET_GDR_C2C first appears in
    NCCL 2.26.2 (``git show v2.26.2-1:src/graph/paths.cc``: ``NCCL_PARAM(NetGdrC2c, "NET_GDR_C2C", 0)``; no
    match in v2.25.1-1's paths.cc), and README says GDR on a P2C NIC comes "on 2.26, NCCL_NET_GDR_C2C=1".
    NCCL 2.25.1 ignores an unknown variable, so the prediction must be the one without it (or the command
    exits 2 naming NCCL_NET_GDR_C2C and 2.26.2). The same holds on H100 nodes with ``nic_path: P2C`` under
    ``--nccl-version 2.21.5``: 4550.79 us with the variable, 6800.32 us without."""
    args = ["collective", "all_reduce", "-c", "gb200-nvl72", "--nodes", "36", "--size", "1GiB"]
    args += ["--nccl-version", "2.25.1"]
    r = runner.invoke(app, [*args, "--env", "NCCL_NET_GDR_C2C=1"])
    if r.exit_code == 2:
        assert "NCCL_NET_GDR_C2C" in r.stderr and "2.26" in r.stderr, r.stderr
        return
    assert call_time_us([*args, "--env", "NCCL_NET_GDR_C2C=1"]) == call_time_us(args)


def test_an_announced_bandwidth_with_a_mistyped_unit_is_not_checked_as_a_capacity():
    """``aifabric announcement "72 GPUs with 130 TB/z of NVLink" -c gb200-nvl72`` exits 0 with a row
    "130 TB | cannot verify | no modelled memory figure is within 5%": a mistyped bandwidth unit is read as a
    130 TB memory claim and the "/z" dropped. README: "130 TB/s" is NVLink's 72 x 1.8 TB/s and a figure that
    names its network is held against that network. A unit the reader cannot read must be named, not
    re-read as another quantity: either exit 2 with one line naming '130 TB/z', or the claim's row shows
    the text as written."""
    r = runner.invoke(app, ["announcement", "72 GPUs with 130 TB/z of NVLink", "-c", "gb200-nvl72"])
    if r.exit_code == 2:
        assert "130 TB/z" in r.stderr, r.stderr
        return
    assert "memory figure" not in r.stdout, r.stdout[:800]
    assert "TB/z" in r.stdout, r.stdout[:800]


def test_an_announced_flops_figure_with_a_mistyped_unit_is_not_dropped_silently():
    """``aifabric announcement "72 GPUs with 720 PFLOPZ FP8" -c gb200-nvl72`` exits 0 with one row, "72 GPUs
    | matches": the FLOPS claim vanishes, so the user reads a fully matching announcement. README: a
    vendor's "720 PFLOPS FP8" is checked (against the dense peak doubled). A number followed by a unit the
    reader cannot read must be named: exit 2 naming '720 PFLOPZ', or a row that shows it unverified."""
    r = runner.invoke(app, ["announcement", "72 GPUs with 720 PFLOPZ FP8", "-c", "gb200-nvl72"])
    if r.exit_code == 2:
        assert "720 PFLOPZ" in r.stderr, r.stderr
        return
    assert "PFLOPZ" in r.stdout, r.stdout[:800]


def test_a_nic_behind_a_grace_cpu_is_refused_on_an_x86_node(tmp_path):
    """``aifabric collective all_reduce -c FILE --size 1GiB`` with 2 x 8 H100 SXM on the default Intel host
    (``cpu_vendor`` default intel) and ``scale_out: {nic: connectx-7, nic_path: P2C}`` exits 0 (4564.6 us).
    README: P2C is "a NIC behind a Grace CPU" reached over NVLink-C2C (NCCL paths.cc ``PATH_P2C``: GPU to
    CPU over C2C, then the CPU's PCIe to the NIC), a path only a Grace (arm) node has; on an x86 node the
    file states a topology that cannot exist and its GDR verdict follows NCCL's C2C rules. It must exit 2
    with one line naming scale_out.nic_path, 'P2C' and the node's CPU."""
    path = cluster_file(tmp_path, scale_out={"nic": "connectx-7", "nic_path": "P2C"})
    r = runner.invoke(app, ["collective", "all_reduce", "-c", path, "--size", "1GiB"])
    assert r.exit_code == 2, r.stdout[:400]
    assert "nic_path" in r.stderr and "P2C" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_an_mtbf_below_any_parts_is_refused_as_one_above_is():
    """``aifabric checkpoint --nodes 16 -m llama3-70b --tp 8 --pp 2 --storage ddn-ai400x2-turbo
    --storage-units 4 --gpu-mtbf "1e-300 h"`` exits 0 with "Young/Daly interval (sync): every 1.318e-140 ns,
    goodput lost 100.00%" (two warnings on stderr). ``--node-mtbf "1e300 h"`` is refused ("longer than 1e9 h
    ... no GPU or node is that reliable"); the other end needs the same: a GPU failing every 3.6e-297 s has
    no meaning (README's own example is ``--gpu-mtbf "50000 h"``), so exit 2 with one line naming
    --gpu-mtbf and the value, never an interval printed in 1e-140 ns."""
    args = ["checkpoint", "--nodes", "16", "-m", "llama3-70b", "--tp", "8", "--pp", "2"]
    args += ["--storage", "ddn-ai400x2-turbo", "--storage-units", "4", "--gpu-mtbf", "1e-300 h"]
    r = runner.invoke(app, args)
    assert "e-140 ns" not in r.stdout, r.stdout[:600]
    assert r.exit_code == 2, r.stdout[:400]
    assert "--gpu-mtbf" in r.stderr and "1e-300 h" in r.stderr, r.stderr
