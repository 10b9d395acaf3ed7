"""Blind check of the other half, third set: failures, job MTBF, checkpoint size, write, restore and interval.

Each test describes the published setup with the library call or the command a user runs (``aifabric
checkpoint`` and the series MTBF under its ``--gpu-mtbf`` / ``--node-mtbf``) and asserts the published
figure within 10 % (the sources print two or three digits), with its source and the hand derivation. Figures
the model misses are in ``MISSED`` (product figure, published figure, diagnosis); their test re-measures the
product's figure, so a fix shows up as a failure there.

Sources (none in the project's earlier source lists):

- V. J. Reddi et al., "Machine Learning Systems", vol. 2, appendix D "Reliability Foundations" (harvard-edge/
  cs249r_book; harvard-edge.github.io/cs249r_book_dev/vol2/backmatter/appendix_reliability.html): Table D.1
  MTTF of a GPU 50,000 h, a NIC 150,000 h, a PSU 100,000 h; "A node with 5,172-hour MTBF"; Table D.2
  (8 GPUs, 2 NICs, 2 PSUs per node) cluster MTBF 161.6 h at 256 GPUs, 40.4 h at 1,024, 5.1 h at 8,192,
  4.1 h at 10,000, 25 minutes at 100,000; Table D.4 (14 B/param) 98 / 182 / 980 / 2,450 GB for 7B / 13B /
  70B / 175B, written at 100 GB/s in 0.98 / 1.8 / 9.8 / 24.5 s; Example 22.1: 175B on 10,000 GPUs,
  "tau_opt = 14.2 min", "2.9 percent", "20,000 GPUs ... 10.1 minutes"; Table D.5: reload 24.5 s, replay
  ~7.1 min, detect 30 s, reschedule 60 s.
- Epoch AI, "Hardware failures won't limit AI scaling" (epoch.ai/blog/hardware-failures-wont-limit-ai-scaling,
  2024), and MLCommons' MLPerf Storage v2.0 results release (GlobeNewswire, 4 August 2025, as mirrored at
  tmcnet.com/usubmit/2025/08/04/10233564.htm): an accelerator failing once in 50,000 hours; 100,000 of them
  fail "every 30 minutes" / "every half-hour", a million "every 3 minutes" / "every three minutes".
- T. Tsugriy, "Distributed training book", chapter "Failures and Checkpointing" (ttsugriy.github.io/
  distributed-training-book/composition/26-failures-checkpoints): 10,000 GPUs of 20,000 h and 1,250 hosts of
  10,000 h, "MTBF_system = 1 / 0.625 = 1.6 hours"; "10,000 GPUs at 4-hour MTBF per GPU, you would lose one
  GPU every 1.4 seconds".
- G. K. Lockwood, "Job reliability" (glennklockwood.com/garden/job-reliability): Meta Llama 3, JMTTI 2.5 hours
  on 16,000 H100, "Normalized MTTI (10K)" 4.00 hours.
- N. R. Saxena, S. Hukerikar, M. Blaz, S. Raj (NVIDIA), "Optimal checkpoint interval with availability as an
  objective function", arXiv:2410.18124, 2024 (abstract): the lost-time optimum is sqrt(2 Tf Ts), "identical"
  to Young's; the availability optimum Ts + sqrt(2 (Tf + Tr) Ts + Ts^2) is "asymptotically same" for
  Ts << Tr and Tr << Tf.

Mechanisms this check added, each from a source: the job's MTBF from its parts in series (1 / M =
sum n_i / M_i; the appendix's MTBF cascade, Kokolis et al. HPCA'25), ``checkpoint --gpu-mtbf/--node-mtbf``;
the fully parallel load (Megatron-Core ``--ckpt-fully-parallel-load``, the load split across the
data-parallel group; MegaScale's read-once-and-broadcast), ``checkpoint --parallel-load``.

Error before -> after: every MTBF row (the appendix's node and cluster MTBFs, Epoch / MLCommons, Tsugriy,
Lockwood) could not be expressed (``--mtbf`` took only the job's MTBF) -> within 0.3 %; the appendix's 175B
reload 458.5 s vs 24.5 s (+1,771 %: every one of the 125 data-parallel replicas read the weights from the
100 GB/s file system) -> 24.59 s (+0.4 %).
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.storage import checkpoint_size, checkpoint_time
from aifabric.storage.interval import series_mtbf_s, young_daly_interval_s

HOUR = 3600.0
GPU_MTBF_S = 50_000 * HOUR  # Reddi Table D.1, Epoch, MLCommons
# The rest of the appendix's node in series: 2 NICs of 150,000 h and 2 PSUs of 100,000 h (Table D.1):
# 1 / (2 / 150,000 + 2 / 100,000) = 30,000 h.
NODE_REST_MTBF_S = 1 / (2 / (150_000 * HOUR) + 2 / (100_000 * HOUR))

# The appendix's storage: 100 GB/s aggregate, read and write (Table D.4, Example 22.1). The DGX H100 nodes
# and the DDN system only carry it; at 1,250 writers each node's share, 80 MB/s, is far under its NICs.
STORAGE = {"system": "ddn-ai400x2-turbo", "aggregate_read": "100 GB/s", "aggregate_write": "100 GB/s"}


def _cluster_mtbf_s(gpus: int) -> float:
    """Series MTBF of ``gpus`` GPUs on 8-GPU nodes (``checkpoint --gpu-mtbf --node-mtbf``'s sum)."""
    return series_mtbf_s([(gpus, GPU_MTBF_S), (gpus // 8, NODE_REST_MTBF_S)])


def test_rest_of_the_node_is_30000_hours():
    # Hand derivation from Table D.1, the value --node-mtbf takes below.
    assert pytest.approx(30_000.0) == NODE_REST_MTBF_S / HOUR


def test_node_mtbf_of_eight_gpus_two_nics_two_psus():
    # Published: "A node with 5,172-hour MTBF". Model: 1 / (8 / 50,000 + 1 / 30,000) = 5,172.4 h.
    assert _cluster_mtbf_s(8) / HOUR == pytest.approx(5172.0, rel=0.10)
    assert _cluster_mtbf_s(8) / HOUR == pytest.approx(5172.4, rel=1e-4)


@pytest.mark.parametrize(
    "gpus,published_h",
    [(256, 161.6), (1024, 40.4), (8192, 5.1), (10_000, 4.1), (100_000, 25 / 60)],
)
def test_cluster_mtbf_by_scale(gpus, published_h):
    # Published: Table D.2. Model: node MTBF / nodes, 5,172.4 h / (GPUs / 8): 161.6, 40.4, 5.05, 4.14 h and
    # 24.8 min.
    assert _cluster_mtbf_s(gpus) / HOUR == pytest.approx(published_h, rel=0.10)


@pytest.mark.parametrize("gpus,published_min", [(100_000, 30.0), (1_000_000, 3.0)])
def test_accelerators_of_50000_hours_fail_every(gpus, published_min):
    # Published (Epoch AI; MLCommons): every 30 min at 100,000, every 3 min at a million.
    # Model: 50,000 h / N = 30.0 and 3.0 min (GPUs alone, as both state).
    assert series_mtbf_s([(gpus, GPU_MTBF_S)]) / 60 == pytest.approx(published_min, rel=0.10)


def test_gpus_and_hosts_in_series_fail_every_1_6_hours():
    # Published (Tsugriy): 10,000 GPUs of 20,000 h and 1,250 hosts of 10,000 h: 1.6 h.
    # Model: 1 / (0.5 + 0.125) per hour = 1.6 h.
    mtbf = series_mtbf_s([(10_000, 20_000 * HOUR), (1_250, 10_000 * HOUR)])
    assert mtbf / HOUR == pytest.approx(1.6, rel=0.10)


def test_ten_thousand_gpus_of_four_hours_lose_one_every_1_4_seconds():
    # Published (Tsugriy, the "deliberately pessimistic stress test"): 1.4 s. Model: 4 h / 10,000 = 1.44 s.
    assert series_mtbf_s([(10_000, 4 * HOUR)]) == pytest.approx(1.4, rel=0.10)


def test_llama3_interruptions_normalized_to_ten_thousand_gpus():
    # Published (Lockwood): JMTTI 2.5 h on 16,000 H100 -> 4.00 h normalized to 10,000. Model: one GPU's
    # share is 2.5 h x 16,000 = 40,000 h; 10,000 of them in series: 4.0 h.
    assert series_mtbf_s([(10_000, 2.5 * HOUR * 16_000)]) / HOUR == pytest.approx(4.00, rel=0.10)


@pytest.mark.parametrize(
    "params,published_gb,published_s",
    [(7e9, 98, 0.98), (13e9, 182, 1.8), (70e9, 980, 9.8), (175e9, 2450, 24.5)],
)
def test_checkpoint_size_and_write_time_at_100_gb_per_s(params, published_gb, published_s):
    # Published: Table D.4. Model: P x (2 + 12) B = the table's sizes; written by every GPU of the 1,250-node
    # cluster (ZeRO-1), each node's share of the 100 GB/s aggregate binding: S / 100 GB/s.
    spec = preset("dgx-h100-superpod", nodes=1250, storage=STORAGE)
    size = checkpoint_size(params, dp=spec.n_gpus)
    res = checkpoint_time(spec, size)
    assert size.total_bytes / 1e9 == pytest.approx(published_gb, rel=0.10)
    assert res.write.bottleneck == "file system aggregate"
    assert res.write.seconds == pytest.approx(published_s, rel=0.10)


def _worked_example(nodes: int, *extra: str) -> dict:
    """``aifabric checkpoint`` for Example 22.1: 175B on ``nodes`` DGX H100 (TP 8 x PP 10, the rest DP), the
    100 GB/s file system, GPUs of 50,000 h and the rest of each node of 30,000 h."""
    args = ["checkpoint", "dgx-h100-superpod", "--nodes", str(nodes), "--params", "175e9"]
    args += ["--tp", "8", "--pp", "10", "--storage", "ddn-ai400x2-turbo"]
    args += ["--storage-read", "100 GB/s", "--storage-write", "100 GB/s"]
    args += ["--gpu-mtbf", "50000 h", "--node-mtbf", f"{NODE_REST_MTBF_S / HOUR:.6f} h", *extra]
    r = CliRunner().invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_young_daly_interval_of_the_175b_worked_example():
    # Published: Example 22.1, MTBF 4.14 h, delta 24.5 s: tau = 14.2 min, delta / tau = 2.9 %.
    # Model: the job MTBF from its 10,000 GPUs and 1,250 nodes, 4.138 h; sqrt(2 x 24.5 x 14,897) = 854.4 s.
    out = _worked_example(1250)
    assert out["job_mtbf_s"] / HOUR == pytest.approx(4.14, rel=0.01)
    assert out["write"]["seconds"] == pytest.approx(24.5, rel=0.10)
    assert out["interval_sync_s"] / 60 == pytest.approx(14.2, rel=0.10)
    assert out["write"]["seconds"] / out["interval_sync_s"] == pytest.approx(0.029, rel=0.10)
    # Table D.5: on average half the interval is replayed, "~7.1 min"
    assert out["interval_sync_s"] / 2 / 60 == pytest.approx(7.1, rel=0.10)


def test_doubling_the_cluster_shortens_the_interval_to_10_1_minutes():
    # Published: 20,000 GPUs, MTBF halved: 10.1 min. Model: 2,500 nodes, the same write (twice the writers,
    # each with half the aggregate and half the bytes): 854.4 / sqrt(2) = 604 s = 10.07 min.
    out = _worked_example(2500)
    assert out["interval_sync_s"] / 60 == pytest.approx(10.1, rel=0.10)


def test_reload_of_the_175b_checkpoint_with_a_fully_parallel_load():
    # Published: Table D.5, reload 24.5 s (2,450 GB at 100 GB/s). Model with --parallel-load: each byte read
    # once, 1.96 GB per node at 80 MB/s = 24.5 s, then each GPU receives 124/125 of its 4.375 GB of weights
    # from its DP peers over 8 x 400 Gb/s at the ConnectX-7 payload: 34.72 GB / 393.2 GB/s = 0.088 s.
    # Before, every replica read the weights: 36.68 GB per node, 458.5 s (+1,771 %).
    out = _worked_example(1250, "--parallel-load")
    assert out["restore"]["seconds"] + out["restore_exchange_s"] == pytest.approx(24.5, rel=0.10)
    assert out["restore_exchange_s"] == pytest.approx(0.0883, rel=0.01)
    assert _worked_example(1250)["restore"]["seconds"] == pytest.approx(458.5, rel=1e-3)


def test_young_interval_is_the_lost_time_optimum():
    # Saxena et al.: the lost-time optimum is sqrt(2 Tf Ts), "identical" to Young's. Example 22.1's numbers.
    assert young_daly_interval_s(24.5, 4.14 * HOUR) == pytest.approx((2 * 4.14 * HOUR * 24.5) ** 0.5)


def test_young_interval_near_the_availability_optimum_when_save_and_restart_are_short():
    # Saxena et al.: availability-optimal Tc = Ts + sqrt(2 (Tf + Tr) Ts + Ts^2), "asymptotically same" for
    # Ts << Tr << Tf. Example 22.1 with Table D.5's restart (30 + 60 + 24.5 s): 882.7 s; the product's
    # interval 854.4 s (-3.2 %).
    ts, tf, tr = 24.5, _cluster_mtbf_s(10_000), 30 + 60 + 24.5
    availability_optimal = ts + (2 * (tf + tr) * ts + ts**2) ** 0.5
    assert _worked_example(1250)["interval_sync_s"] == pytest.approx(availability_optimal, rel=0.10)


MISSED: dict[str, tuple[float, float, str]] = {
    # name: (product figure, published figure, diagnosis)
    "restart_before_replay_s_175b": (
        24.5 + 0.0883,
        30 + 60 + 24.5,
        "Reddi Table D.5, a failure's cost before replay: product 24.6 s (the fully parallel reload) vs "
        "114.5 s (detect 30 s + reschedule 60 s + reload 24.5 s, -79 %). Missing mechanism: failure "
        "detection (a heartbeat timeout) and rescheduling onto a spare node. The restart the Young/Daly "
        "goodput charges is the restore alone; nothing prices the time before it starts.",
    ),
}


@pytest.mark.parametrize("name", sorted(MISSED))
def test_a_miss_lies_outside_the_tolerance_and_names_both_figures(name: str) -> None:
    """A miss is one the agreement tests' 10 % would not pass, its diagnosis naming measured and predicted."""
    product, published, why = MISSED[name]
    assert " vs " in why and abs(product / published - 1) > 0.10


def test_missed_product_figures_are_still_what_the_product_gives() -> None:
    """Re-measured: a fix that moves one of these shows up here (then move it into an agreement test)."""
    out = _worked_example(1250, "--parallel-load")
    restart = out["restore"]["seconds"] + out["restore_exchange_s"]
    assert restart == pytest.approx(MISSED["restart_before_replay_s_175b"][0], rel=1e-3)
