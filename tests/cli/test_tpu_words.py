"""On a TPU cluster the output names its parts as the catalogue does ("chips", Cloud TPU docs), and a
refused run prints its refusal alone: no slice note before it."""

from __future__ import annotations

from tests.cli.refusal import refused
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cli.common import devices

runner = CliRunner()


def test_devices_respells_gpu_words_only():
    assert devices("256 GPUs, 117 TFLOP/s per GPU, GPUDirect RDMA", "chip") == (
        "256 chips, 117 TFLOP/s per chip, GPUDirect RDMA"
    )
    assert devices("256 GPUs", "GPU") == "256 GPUs"


def test_train_plan_and_cluster_show_say_chips_on_a_tpu_pod():
    # tpu-v5e-pod: 256 chips, 8 per host (Cloud TPU v5e docs).
    outputs = [
        runner.invoke(app, ["train", "-c", "tpu-v5e-pod", "-m", "llama3-8b", "--tp", "8"]),
        runner.invoke(app, ["plan", "-c", "tpu-v5e-pod", "-m", "llama3-8b", "--top", "1"]),
        runner.invoke(app, ["cluster", "show", "tpu-v5e-pod"]),
    ]
    for r in outputs:
        assert r.exit_code == 0, r.output
        assert "GPU" not in r.stdout.replace("GPUDirect", "")
    train, plan, show = (r.stdout for r in outputs)
    assert "llama3-8b on 256 chips of tpu-v5e-pod" in train and "TFLOP/s per chip" in train
    assert "GB per chip" in train
    assert "llama3-8b on 256 chips of tpu-v5e-pod" in plan and "TFLOP/s/chip" in plan
    assert "chips per node" in show and "Bandwidth per chip" in show


def test_gpu_clusters_keep_saying_gpus():
    r = runner.invoke(app, ["cluster", "show", "h100-ib-2node"])
    assert r.exit_code == 0 and "GPUs per node" in r.stdout and "chip" not in r.stdout


def test_refusals_on_a_tpu_pod_larger_than_a_slice_are_one_line():
    # tpu-v5p-pod (8,960 chips) runs on its largest slice unasked, a note printed only with a result.
    no_gemm = "no measured compute efficiency for 'tpu-v5p'"
    refused(["train", "-c", "tpu-v5p-pod", "-m", "llama3-8b", "--tp", "3"], "tp=3 does not divide n_heads=32")
    refused(["train", "-c", "tpu-v5p-pod", "-m", "llama3-8b"], no_gemm)
    refused(["plan", "-c", "tpu-v5p-pod", "-m", "llama3-8b"], no_gemm)
