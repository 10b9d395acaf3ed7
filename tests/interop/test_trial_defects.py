"""Defects of a new user's trial of the exports and import-chakra (issue 13): an htsim connection matrix too
large for memory is counted and refused before it is built, an option a format does not use is refused, a
trace of more ranks than the cluster has GPUs is refused."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from aifabric import budget
from aifabric.cli.app import app
from aifabric.cluster.resolve import resolve_cluster
from aifabric.cluster.topology import build_topology
from aifabric.collectives.algorithms import build_plan
from aifabric.errors import ConfigError
from aifabric.interop.htsim import FLOW_BYTES, read_connection_matrix, write_connection_matrix


def test_connection_matrix_is_counted_and_refused_above_the_memory_limit(tmp_path, monkeypatch):
    spec = resolve_cluster("dgx-h100-superpod", nodes=4)
    topo = build_topology(spec)
    plan = build_plan("all_to_all", 2**30, spec, np.arange(spec.n_gpus))
    # all_to_all over 32 GPUs in 4 nodes: each GPU sends to the 24 GPUs of the other nodes = 768 flows
    flows = 32 * 24
    monkeypatch.setenv("AIFABRIC_MAX_MEMORY", str(flows * FLOW_BYTES - 1))
    with pytest.raises(ConfigError, match=r"^--nodes: the htsim connection matrix of all_to_all \(768 flows"):
        write_connection_matrix(plan, topo, tmp_path / "c.cm")
    assert not (tmp_path / "c.cm").exists()
    monkeypatch.setenv("AIFABRIC_MAX_MEMORY", str(flows * FLOW_BYTES))
    hosts, written, _waits = read_connection_matrix(write_connection_matrix(plan, topo, tmp_path / "c.cm"))
    assert hosts == 32 and len(written) == flows


def test_cli_export_of_a_too_large_matrix_exits_2_with_the_figure(tmp_path, monkeypatch):
    monkeypatch.setattr(budget, "_explicit", None)  # --max-memory below is this process's: undone after
    out = tmp_path / "h"
    # 768 flows x FLOW_BYTES = 652,800 B > 600 kB
    args = ["--max-memory", "600kB", "export", "--format", "htsim", "--nodes", "4", "--out", str(out)]
    res = CliRunner().invoke(app, [*args, "--collective", "all_to_all", "--size", "1GiB"])
    assert res.exit_code == 2
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith(
        "error: --nodes: the htsim connection matrix of all_to_all (768 flows over 32 GPUs)"
    )
    assert "--max-memory" in line


@pytest.mark.parametrize("fmt", ["astra-sim", "simai", "htsim"])
def test_export_refuses_size_without_a_collective(tmp_path, fmt):
    res = CliRunner().invoke(app, ["export", "--format", fmt, "--out", str(tmp_path / "x"), "--size", "1GiB"])
    assert res.exit_code == 2
    assert res.stderr.strip().splitlines() == [
        f"error: --size: only --collective (--format htsim) takes a size; --format {fmt} does not"
    ]
    assert not (tmp_path / "x").exists()


def test_import_chakra_refuses_a_trace_larger_than_the_cluster(tmp_path):
    out = tmp_path / "et"
    args = ["collective", "all_reduce", "--nodes", "2", "--size", "1 MiB", "--json", "--chakra", str(out)]
    assert CliRunner().invoke(app, args).exit_code == 0  # 16 ranks (2 DGX H100 nodes)
    res = CliRunner().invoke(app, ["import-chakra", str(out / "workload.0.et"), "--nodes", "1"])
    assert res.exit_code == 2
    assert res.stderr.strip().splitlines() == [
        f"error: --nodes: the trace {str(out / 'workload.0.et')!r} has 16 ranks (comm_group_size) but "
        "dgx-h100-superpod has 8 GPUs; give a cluster of at least 16 GPUs (--nodes 2)"
    ]
