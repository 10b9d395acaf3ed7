"""The formula engine against real measurements (../shared/cases/nccl-tests) and NCCL's own model."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aifabric.cluster.presets import preset
from aifabric.collectives.communicator import Communicator
from aifabric.engines.formula import formula_collective

GB = 1e9
H100_1N = preset("h100-ib-2node", nodes=1)


# case_01 (NVIDIA/nccl-tests #290): 8 x H100 one node, default (NVLS), out-of-place busbw
@pytest.mark.parametrize("size,measured", [(2**30, 465.25), (2**31, 468.57), (2**32, 473.60)])
def test_h100_single_node_nvls(size, measured):
    r = formula_collective("all_reduce", size, H100_1N)
    assert r.algorithm == "nvls"
    assert r.busbw_bytes_per_s / GB == pytest.approx(measured, rel=0.10)


def test_h100_single_node_nvls_off():
    # case_01 supporting numbers (#309): NCCL_NVLS_ENABLE=0 -> 368.76 GB/s
    r = formula_collective("all_reduce", 2**32, H100_1N, exclude=("nvls",))
    assert r.algorithm == "ring"
    assert r.busbw_bytes_per_s / GB == pytest.approx(368.76, rel=0.10)


@pytest.mark.parametrize(
    "size,measured", [(2**30, 384.49), (2**31, 389.40), (2**32, 391.39), (2**33, 392.69)]
)
def test_h100_two_nodes_ring(size, measured):
    # case_03 T7: 2 nodes x 8 H100, 8 x 400G IB, NCCL_ALGO=Ring
    r = formula_collective("all_reduce", size, preset("h100-ib-2node"), algorithm="ring")
    assert r.busbw_bytes_per_s / GB == pytest.approx(measured, rel=0.10)


def test_v100_pcie_plateau():
    # case_13, NCCL 2.8.3: 128 MB -> 9.40 GB/s busbw (PCIe Gen3 through the CPU: 12 / 1.2 = 10 GB/s model)
    r = formula_collective("all_reduce", 134217728, preset("v100-pcie-4gpu"))
    assert r.busbw_bytes_per_s / GB == pytest.approx(9.40, rel=0.10)


@pytest.mark.parametrize("nodes,measured_us", [(2, 25.0), (4, 35.0)])
def test_small_message_latency(nodes, measured_us):
    # case_03 T1/T2: 16-128 B all_reduce 24.9-25.3 us (2 nodes), 34.5-35.7 us (4 nodes); Tree/LL
    r = formula_collective("all_reduce", 64, preset("h100-ib-2node", nodes=nodes))
    assert (r.algorithm, r.protocol) == ("tree", "LL")
    assert r.time_s * 1e6 == pytest.approx(measured_us, rel=0.15)


def test_single_node_small_is_ring_ll_and_large_is_nvls():
    # NCCL maintainer (#309): one node picks Ring/LL for <= 1 MB, NVLS/Simple from 2 MB
    assert formula_collective("all_reduce", 2**20, H100_1N).algorithm == "ring"
    assert formula_collective("all_reduce", 2**21, H100_1N).algorithm == "nvls"
    # NCCL Ring/LL model on one node: 6.6 + 14 x 0.6 = 15.0 us
    assert formula_collective("all_reduce", 8, H100_1N).time_s == pytest.approx(15.0e-6, rel=1e-3)


def test_all_to_all_busbw_is_nic_times_n_over_n_minus_1():
    # NCCL maintainer (#130, #267): AlltoAll busbw ~ per-GPU NIC BW x N/(N-1); 2 nodes -> ~2 x 49 GB/s
    r = formula_collective("all_to_all", 2**32, preset("h100-ib-2node"))
    nic = 50e9 * 0.983
    assert r.busbw_bytes_per_s == pytest.approx(nic * 15 / 8, rel=0.02)


def test_network_shares_sum_to_time():
    r = formula_collective("all_reduce", 2**28, preset("dgx-h100-superpod", nodes=16))
    assert sum(r.network_time_s.values()) == pytest.approx(r.time_s)


def test_bad_size_and_algorithm():
    with pytest.raises(ValueError, match="size"):
        formula_collective("all_reduce", 0, H100_1N)
    with pytest.raises(ValueError, match="algorithm"):
        formula_collective("all_reduce", 1e6, H100_1N, algorithm="butterfly")
    with pytest.raises(ValueError, match="collective"):
        formula_collective("allsum", 1e6, H100_1N)


@settings(max_examples=60, deadline=None)
@given(
    size=st.floats(min_value=8, max_value=1e11),
    nodes=st.integers(min_value=1, max_value=64),
    scale=st.floats(min_value=1.0, max_value=4.0),
    op=st.sampled_from(["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"]),
)
def test_more_bandwidth_is_never_slower(size, nodes, scale, op):
    base = {"scale_out.nic": "connectx-9", "scale_out.radix": 64}
    spec = preset("dgx-h100-superpod", nodes=nodes, **base, **{"scale_out.nic_speed": "400 Gb/s"})
    fast = spec.with_changes(**{"scale_out.nic_speed": f"{400 * scale} Gb/s"})
    t0 = formula_collective(op, size, spec, hbm_check=False).time_s
    t1 = formula_collective(op, size, fast, hbm_check=False).time_s
    assert t1 <= t0 * (1 + 1e-12)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(min_value=2, max_value=256), size=st.floats(min_value=1e3, max_value=1e10))
def test_explicit_gpus_match_contiguous(n, size):
    spec = preset("dgx-h100-superpod", nodes=32)
    a = formula_collective("all_reduce", size, spec, Communicator.contiguous(spec, n))
    b = formula_collective("all_reduce", size, spec, Communicator.from_gpus(spec, list(range(n))))
    assert a.time_s == pytest.approx(b.time_s)


def test_tpu_v5p_torus_all_reduce_uses_every_ici_link():
    # TPU v5p: 6 ICI links of 9e10 B/s per direction (JAX scaling book, ICI BW/link one-way) = 540 GB/s per
    # chip. The 8,960-chip pod is more than one slice (Cloud TPU v5p docs: largest 16x16x24, 6,144 chips),
    # so the API, like the CLI, runs on that slice. Bidirectional rings on all three axes at once:
    # T = 2 (n-1)/n S / 540 GB/s plus one 1 us hop per step: 2 x (16/2 + 16/2 + 24/2) = 56 steps.
    r = formula_collective("all_reduce", 1e9, preset("tpu-v5p-pod"))
    n = 6144
    assert r.algorithm == "torus" and r.n_ranks == n
    assert r.time_s == pytest.approx(2 * (n - 1) / n * 1e9 / 540e9 + 56e-6, rel=1e-9)
