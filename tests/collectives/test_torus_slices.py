"""Collectives on TPU slices: hand-derived times on torus and mesh slices, and the physical bounds."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aifabric import catalog
from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.cluster.tpu_slice import TpuSlice, allowed_shapes
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.torus import slice_all_gather_s, slice_all_to_all_s
from aifabric.engines.formula import formula_collective

GIB = 2**30
# One ICI link, one direction: the JAX scaling book's "ICI BW/link (one-way)" (tpus.md, corrected 2025-02-08,
# commit 7e97132): v5p 9e10, v5e 4.5e10 B/s, 0.9 of Google's per-chip figures split over the links
# (1,200 GB/s / 2 / 6 = 100e9; 400 GB/s / 2 / 4 = 50e9), which these tests used before.
V5P_LINK = 90e9
V5E_LINK = 45e9
US = 1e-6  # one ICI hop (catalogue hop_latency)


def run(op: str, size: float, spec: ClusterSpec, ranks: int):
    return formula_collective(op, size, spec, Communicator.contiguous(spec, ranks))


def test_v5p_4x4x4_cube_all_reduce_of_1_gib():
    # A whole cube: a ring (wraparound) on all three axes. Each phase (reduce-scatter, all-gather) moves
    # (n-1)/n S over the chip's 6 links of 90 GB/s at once: 2 x 63/64 x 2^30 / 540e9 = 3914.7 us; latency
    # 2 phases x (2 + 2 + 2) hops x 1 us = 12 us.
    r = run("all_reduce", GIB, preset("tpu-v5p-pod"), 64)
    assert "4x4x4 (torus 4, torus 4, torus 4)" in r.explanation
    assert r.time_s == pytest.approx(2 * 63 / 64 * GIB / (6 * V5P_LINK) + 12 * US)


def test_v5p_2x2x1_mesh_all_reduce_of_1_gib():
    # Below a cube there is no wraparound: two lines of 2 chips, one link each (90 GB/s one way). Half the
    # data goes x then y, half y then x. Per phase, axis x carries 1/2 x (1/2 x 2/4) (first) + 1/2 x
    # (1/2 x 4/4) (second) = 3/8 S in time units of its single link, as does y: 3/8 S / b. All-reduce:
    # 2 x 3/8 x 2^30 / 90e9 = 8947.8 us, twice a torus of the same shape (3/16 S / b per phase); latency
    # 2 phases x (1 + 1) hops.
    r = run("all_reduce", GIB, preset("tpu-v5p-pod"), 4)
    assert "2x2x1 (mesh 2, mesh 2)" in r.explanation
    assert r.time_s == pytest.approx(2 * 3 / 8 * GIB / V5P_LINK + 4 * US)


def test_v5e_8x8_mesh_against_the_16x16_torus():
    # v5e, b = 45 GB/s. 16x16 pod: both axes rings, per phase (n-1)/n S / (4 b) = 255/1024 S / b.
    # 8x8 slice: both axes lines of 8 (no wraparound below 16 chips). Order x then y: x carries
    # 7/8 x 8/64 = 7/64, y 7/8 x 64/64 = 56/64; the mirror order the other way round; half each:
    # 63/128 S / b per axis. All-reduce = 2 phases; latency 2 x (7 + 7) hops against 2 x (8 + 8).
    spec = preset("tpu-v5e-pod")
    small = run("all_reduce", GIB, spec, 64)
    full = run("all_reduce", GIB, spec, 256)
    assert small.time_s == pytest.approx(2 * 63 / 128 * GIB / V5E_LINK + 28 * US)
    assert full.time_s == pytest.approx(2 * 255 / 1024 * GIB / V5E_LINK + 32 * US)
    # The wraparound makes the bigger slice faster per byte: bandwidth terms 504 / 255 = 1.98 apart.
    assert (small.time_s - 28 * US) / (full.time_s - 32 * US) == pytest.approx(504 / 255)


def test_v5e_8x16_rings_the_long_axis_only():
    # 8x16: a line of 8, a ring of 16. Per-axis loads, order (8 then 16): 7/8 x 8/128 = 7/128 on the line,
    # 15/16 x 1 / 2 = 15/32 on the ring; order (16 then 8): 15/16 x 16/128 / 2 = 15/256 on the ring,
    # 7/8 on the line. Balancing x (line first) and 1 - x: 7/128 x + 7/8 (1-x) = 15/32 x + 15/256 (1-x)
    # -> x = 209/315, time 7/128 x + 7/8 (1-x) = 0.3306 S / b per phase.
    sl = TpuSlice((8, 16), (False, True))
    x = 209 / 315
    assert slice_all_gather_s(1.0, sl, 1.0) == pytest.approx(7 / 128 * x + 7 / 8 * (1 - x), rel=1e-6)


def test_all_to_all_on_a_line_doubles_the_ring():
    # Ring of 8: the middle cut carries 4 x 4 x S/8 = 2 S each way over 2 cuts -> S / b (scaling book
    # V / (4 W_bidir), V = 8 S, W_bidir = 2 b). A line of 8 has one cut and one link each way: 2 S / b.
    assert slice_all_to_all_s(1.0, TpuSlice((8,), (True,)), 1.0) == pytest.approx(1.0)
    assert slice_all_to_all_s(1.0, TpuSlice((8,), (False,)), 1.0) == pytest.approx(2.0)


AXES = st.lists(st.integers(min_value=2, max_value=24), min_size=1, max_size=3)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(dims=AXES, wraps=st.lists(st.booleans(), min_size=3, max_size=3))
def test_mesh_never_faster_than_torus_and_links_bound_busbw(dims, wraps):
    wrap = tuple(wraps[: len(dims)])
    torus, mixed = TpuSlice(tuple(dims), (True,) * len(dims)), TpuSlice(tuple(dims), wrap)
    mesh = TpuSlice(tuple(dims), (False,) * len(dims))
    for f in (slice_all_gather_s, slice_all_to_all_s):
        assert f(1.0, torus, 1.0) <= f(1.0, mixed, 1.0) * (1 + 1e-9) <= f(1.0, mesh, 1.0) * (1 + 1e-9) ** 2
    # Nothing is faster than the links a chip drives: busbw = (n-1)/n S / T <= sum_a w_a b.
    n = math.prod(dims)
    links = sum(2 if w else 1 for d, w in zip(dims, wrap, strict=True))
    assert (n - 1) / n / slice_all_gather_s(1.0, mixed, 1.0) <= links * (1 + 1e-6)


V5P_SHAPES = sorted(allowed_shapes(catalog.scaleup("tpu-v5p-ici").slices, (16, 20, 28)), key=math.prod)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(i=st.integers(0, len(V5P_SHAPES) - 1), j=st.integers(0, len(V5P_SHAPES) - 1))
def test_bigger_slice_of_the_same_kind_never_faster_per_byte(i, j):
    # Same per-chip bandwidth, same wraparound kind (sub-cube meshes, or whole-cube tori): a slice that holds
    # the other (axis by axis) is never faster for the same bytes.
    rules = catalog.scaleup("tpu-v5p-ici").slices
    small, big = sorted((V5P_SHAPES[i], V5P_SHAPES[j]), key=math.prod)
    wraps = [all(d % rules.cube == 0 for d in s) for s in (small, big)]
    if wraps[0] != wraps[1] or not all(a <= b for a, b in zip(small, big, strict=True)):
        return
    t_small = slice_all_gather_s(1.0, TpuSlice(small, (wraps[0],) * 3), 1.0)
    t_big = slice_all_gather_s(1.0, TpuSlice(big, (wraps[1],) * 3), 1.0)
    assert t_big >= t_small * (1 - 1e-9)


@pytest.mark.parametrize("ranks", [4, 8, 16, 32, 64, 128, 256])
@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"])
def test_v5p_slice_busbw_within_the_chips_links(op, ranks):
    # busbw never above the chip's ICI bandwidth on the slice's axes: 6 x 90 GB/s on a torus slice.
    r = run(op, GIB, preset("tpu-v5p-pod"), ranks)
    assert r.busbw_bytes_per_s <= 6 * V5P_LINK * (1 + 1e-9)


def _ironwood_domain(dims: tuple[int, int, int]) -> ClusterSpec:
    """One Ironwood domain of shape ``dims``, cut from the pod (no scale-out)."""
    n = math.prod(dims)
    return ClusterSpec.from_dict(
        {
            "accelerator": "tpu-ironwood",
            "gpus_per_node": 4,
            "gpus": n,
            "scale_up": {"kind": "torus", "gpus": n, "torus_dims": list(dims)},
            "scale_out": None,
            "front_end": None,
            "management": None,
        }
    )


@pytest.mark.parametrize("dims", [(2, 2, 1), (4, 4, 1), (8, 1, 1)])
def test_ironwood_link_rate_is_the_chips_whatever_the_domain_shape(dims):
    # An ICI link's one-way rate is a property of the chip (JAX scaling book tpus.md "ICI BW/link (one-way)";
    # Ironwood taken as v5p's 9e10 B/s, catalogue tpu-ironwood-ici): a 2x2x1 host, a 4x4x1 and an 8x1x1 ring
    # wire 2, 4 and 2 of the chip's 6 ports, the others idle. send_recv between neighbours crosses one link:
    # T = S / 90e9 + 1 hop of 1 us = 1e9 / 90e9 + 1e-6 = 11.112 ms. (Before, the 4x4x1 and 8x1x1 domains
    # spread the chip's 540 GB/s over their own 2 and 1 axes: 135 and 270 GB/s a link.)
    r = run("send_recv", 1e9, _ironwood_domain(dims), 2)
    assert "one ICI link at 90 GB/s" in r.explanation
    assert r.time_s == pytest.approx(1e9 / V5P_LINK + US)


@pytest.mark.parametrize("key", [k for k in catalog.catalog_names("scaleup") if k.startswith("tpu-")])
def test_tpu_chip_ports_are_two_per_slice_axis(key):
    # The torus model spreads a TPU chip's bandwidth over 2 ports per axis of its generation's slices
    # (tpu_slice.chip_axes); the catalogue's links_per_gpu must be that port count (Cloud TPU system
    # architecture: 4 ICI links on v5e/v6e's 2-D tori, 6 on v4/v5p/Ironwood's 3-D).
    link = catalog.scaleup(key)
    assert link.slices is not None
    assert link.links_per_gpu == 2 * len(link.slices.shapes[0])
