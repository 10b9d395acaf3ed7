"""Engine edges: torus collectives, one-domain all_to_all, zero or NaN bandwidths, every preset x collective x
engine through the CLI (a result or one clean line)."""

import itertools
import json
import math
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from aifabric import budget
from aifabric.cli.app import app
from aifabric.cluster.presets import list_presets, preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.ops import Collective
from aifabric.engines.formula import formula_collective
from aifabric.errors import ConfigError

OPS = [c.value for c in Collective]
TORUS_DCN = {
    "name": "torus-dcn",
    "accelerator": "tpu-v5p",
    "gpus_per_node": 4,
    "gpus": 128,
    "scale_up": {"kind": "torus", "gpus": 64, "torus_dims": [4, 4, 4]},
    "scale_out": {"nic": "connectx-7", "switch": "quantum-2-qm9700"},
}


def test_tpu_pod_all_to_all_is_bisection_bound():
    # v5p: B = 6 links x 90 GB/s = 540 GB/s per direction per chip (JAX scaling book, ICI BW/link one-way);
    # the pod's largest slice 16x16x24 (Cloud TPU v5p docs; the API runs on it as the CLI does), k = 3 axes.
    # T = k S max_a m(d_a) / B with m(24) = 24/4 = 6: 3 x 1e9 x 6 / 540e9 = 33.33 ms; latency = diameter
    # 8 + 8 + 12 = 28 hops x 1 us.
    r = formula_collective("all_to_all", 1e9, preset("tpu-v5p-pod"))
    assert r.algorithm == "torus"
    assert r.time_s == pytest.approx(3 * 1e9 * 6 / 540e9 + 28e-6)


def test_torus_all_to_all_on_a_ring_matches_the_scaling_book():
    # A 1-D ring of 8 chips (8x1x1): k = 1, B = 2 links x 100 GB/s. Book: V / (4 W_bidir) with V = n S total
    # bytes and W_bidir = 200 GB/s per link both ways -> 8 x 1e9 / (4 x 200e9) = 10 ms.
    spec = ClusterSpec.from_dict(
        {
            "accelerator": "tpu-v5p",
            "gpus_per_node": 4,
            "gpus": 8,
            "scale_up": {"kind": "torus", "gpus": 8, "torus_dims": [8, 1, 1], "bandwidth": "400 GB/s"},
            "scale_out": None,
            "front_end": None,
            "management": None,
        }
    )
    r = formula_collective("all_to_all", 1e9, spec, efficiency="line_rate")
    assert r.time_s == pytest.approx(1e9 * 8 / (4 * 200e9))


@pytest.mark.parametrize(
    ("op", "expected_s"),
    [
        # On the largest slice 16x16x24 (6,144 chips, diameter 8 + 8 + 12 = 28 hops), B = 6 x 90 GB/s.
        # S / B + D h: 1e9 / 540e9 + 28 us (root injection bound, one diameter of latency)
        ("broadcast", 1e9 / 540e9 + 28e-6),
        ("reduce", 1e9 / 540e9 + 28e-6),
        # all-gather: (n-1)/n S / B + D h
        ("all_gather", 6143 / 6144 * 1e9 / 540e9 + 28e-6),
    ],
)
def test_tpu_pod_broadcast_reduce_all_gather(op, expected_s):
    assert formula_collective(op, 1e9, preset("tpu-v5p-pod")).time_s == pytest.approx(expected_s)


def test_tpu_pod_send_recv_uses_one_ici_link():
    from aifabric.collectives.communicator import Communicator

    spec = preset("tpu-v5p-pod")
    r = formula_collective("send_recv", 1e9, spec, Communicator.contiguous(spec, 2))
    assert r.time_s == pytest.approx(1e9 / 90e9 + 1e-6)  # one 9e10 B/s link (scaling book), one hop


@pytest.mark.parametrize("op", OPS)
def test_torus_with_a_data_centre_network_times_every_collective(op):
    from aifabric.collectives.communicator import Communicator

    spec = ClusterSpec.from_dict(TORUS_DCN)
    comm = Communicator.contiguous(spec, 2) if op == "send_recv" else None
    r = formula_collective(op, 1e8, spec, comm)
    assert math.isfinite(r.time_s) and r.time_s > 0
    if op != "send_recv":  # 128 chips in two 64-chip tori: the NICs (64 x 49.15 GB/s) bound it
        assert r.busbw_bytes_per_s < 64 * 49.15e9


def test_single_domain_all_to_all_has_no_network_term():
    # 4 x V100 PCIe through an Intel CPU, no NIC: SHM (the GPUs' path PHB is beyond NCCL's default P2P level
    # PXB, paths.cc), each GPU sends 3/4 of S at Gen3 16 GB/s x 0.6 = 9.6 GB/s: 1e9 x 0.75 / 9.6e9 = 78.1 ms;
    # with P2P through the CPU (NCCL_P2P_LEVEL=SYS) at 12/1.2 = 10 GB/s: 75 ms
    spec = preset("v100-pcie-4gpu")
    r = formula_collective("all_to_all", 1e9, spec)
    assert r.time_s == pytest.approx(0.078125, rel=1e-3)
    p2p = formula_collective("all_to_all", 1e9, spec, env={"NCCL_P2P_LEVEL": "SYS"})
    assert p2p.time_s == pytest.approx(0.075, rel=1e-3)


@pytest.mark.parametrize(
    ("calibration", "field"),
    [
        (SimpleNamespace(intra_scale=0.0), "calibration.intra_scale"),
        (SimpleNamespace(inter_scale=float("nan")), "calibration.inter_scale"),
        (SimpleNamespace(latency_scale=float("inf")), "calibration.latency_scale"),
    ],
)
def test_zero_or_nan_bandwidth_scales_are_refused(calibration, field):
    with pytest.raises(ConfigError, match=field):
        formula_collective("all_reduce", 1e9, preset("h100-ib-2node"), calibration=calibration)


def test_links_engine_refuses_a_torus_naming_the_engine():
    r = CliRunner().invoke(app, ["collective", "all_reduce", "-c", "tpu-v5p-pod", "--engine", "links"])
    assert r.exit_code == 2 and r.stderr.startswith("error: --engine: the links and flow engines")


@pytest.fixture
def _small_budget(monkeypatch):
    # Heavy all_to_all routing is refused at once instead of taking minutes on a shared machine.
    monkeypatch.setenv(budget.ENV_VAR, "1GiB")
    budget.set_memory_limit(None)
    yield
    budget.set_memory_limit(None)


@pytest.mark.usefixtures("_small_budget")
@pytest.mark.parametrize(
    ("name", "engine"), list(itertools.product(list_presets(), ["formula", "links", "flow"]))
)
def test_every_preset_collective_engine_gives_a_result_or_one_line(name, engine):
    runner = CliRunner()
    for op in OPS:
        r = runner.invoke(app, ["collective", op, "-c", name, "--engine", engine, "-s", "1MB"])
        assert r.exit_code in (0, 2), (name, op, engine, repr(r.exception))
        if r.exit_code == 2:
            lines = r.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: "), (name, op, engine, r.stderr)
            # the line names the field: "<field>: ..."
            assert ": " in lines[0].removeprefix("error: "), lines[0]
        else:
            assert "time" in r.stdout


@pytest.mark.parametrize("seed", ["-1", str(2**40), "99999999999999999999999"])
def test_out_of_range_seed_is_one_line(seed):
    # a huge seed overflowed the 64-bit hash in engines/routing.py:_route_scale_out
    r = CliRunner().invoke(
        app,
        [
            "collective",
            "all_reduce",
            "-c",
            "h100-ib-2node",
            "--engine",
            "flow",
            "--routing",
            "ecmp",
            "--seed",
            seed,
        ],
    )
    assert r.exit_code == 2 and r.stderr.strip().splitlines() == [
        f"error: --seed: must be an integer from 0 to {2**40 - 1} (2**40 - 1), got {seed}"
    ]


@pytest.mark.parametrize("engine", ["formula", "links", "flow"])
def test_one_rank_costs_its_copy_on_every_engine(engine):
    # one rank moves nothing over a link, but NCCL copies send into receive out of place (NVIDIA/nccl
    # v2.26.2-1 src/device/onerank.cu ncclLaunchOneRank: cudaMemcpyAsync): every engine times that copy
    # alike, 2 S / HBM bandwidth of the lesson's accelerator (catalogue hbm_bandwidth)
    r = CliRunner().invoke(
        app, ["collective", "reduce", "-c", "lesson", "--engine", engine, "--ranks", "1", "--json"]
    )
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)[0]
    hbm = preset("lesson").accelerator_spec.hbm_bandwidth_bytes_per_s
    assert out["time_s"] == pytest.approx(2 * out["message_bytes"] / hbm, rel=1e-9)


def test_flow_engine_refuses_uniform_traffic_it_cannot_finish_quickly():
    # 3 jobs x 192 GPUs x 191 peers = 110,016 concurrent flows: 90 s when it ran (issue 14 fuzz, "hang");
    # above MAX_FLOW_GROUPS it is refused at once with the links engine as the way out.
    res = CliRunner().invoke(
        app, ["fabric", "uniform", "-c", "gb200-nvl72", "-s", "1 GiB", "--engine", "flow", "--jobs", "3"]
    )
    assert res.exit_code == 2
    assert "110,016 independent flows" in res.output and "--engine links" in res.output
    assert "Traceback" not in res.output
