"""Sizes: a 32,768-GPU three-tier build, index dtypes, bounded counts, and the memory budget."""

import tracemalloc

import numpy as np
import pytest
from typer.testing import CliRunner

from aifabric import budget
from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.cluster.spec import MAX_GPUS, ClusterSpec
from aifabric.cluster.topology import build_topology, index_dtype, topology_bytes
from aifabric.errors import ConfigError


@pytest.fixture(autouse=True)
def _no_limit_leaks(monkeypatch):
    monkeypatch.delenv(budget.ENV_VAR, raising=False)
    budget.set_memory_limit(None)
    yield
    budget.set_memory_limit(None)


def test_32768_gpus_three_tiers_cable_and_switch_counts():
    # 4,096 DGX H100 (32,768 GPUs), radix-64 Quantum-2, non-blocking, rail-optimised, three tiers.
    # By hand: a leaf has 32 GPU ports and 32 uplinks -> 32,768 / 32 = 1,024 leaves (128 SUs x 8 rails).
    # A pod holds as many leaves as a spine has down ports (32) -> 1,024 / 32 = 32 pods, each with as many
    # spines as a leaf has uplinks (32) -> 1,024 spines of 32 down / 32 up. Cores: 32 groups (one per spine
    # position), each needing 32 pods x 32 uplinks / 64 ports = 16 cores -> 512 cores (k^3/4 = 65,536
    # hosts is the full k = 64 fat tree; this is half of it: 1,024 + 1,024 + 512 = 2,560 = 5 k^2 / 8).
    # Cables: 32,768 NIC-leaf, 1,024 x 32 = 32,768 leaf-spine, 1,024 x 32 = 32,768 spine-core, and
    # 32,768 GPU-NVSwitch (one per GPU). Devices: 32,768 GPUs + 4,096 NVSwitch domains + 2,560 switches.
    topo = build_topology(preset("dgx-h100-superpod", nodes=4096, **{"scale_out.tiers": 3}))
    assert topo.shape.tiers == 3
    assert topo.switch_counts == {"scale-up domain": 4096, "leaf": 1024, "spine": 1024, "core": 512}
    assert topo.cable_counts == {"nic-leaf": 32768, "leaf-spine": 32768, "spine-core": 32768}
    assert np.count_nonzero(topo.link_tier == 0) // 2 == 32768
    assert topo.n_devices == 32768 + 4096 + 2560
    assert topo.n_links == 2 * 4 * 32768
    # every id is in range and every cable's two directions point at each other (no wrapped indices)
    assert topo.link_src.min() >= 0 and topo.link_dst.max() == topo.n_devices - 1
    assert np.array_equal(topo.link_reverse[topo.link_reverse], np.arange(topo.n_links))
    assert np.array_equal(topo.link_src[topo.link_reverse], topo.link_dst)
    # each core has 64 cables down (32 pods x 32 uplinks x 32 spines / 512 cores)
    cores = topo.link_dst[topo.link_tier == 3]
    cores = cores[cores >= topo.device_offsets["core"]]
    assert np.bincount(cores - topo.device_offsets["core"]).tolist() == [64] * 512


def test_index_dtypes_are_sized_from_the_counts():
    assert index_dtype(2**31 - 1) == np.int32
    assert index_dtype(2**31) == np.int64
    assert index_dtype(63, np.int16) == np.int16 and index_dtype(40_000, np.int16) == np.int32
    topo = build_topology(preset("dgx-h100-superpod", nodes=64, **{"scale_out.planes": 4}))
    assert topo.link_src.dtype == np.int32 and topo.link_plane.dtype == np.int16
    assert topo.link_plane.max() == 3


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"gpus": MAX_GPUS * 8}, "gpus"),
        ({"scale_out.planes": 40_000}, "scale_out.planes"),
        ({"scale_out.radix": 10**9}, "scale_out.radix"),
        ({"scale_out.nics_per_gpu": 10**6}, "scale_out.nics_per_gpu"),
        ({"scale_out.oversubscription": [float("inf")]}, "scale_out.oversubscription"),
        ({"scale_out.oversubscription": 1e308}, "scale_out.oversubscription"),
        ({"scale_out.oversubscription": None}, "scale_out.oversubscription"),
        ({"front_end.oversubscription": float("inf")}, "front_end.oversubscription"),
        ({"scale_up.torus_dims": [0, 4, 4]}, "scale_up.torus_dims"),
    ],
)
def test_absurd_counts_are_refused_naming_the_field(change, field):
    data = {"accelerator": "h100-sxm", "nodes": 2}
    for key, value in change.items():
        head, _, tail = key.partition(".")
        if tail:
            data.setdefault(head, {})[tail] = value
        else:
            data.pop("nodes")
            data[key] = value
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        ClusterSpec.from_dict(data)


@pytest.mark.parametrize(
    ("name", "kw"),
    [
        ("dgx-h100-superpod", {"nodes": 4096}),
        ("dgx-h100-superpod", {"nodes": 512, "scale_out.planes": 4}),
        ("megatron-a100", {}),
        ("gb200-nvl72", {"gpus": 9216}),
    ],
)
def test_topology_estimate_bounds_the_measured_peak(name, kw):
    spec = preset(name, **kw)
    tracemalloc.start()
    try:
        build_topology(spec)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 0.9 * peak <= topology_bytes(spec) <= 3 * peak


def test_memory_limit_refuses_before_allocating(monkeypatch):
    spec = preset("dgx-h100-superpod", nodes=4096)
    monkeypatch.setenv(budget.ENV_VAR, "1 MB")
    with pytest.raises(
        ConfigError, match=r"^gpus: the topology of 32,768 GPUs needs about 1[0-9.]+ MB .*AIFABRIC_MAX_MEMORY"
    ):
        build_topology(spec)
    monkeypatch.setenv(budget.ENV_VAR, "lots")
    with pytest.raises(ConfigError, match="AIFABRIC_MAX_MEMORY"):
        budget.memory_limit_bytes()


def test_cli_max_memory_option_names_the_figure_and_the_option():
    r = CliRunner().invoke(
        app, ["--max-memory", "10kB", "collective", "all_reduce", "--engine", "links", "-s", "1MB"]
    )
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--max-memory" in lines[0] and "limit of 10 kB" in lines[0]
    r = CliRunner().invoke(app, ["--max-memory", "-5GB", "collective", "all_reduce"])
    assert r.exit_code == 2 and r.stderr.startswith("error: --max-memory")


def test_all_to_all_routing_too_big_is_refused_up_front():
    # 576 GB200 ranks sprayed over the spines: ~15 GB of routing tables per pair (died past 4 GB before).
    # Each leaf's 24 uplinks spread evenly over 12 spines (clos.even_spread), so sprayed traffic folds onto
    # spray groups (engines.routing.spray_groups): ~15 MB, refused under 8 MiB
    r = CliRunner().invoke(
        app, ["--max-memory", "8MiB", "collective", "all_to_all", "-c", "gb200-nvl72", "--engine", "links"]
    )
    assert r.exit_code == 2
    assert (
        r.stderr.startswith("error: ranks: routing an all_to_all of 576 ranks") and "--max-memory" in r.stderr
    )
