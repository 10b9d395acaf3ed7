"""Blind check of the other half, fifth set: checkpoint sizes and times, failures, local SGD, local storage.

Each test describes the published setup with the command a user runs (``aifabric checkpoint``, ``aifabric
scale-across``) or its library call (``checkpoint_time``, ``node_path``, the Young/Daly interval and the
series MTBF under ``checkpoint --mtbf/--gpu-mtbf``) and asserts the published figure within 10 % (the sources
print two or three digits; bounds as bounds), with its source and the hand derivation. Figures the model
misses are in ``MISSED`` (product figure, published figure, diagnosis); their test re-measures the product's
figure, so a fix shows up as a failure there.

Sources (none in the project's earlier source lists):

- [MLPS2] MLCommons, MLPerf Storage v2.0 submission guidelines (github.com/mlcommons/storage,
  ``Submission_guidelines.md``, Sec. 2.2.1, Table 2 "LLM models"): Llama 3 8B on TP x PP x DP = 1 x 1 x 8 with
  ZeRO-3, checkpoint 105 GB; 70B on 8 x 1 x 8, ZeRO-3, 912 GB; 405B on 8 x 32 x 2, ZeRO-1, 5.29 TB. The
  benchmark's DLIO writer (github.com/argonne-lcf/dlio_benchmark, ``dlio_benchmark/checkpointing/
  base_checkpointing.py``) writes fp16 weights and three fp32 optimizer tensors per parameter and reports its
  "GB" as bytes / 1024^3, so the table's GB and TB are GiB and TiB.
- [GEMINI] Z. Wang et al., "GEMINI: Fast Failure Recovery in Distributed Training with In-Memory Checkpoints",
  SOSP 2023, Sec. 2, as quoted at techecho.bigdataflowing.com/zh/item/39074646: "it takes 42 minutes to
  checkpoint the model states of MT-NLG to the remote persistent storage when the bandwidth is 20Gbps".
- [SO] systemoverflow.com, "Model checkpointing & recovery": "if a checkpoint takes 120 seconds to write and
  your cluster MTBF is 6 hours, the formula suggests an interval around 38 minutes"; "A trillion parameter
  model checkpoint hits roughly 18 TB (2 bytes per parameter for weights in bfloat16, plus about 16 bytes per
  parameter for Adam...)"; "writing an 18 TB checkpoint at 100 GB/s aggregate throughput takes 180 seconds";
  "A 70 billion parameter model with Adam optimizer generates checkpoints around 600 GB to 1.1 TB".
- [DCD] DatacenterDynamics, "Meta report details hundreds of GPU and HBM3 related interruptions to Llama 3
  training run" (2024), on the Llama 3 paper: 419 unexpected interruptions in 54 days on 16,384 H100 80GB,
  "an average of one failure every three hours"; "more than a 90 percent effective training time".
- [SDL] A. Douillard et al., "Streaming DiLoCo with overlapping communication: towards a distributed
  free lunch", arXiv:2501.18512 (huggingface.co/papers/2501.18512: outer gradients quantised to 4 bits,
  bandwidth "reduced by two orders of magnitude"), as summarised by deepnewz.com ("a reduction of 400 times in
  the amount of data exchanged") and accidentalfactors.com ("the communication between devices for the outer
  loop is done in 4-bit floating point"); H = 100 inner steps, as INTELLECT-1's DiLoCo.
- [GDSR] gds-report.pages.dev, "gdsio -- local NVMe (raid0 + XFS)": gdsio XferType GPUD from four Solidigm
  D7-PS1010 drives in md raid0 into L40S GPUs (PCIe 4.0 x16): one GPU at 8 MiB 24.3 GiB/s ("PCIe 4.0 x16
  practical ceiling for a single L40S"); four GPUs 53.0 GiB/s read, "~91% of the 58 GB/s theoretical aggregate
  (4 x 14.5 GB/s)".

Error before -> after this check's fixes: Streaming DiLoCo's 400x fewer bytes than data parallelism could not
be expressed (``--sync-dtype`` stopped at fp8/int8: 1/200 of DP's bytes, -50 %) -> 1/400 (0 %) with
``scale-across --sync-dtype fp4`` (four-bit pseudo-gradients, as Streaming DiLoCo sends them); four L40S
reading their server's own NVMe raid0 -13.6 % (every storage byte was priced through a 400 GbE front-end port)
-> +1.9 % with node-local storage (a catalogue system of kind ``local``: the node's drives, no network, no
sharing between nodes).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.missed import assert_still_missed
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.cluster.resolve import resolve_cluster
from aifabric.storage import checkpoint_size, checkpoint_time
from aifabric.storage.interval import goodput_lost_fraction, series_mtbf_s, young_daly_interval_s
from aifabric.storage.paths import node_path

GIB = 2**30
TIB = 2**40
HOUR = 3600.0


def _cli(args: list[str]) -> dict:
    """A command's ``--json`` output."""
    r = CliRunner().invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


# [MLPS2] Table 2: (model preset, GPUs, TP, PP, ZeRO stage, published checkpoint bytes)
MLPERF_CHECKPOINTS = {
    "llama3-8b": (8, 1, 1, 3, 105 * GIB),
    "llama3-70b": (64, 8, 1, 3, 912 * GIB),
    "llama3-405b": (512, 8, 32, 1, 5.29 * TIB),
}


@pytest.mark.parametrize("model", sorted(MLPERF_CHECKPOINTS))
def test_mlperf_storage_checkpoint_sizes(model):
    # Published: 105 GiB = 112.7 GB (8B), 912 GiB = 979.2 GB (70B), 5.29 TiB = 5.816 TB (405B).
    # Model: ``aifabric checkpoint -m MODEL --gpus N --tp --pp --zero``: parameters x (2 B of bf16 weights +
    # 12 B of fp32 master, Adam m and v), 8.030e9 x 14 = 112.4 GB (-0.3 %), 70.55e9 x 14 = 987.8 GB (+0.9 %),
    # 405.85e9 x 14 = 5.682 TB (-2.3 %); every one of the N GPUs writes a shard (ZeRO >= 1).
    gpus, tp, pp, zero, published = MLPERF_CHECKPOINTS[model]
    args = ["checkpoint", "-m", model, "--gpus", str(gpus), "--tp", str(tp), "--pp", str(pp)]
    out = _cli([*args, "--zero", str(zero), "--storage", "ddn-ai400x2-turbo", "--storage-units", "1"])
    assert out["checkpoint_bytes"] == pytest.approx(published, rel=0.10)
    assert out["writer_gpus"] == gpus


def _write_s(n_params: float, *, nodes: int, aggregate: str, tp: int, pp: int, **bytes_per_param) -> float:
    """Seconds to write one checkpoint of ``n_params`` from ``nodes`` DGX H100 to a file system whose
    aggregate write is ``aggregate`` (``aifabric checkpoint --storage-write``)."""
    storage = {"system": "ddn-ai400x2-turbo", "aggregate_write": aggregate, "aggregate_read": aggregate}
    spec = preset("dgx-h100-superpod", nodes=nodes, storage=storage)
    size = checkpoint_size(n_params, tp=tp, pp=pp, dp=spec.n_gpus // (tp * pp), **bytes_per_param)
    res = checkpoint_time(spec, size)
    assert res.write.bottleneck == "file system aggregate"
    return res.write.seconds


def test_gemini_mt_nlg_model_states_at_20_gbps():
    # Published [GEMINI]: MT-NLG's model states take 42 minutes to reach remote storage at 20 Gb/s.
    # Model: the model states of mixed-precision Adam are the fp32 master weights, m and v, 12 B a parameter
    # (the bf16 weights are recast from the master copy, so --weight-bytes 0): 530e9 x 12 = 6.36 TB at
    # 20 Gb/s = 2.5 GB/s is 2,544 s = 42.4 min (+1.0 %). One replica, TP 8 x PP 35 = 280 GPUs.
    seconds = _write_s(530e9, nodes=35, aggregate="20 Gb/s", tp=8, pp=35, weight_bytes_per_param=0.0)
    assert seconds == pytest.approx(530e9 * 12 / 2.5e9)
    assert seconds / 60 == pytest.approx(42, rel=0.10)


def test_trillion_parameter_checkpoint_at_100_gb_s():
    # Published [SO]: an 18 TB checkpoint (1T parameters at 2 + 16 B) written at 100 GB/s takes 180 s.
    # Model: 1e12 x (2 + 16) = 18.0 TB over 128 DGX H100 sharing a 100 GB/s file system: 180 s (0 %).
    seconds = _write_s(1e12, nodes=128, aggregate="100 GB/s", tp=8, pp=16, optimizer_bytes_per_param=16.0)
    assert seconds == pytest.approx(180, rel=0.10)


def test_seventy_billion_checkpoint_lies_in_the_published_range():
    # Published [SO]: a 70B model with Adam checkpoints "around 600 GB to 1.1 TB".
    # Model: llama3-70b, 70.55e9 x 14 B = 987.8 GB, inside the range.
    out = _cli(["checkpoint", "-m", "llama3-70b", "--gpus", "64", "--tp", "8", "--storage-units", "1"])
    assert 600e9 <= out["checkpoint_bytes"] <= 1.1e12


def test_young_interval_for_a_two_minute_checkpoint_and_six_hour_mtbf():
    # Published [SO]: 120 s to write, 6 h MTBF -> "an interval around 38 minutes".
    # Model: sqrt(2 x 120 s x 21,600 s) = 2,277 s = 37.9 min (-0.1 %).
    assert young_daly_interval_s(120.0, 6 * HOUR) / 60 == pytest.approx(38, rel=0.10)


def test_llama3_job_mtbf_from_its_gpus_in_series():
    # Published [DCD]: 419 unexpected interruptions in 54 days on 16,384 H100: 54 x 24 / 419 = 3.09 h.
    # Model: ``checkpoint --gpu-mtbf '50000 h'`` (the accelerator MTBF of MLCommons' and Epoch AI's failure
    # arithmetic) on 16,384 GPUs in series: 50,000 / 16,384 = 3.05 h (-1.3 %). The agreement is of the
    # whole job: the paper's GPU categories account for 268 of the 419 (64 %), so the parts split differently.
    mtbf_h = series_mtbf_s([(16_384, 50_000 * HOUR)]) / HOUR
    assert mtbf_h == pytest.approx(54 * 24 / 419, rel=0.10)


def test_llama3_effective_training_time_above_90_percent():
    # Published [DCD]: "more than a 90 percent effective training time" through 419 interruptions in 54 days.
    # Model: llama3-405b (TP 8, PP 16, DP 128) on 2,048 DGX H100 writing to Meta's Tectonic (7 TB/s): 5.68 TB
    # in 0.81 s; Young's interval at a 3.09 h MTBF is 134 s; lost delta/tau + tau/(2M) + R/M with the 15.5 s
    # restore as R: 1.2 % lost, 98.7 % effective. A bound: the paper's losses beyond checkpoint and restore
    # (detection, rescheduling, the 47 planned stops) are not priced.
    spec = preset("dgx-h100-superpod", nodes=2048, storage={"system": "meta-tectonic"})
    res = checkpoint_time(spec, checkpoint_size(405.85e9, tp=8, pp=16, dp=128))
    mtbf_s = 54 * 86400 / 419
    tau = young_daly_interval_s(res.write.seconds, mtbf_s)
    effective = 1 - goodput_lost_fraction(tau, res.write.seconds, mtbf_s, res.restore.seconds)
    assert effective > 0.90


def test_streaming_diloco_sends_400x_fewer_bytes_than_data_parallelism():
    # Published [SDL]: 400x less data exchanged than data parallelism, H = 100 inner steps, 4-bit outer
    # gradients. Model: ``scale-across --inner-steps 100 --sync-dtype fp4 --grad-dtype bf16``: 0.5 / 2 B per
    # gradient element once per 100 steps, 1/400 of DP's bytes over the DCI (0 %; before fp4, fp8 gave 1/200).
    args = ["scale-across", "--nodes", "64", "--message", "1 GB", "--inner-steps", "100"]
    out = _cli([*args, "--sync-dtype", "fp4", "--grad-dtype", "bf16"])
    assert 1 / out["local_sgd"]["cross_site_bytes_ratio"] == pytest.approx(400, rel=0.10)


# [GDSR]: one server of four L40S (PCIe 4.0 x16) reading its own NVMe raid0 with GPUDirect Storage: four
# D7-PS1010 drives as node-local storage (catalogue kind local), no front-end in the path.
GDSR = """\
name: gds-report-l40s-local-nvme
accelerator: l40s
gpus_per_node: 4
nodes: 1
scale_up: {kind: pcie, link: pcie-gen4}
scale_out: null
front_end: null
management: null
storage: {system: local-nvme-d7-ps1010, units: 4}
"""


def _gdsr_read(tmp_path: Path, gpus: int) -> float:
    """GB/s one node reads into ``gpus`` GPUs under ``node_path`` on the [GDSR] server."""
    path = tmp_path / "gdsr.yaml"
    path.write_text(GDSR)
    spec = resolve_cluster(str(path))
    return node_path(spec, direction="read", active_nodes=1, gpus=gpus).rate_bytes_per_s / 1e9


def test_four_gpus_read_the_local_raid0_at_its_drives_rate(tmp_path):
    # Published [GDSR]: 53.0 GiB/s = 56.9 GB/s into four L40S, "~91% of the 58 GB/s theoretical aggregate".
    # Model: min(4 x 28.81 GB/s of PCIe, 4 drives x 14.5 GB/s) = 58.0 GB/s, the drives binding (+1.9 %).
    # Before node-local storage the bytes crossed a 400 GbE front-end port: 49.15 GB/s (-13.6 %).
    assert _gdsr_read(tmp_path, 4) == pytest.approx(58.0)
    assert _gdsr_read(tmp_path, 4) == pytest.approx(53.0 * GIB / 1e9, rel=0.10)


MISSED: dict[str, tuple[float, float, str]] = {
    # name: (product figure, published figure, diagnosis)
    "gdsr_one_l40s_local_nvme_read_gb_s": (
        28.81,
        24.3 * GIB / 1e9,
        "[GDSR] one L40S reads 24.3 GiB/s = 26.09 GB/s from local NVMe at 8 MiB; the product prices "
        "the GPU's PCIe 4.0 x16 link at its TLP payload, 32 GB/s x 128/130 x 256/280 = 28.81 GB/s "
        "(+10.4 %), which the same GPU met over NFS/RDMA (26.41 GiB/s, +1.6 %). Missing: the drive-to-GPU "
        "peer-to-peer write through the CPU's root complex, which no published per-platform figure prices.",
    ),
}

MEASURE = {
    "gdsr_one_l40s_local_nvme_read_gb_s": lambda tmp: _gdsr_read(tmp, 1),
}


@pytest.mark.parametrize("name", sorted(MISSED))
def test_missed_figures_are_still_missed(name, tmp_path):
    product, published, _ = MISSED[name]
    assert_still_missed(MEASURE[name](tmp_path), product, published)
