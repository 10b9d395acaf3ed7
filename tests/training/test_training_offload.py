"""CPU activation offload (Megatron-LM ``cpu_offloading_num_layers``, Transformer Engine's CPU offload)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import aifabric.training.step as step_module
from aifabric.catalog.loader import accelerator, add_parts
from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.errors import ConfigError, Infeasible
from aifabric.training.efficiency import compute_profile
from aifabric.training.layout import ParallelLayout
from aifabric.training.memory import memory_breakdown
from aifabric.training.models import get_model
from aifabric.training.offload import (
    check_offload_fits,
    host_link_bytes_per_s,
    offload_exposed_s,
    offload_windows,
)
from aifabric.training.step import StepModel, StepOptions

LLAMA3_70B = get_model("llama3-70b")
#: Megatron-Bridge's GB200 70B FSDP layout: 64 GPUs, microbatch 2, no recomputation.
FSDP_70B = ParallelLayout(dp=64, microbatch_size=2, global_batch_size=128, zero_stage=3, recompute="none")


def _memory(offload_layers: int):
    return memory_breakdown(
        LLAMA3_70B, FSDP_70B, 186e9, flash_attention=True, fp8=True, offload_layers=offload_layers
    )


def test_offload_moves_forty_layers_of_activations_hand_count():
    # Llama 3 70B layer, FP8, FlashAttention, no dropout, t = 1, bytes per token: norm inputs 4h, QKV and
    # MLP inputs h each (FP8), Q 2h, K and V 4 x 8 x 128 = h / 2, output-projection input h (FP8), gated MLP
    # 2f + 2f + f (FP8 down-projection input), log-sum-exp 4 x 64:
    # 9.5 x 8192 + 5 x 28672 + 256 = 221,440; x 2 x 8192 tokens x 40 layers = 145.1 GB.
    per_layer = 221_440 * 2 * 8192
    none, forty = _memory(0), _memory(40)
    assert forty.offloaded_activation_bytes == pytest.approx(40 * per_layer)
    assert none.layer_activation_bytes - forty.layer_activation_bytes == pytest.approx(40 * per_layer)
    assert none.total_bytes - forty.total_bytes == pytest.approx(40 * per_layer)
    assert none.offloaded_activation_bytes == 0.0


def test_more_offload_never_saves_less_memory():
    previous = _memory(0)
    for n in range(1, LLAMA3_70B.n_layers):
        now = _memory(n)
        assert now.total_bytes <= previous.total_bytes
        assert now.offloaded_activation_bytes >= previous.offloaded_activation_bytes
        assert now.total_bytes + now.offloaded_activation_bytes == pytest.approx(_memory(0).total_bytes)
        previous = now


def test_the_catalogue_links_per_direction():
    # NVLink-C2C 900 GB/s bidirectional -> 450 per direction; PCIe Gen5 x16 64 GB/s x 0.9002 (DMA payload).
    assert host_link_bytes_per_s(accelerator("gb200")) == pytest.approx(450e9)
    assert host_link_bytes_per_s(accelerator("h100-sxm")) == pytest.approx(64e9 * 0.9002)
    assert host_link_bytes_per_s(accelerator("tpu-v5p")) is None


def test_windows_cover_every_layer_after_the_first_once():
    # Transformer Engine's layer_window_map: the last window ends at the last layer.
    for n_layers in (5, 32, 80, 126):
        for n in range(1, n_layers):
            windows = offload_windows(n_layers, n)
            assert len(windows) == n and min(windows) >= 1 and sum(windows) == n_layers - 1


def test_a_copy_hides_behind_its_window_and_the_rest_is_exposed():
    # copies of 8 ms beside windows of 1, 2, 2 layers of 5 ms: 3 ms exposed, then none.
    assert offload_exposed_s(8e-3, 5e-3, (1, 2, 2)) == pytest.approx(3e-3)
    assert offload_exposed_s(8e-3, 10e-3, (1, 2, 2)) == 0.0


def _h100_8b_step(monkeypatch, rate: float) -> float:
    monkeypatch.setattr(step_module, "host_link_bytes_per_s", lambda acc: rate)
    sm = StepModel(
        get_model("llama3-8b"), preset("dgx-h100-superpod", gpus=8), options=StepOptions(offload_layers=31)
    )
    return sm.evaluate(ParallelLayout(dp=8, global_batch_size=8, zero_stage=3, recompute="none")).step_s


def test_offload_over_a_slower_link_is_never_faster(monkeypatch):
    rates = (900e9, 450e9, 128e9, 57.6e9, 16e9)
    steps = [_h100_8b_step(monkeypatch, r) for r in rates]
    assert all(a <= b for a, b in zip(steps, steps[1:], strict=False))
    assert steps[-1] > steps[0]  # at 16 GB/s the copies outlast their windows


@pytest.mark.parametrize(
    "options,layout,needle",
    [
        ({"offload_layers": 80}, {}, "offload_layers=80: at most 79"),
        ({"offload_layers": 8}, {"recompute": "full"}, "offload_layers=8 with recompute=full"),
    ],
)
def test_refused_where_megatron_refuses(options, layout, needle):
    sm = StepModel(LLAMA3_70B, preset("gb200-nvl72", gpus=72), options=StepOptions(fp8=True, **options))
    lay = {"dp": 72, "microbatch_size": 1, "global_batch_size": 72, "zero_stage": 3, "recompute": "none"}
    with pytest.raises(ConfigError, match=needle):
        sm.check(ParallelLayout(**{**lay, **layout}))


def test_refused_without_a_cpu_link_and_below_zero():
    with pytest.raises(ConfigError, match="offload_layers must be an integer >= 0, got -1"):
        StepOptions(offload_layers=-1)
    options = StepOptions(offload_layers=4, compute=compute_profile("h100-sxm"))
    with pytest.raises(ConfigError, match="offload_layers=4: the tpu-v5p has no link to a CPU"):
        StepModel(get_model("llama3-8b"), preset("tpu-v5p-pod"), options=options)


GB200_70B = ("train", "--model", "llama3-70b", "--cluster", "gb200-nvl72", "--nodes", "18", "--fp8",
             "--zero", "3", "-b", "1", "--global-batch", "72", "--recompute", "none")  # fmt: skip


@pytest.mark.parametrize(
    "more,line",
    [
        (("--offload-layers", "-1"), "error: --offload-layers must be an integer >= 0, got -1"),
        (
            ("--offload-layers", "80"),
            "error: --offload-layers=80: at most 79, fewer than the model's 80 layers",
        ),
        (
            ("--offload-layers", "40", "--pp", "2"),
            "error: --offload-layers=40 with pp=2: Megatron-LM offloads",
        ),
    ],
)
def test_cli_bad_offload_is_one_line_exit_2(more, line):
    r = CliRunner().invoke(app, [*GB200_70B, *more])
    assert r.exit_code == 2 and r.stdout == ""
    (got,) = r.stderr.strip().splitlines()
    assert got.startswith(line)


def test_the_catalogue_host_memory_behind_one_gpu():
    # GB200 superchip: one Grace, up to 480 GB LPDDR5X, two GPUs -> 240 GB; DGX H100: 32 x 64 GB DDR5
    # RDIMMs (MLCommons inference v4.1 DGX H200 system file: '32x 64GB'), binary as DIMMs are (JEDEC):
    # 32 x 64 x 2**30 B = 2**41 B = 2.199 TB for 8 GPUs -> 2**38 B = 274.9 GB (the datasheet's "2 TB" is
    # that binary figure); GH200: up to 480 GB LPDDR5X, one GPU; a PCIe card's server is not in the
    # catalogue.
    assert accelerator("gb200").host_memory_bytes == pytest.approx(240e9)
    assert (
        accelerator("h100-sxm").host_memory_bytes == 32 * 64 * 2**30 / 8 == pytest.approx(274.9e9, rel=1e-4)
    )
    assert accelerator("gh200-96gb").host_memory_bytes == pytest.approx(480e9)
    assert accelerator("l40s").host_memory_bytes is None


def test_the_host_memory_is_catalogued_per_host_and_shared_by_its_gpus():
    # The catalogue keeps each source's figure for the whole host and the GPUs sharing it: DGX H100 "2TB",
    # 32 x 64 GiB DIMMs = 2**41 B, for 8 GPUs (2**40 B on each of its 2 sockets, 4 GPUs each: 274.9 GB a GPU);
    # GB200 superchip 480 GB LPDDR5X for its 2 GPUs; GH200 480 GB for its one.
    for key, host, gpus in (("h100-sxm", 2**41, 8), ("h200-sxm", 2**41, 8), ("gb200", 480e9, 2),
                            ("gb300", 480e9, 2), ("gh200-144gb", 480e9, 1)):  # fmt: skip
        acc = accelerator(key)
        assert (acc.host_system_memory_bytes, acc.host_memory_gpus) == (pytest.approx(host), gpus), key
        assert acc.host_memory_bytes == pytest.approx(host / gpus), key
    # the offload bound is the share: 275 GB of activations of one DGX H100 GPU do not fit its 2**38 B
    with pytest.raises(
        Infeasible, match=r"than the 274.9 GB of host memory behind each .* \(2.199 TB shared by 8 GPUs\)"
    ):
        check_offload_fits(40, 275e9, accelerator("h100-sxm"))
    check_offload_fits(40, 2**38, accelerator("h100-sxm"))


def test_offload_beyond_the_host_memory_is_refused():
    # Microbatch 2 of 8192 tokens: 221,440 B a token a layer (hand count above) x 16,384 = 3.628 GB a layer;
    # 66 layers = 239.5 GB fit the 240 GB behind a GB200 GPU, 67 = 243.1 GB do not.
    per_layer = 221_440 * 2 * 8192
    gb200 = accelerator("gb200")
    check_offload_fits(66, _memory(66).offloaded_activation_bytes, gb200)
    with pytest.raises(Infeasible, match=r"offload_layers=67: 243.1 GB .* than the 240 GB of host memory"):
        check_offload_fits(67, _memory(67).offloaded_activation_bytes, gb200)
    assert _memory(67).offloaded_activation_bytes == pytest.approx(67 * per_layer)
    check_offload_fits(79, 1e15, accelerator("l40s"))  # no host memory in the catalogue: nothing checked


def test_cli_offload_beyond_the_host_memory_is_one_line_exit_2():
    args = [*GB200_70B[:-6], "-b", "2", "--global-batch", "144", "--recompute", "none"]
    r = CliRunner().invoke(app, [*args, "--offload-layers", "67"])
    assert r.exit_code == 2 and r.stdout == ""
    (got,) = r.stderr.strip().splitlines()
    assert got.startswith("error: --offload-layers=67: 243.1 GB of activations per GPU offloaded"), got
    assert CliRunner().invoke(app, [*args, "--offload-layers", "66"]).exit_code == 0


def test_gpus_sharing_no_host_memory_are_refused():
    part = {"name": "x", "arch": "hopper", "peak_bf16_flops": 1e15, "hbm_capacity": "80 GB",
            "hbm_bandwidth": "3 TB/s", "host_memory_gpus": 4, "source": "a datasheet"}  # fmt: skip
    with pytest.raises(ConfigError, match="my-gpu: host_memory_gpus: 4 GPUs share the host memory, and"):
        add_parts({"accelerators": {"my-gpu": part}})
