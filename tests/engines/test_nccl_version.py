"""The formula engine reads NCCL's constants from the release a user states (``--nccl-version``)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.collectives.communicator import Communicator
from aifabric.engines.formula import formula_collective
from aifabric.errors import ConfigError


def _one_gpu_per_node(nodes: int) -> tuple[object, Communicator]:
    spec = preset("h100-ib-2node", nodes=nodes)
    return spec, Communicator.from_gpus(spec, list(range(0, 8 * nodes, 8)))


def test_pat_exists_from_2_23_only():
    # NCCL added PAT in 2.23 (tuning.cc NCCL_ALGO_PAT); 2.18.1 has no PAT row, so it is no candidate.
    spec, comm = _one_gpu_per_node(16)
    old = formula_collective("all_gather", 2**20, spec, comm, nccl_version="2.18.1")
    new = formula_collective("all_gather", 2**20, spec, comm, nccl_version="2.30.3")
    assert "pat" not in {c.algorithm for c in old.candidates}
    assert "pat" in {c.algorithm for c in new.candidates}


def test_pat_bandwidth_factor_follows_the_release():
    # pat_bw_factor: 0.85 in 2.23.4, 0.75 from 2.24.3 (nccl_releases.yaml); at 1 GiB the bandwidth term
    # dominates, so the 2.23 PAT is faster by about 0.85 / 0.75.
    spec, comm = _one_gpu_per_node(16)
    t23 = formula_collective("all_gather", 2**30, spec, comm, algorithm="pat", nccl_version="2.23").time_s
    t30 = formula_collective("all_gather", 2**30, spec, comm, algorithm="pat", nccl_version="2.30").time_s
    assert t30 / t23 == pytest.approx(0.85 / 0.75, rel=0.01)


def test_ring_ll_bandwidth_follows_the_release():
    # One H100 node, ring/LL: busbw = min(llMaxBw, 370.8 GB/s x f_LL) with f_LL = 1/4 and the Hopper LL cap
    # 87.7 GB/s in 2.18 (-> 87.7), f_LL = 1/2 and cap 141 GB/s in 2.30 (-> 141) (nccl_releases.yaml), on
    # all 24 channels: at 4 MiB enqueue.cc keeps floor(4 MiB / (512 threads x 8 x 8 ranks)) = 128 >= 24.
    # At 64 KiB it runs on floor(64 KiB / 32 KiB) = 2 channels, each at one CTA's LL rate, the same in both
    # releases: 36.7 GB/s (perChMaxRingLL128Bw, Hopper) x (8 B x 512 threads) / (15 B x 640 threads)
    # = 15.66 GB/s (tiers.ll_channel_rate), 31.32 GB/s for the call, under either release's llMaxBw.
    spec = preset("h100-ib-2node", nodes=1)
    for size, expected in ((2**22, (87.7, 141.0)), (2**16, (2 * 36.7 * 8 * 512 / (15 * 640),) * 2)):
        old, new = (
            formula_collective("all_reduce", size, spec, algorithm="ring", protocol="LL", nccl_version=v)
            for v in ("2.18", "2.30")
        )
        assert old.latency_s == pytest.approx(new.latency_s)
        bw_old = size / (old.time_s - old.latency_s) * 14 / 8
        bw_new = size / (new.time_s - new.latency_s) * 14 / 8
        assert (bw_old / 1e9, bw_new / 1e9) == (pytest.approx(expected[0]), pytest.approx(expected[1]))


def test_bad_version_is_refused():
    with pytest.raises(ConfigError, match="nccl version"):
        formula_collective("all_reduce", 2**20, preset("h100-ib-2node"), nccl_version="1.2")


def test_cli_nccl_version():
    runner = CliRunner()
    ok = runner.invoke(app, ["collective", "-c", "h100-ib-2node", "-s", "1MiB", "--nccl-version", "2.21.5"])
    assert ok.exit_code == 0, ok.output
    bad = runner.invoke(app, ["collective", "-s", "1MiB", "--nccl-version", "2.x"])
    assert bad.exit_code == 2
    links = runner.invoke(app, ["collective", "-s", "1MiB", "--engine", "links", "--nccl-version", "2.21"])
    assert links.exit_code == 2
