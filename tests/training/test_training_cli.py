"""``aifabric train`` and ``aifabric plan``: output, JSON, plot, and one-line errors with exit code 2."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cli.train import DispatcherChoice, ElementwiseChoice, EpScheduleChoice, FrameworkChoice
from aifabric.training.elementwise import ELEMENTWISE_KERNELS, MOE_DISPATCHERS
from aifabric.training.ep_overlap import EP_OVERLAP_SCHEDULES
from aifabric.training.layout import ParallelLayout
from aifabric.training.memory import FRAMEWORKS, memory_breakdown
from aifabric.training.models import get_model

runner = CliRunner()
GPT3 = ("--model", "gpt3-175b", "--cluster", "dgx-h100-superpod", "--nodes", "128")


def run(*args):
    return runner.invoke(app, list(args))


def test_train_prints_breakdown_networks_and_source(tmp_path):
    png = tmp_path / "step.png"
    r = run("train", *GPT3, "--tp", "8", "--pp", "8", "--dp", "16", "--microbatch", "1",
            "--global-batch", "1536", "--plot", str(png))  # fmt: skip
    assert r.exit_code == 0, r.stdout + r.stderr
    out = r.stdout
    assert "tp=8 pp=8 dp=16 sp b=1 B=1536 zero=1 recompute=selective" in out
    for needle in ("tokens/s", "TFLOP/s per GPU", "MFU", "bubble", "scale-up:", "scale-out:", "exposed",
                   "hidden", "reduce_scatter", "send_recv", "ml-engineering"):  # fmt: skip
        assert needle in out, needle
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_train_json_has_the_figures():
    r = run("train", *GPT3, "--tp", "8", "--pp", "8", "--microbatch", "1", "--global-batch", "1536", "--json")
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["layout"]["dp"] == 16 and data["n_gpus"] == 1024
    assert sum(data["breakdown_s"].values()) == pytest.approx(data["step_s"])
    assert 0 < data["mfu"] < 1 and data["tokens_per_s"] == pytest.approx(1536 * 2048 / data["step_s"])
    assert set(data["network_s"]) == {"scale-up", "scale-out"}
    assert {c["dim"] for c in data["comms"]} >= {"tp", "pp", "dp"}


def test_plan_forced_tp16_names_scale_out(tmp_path):
    png = tmp_path / "plan.png"
    r = run("plan", *GPT3, "--global-batch", "1536", "--top", "3", "--tp", "16", "--json", "--plot", str(png))
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert len(data["ranked"]) == 3 and all(st["layout"]["tp"] == 16 for st in data["ranked"])
    cmp = data["comparison"]
    assert cmp["blamed_network"] == "scale-out" and cmp["slower_by_s"] > 0
    assert "scale-out" in cmp["text"] and data["layouts_per_s"] > 0
    assert png.exists()


def test_plan_text_says_why():
    r = run("plan", "--model", "llama3-8b", "--cluster", "dgx-h100-superpod", "--nodes", "2",
            "--global-batch", "64", "--top", "2")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert "Fastest layouts" in r.stdout and "Winner tp=" in r.stdout and "layouts/s" in r.stdout


@pytest.mark.parametrize(
    "args,needle",
    [
        (("train", *GPT3, "--tp", "5", "--pp", "8"), "tp=5 does not divide n_heads=96"),
        (
            ("train", *GPT3, "--tp", "8", "--pp", "8", "--dp", "8"),
            # the command names the option, not the layout's field (trial 12): n_gpus -> --nodes
            "tp x pp x dp x cp = 8 x 8 x 8 x 1 = 512, but the GPUs of --nodes = 1024",
        ),
        (
            ("train", *GPT3, "--tp", "8", "--pp", "8", "--global-batch", "1000", "--microbatch", "4"),
            "-B/--global-batch=1000 is not divisible by -b/--microbatch x dp = 4 x 16 = 64",
        ),
        (
            ("train", *GPT3, "--tp", "1", "--pp", "1", "--global-batch", "1024", "--recompute", "none"),
            "the GPU has 85.5 GB",  # 81,559 MiB (nvidia-smi, NVIDIA/nccl #1264)
        ),
        (("train", "--model", "no-such-model"), "no preset named 'no-such-model'"),
        (("plan", *GPT3, "--tp", "5"), "tp=5 does not divide n_heads=96"),
        (("plan", "--model", "gpt3-175b", "--nodes", "1", "--global-batch", "8"), "no feasible layout"),
    ],
)
def test_bad_input_one_line_exit_2(args, needle):
    r = run(*args)
    assert r.exit_code == 2, r.stdout
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0]


# -- new-user trial fixes ------------------------------------------------------------------------------------

LLAMA405_16K = ("--model", "llama3-405b", "--cluster", "dgx-h100-superpod", "--nodes", "2048")


def test_train_accepts_the_layout_plan_recommends():
    # plan picks tp=4 pp=16 cp=8 v=4 for Llama 3 405B (126 layers) on 16,384 H100s; train without --dp used
    # to refuse it (strict 126 % 16 check, and a message saying "x 1" for v=4).
    r = run("plan", *LLAMA405_16K, "--top", "1", "--json")
    assert r.exit_code == 0, r.stderr
    best = json.loads(r.stdout)["ranked"][0]
    lay = best["layout"]
    assert 126 % (lay["pp"] * lay["virtual_pipeline_stages"]) != 0  # an uneven-stage layout, as in the report
    r = run("train", *LLAMA405_16K, "--tp", str(lay["tp"]), "--pp", str(lay["pp"]), "--cp", str(lay["cp"]),
            "--virtual-stages", str(lay["virtual_pipeline_stages"]),
            "--microbatch", str(lay["microbatch_size"]),
            "--zero", str(lay["zero_stage"]), "--recompute", lay["recompute"], "--json")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["layout"]["dp"] == lay["dp"]
    assert got["step_s"] == pytest.approx(best["step_s"], rel=1e-9)
    assert any("uneven stages" in n for n in got["notes"])


def test_train_pipeline_message_shows_the_real_virtual_stages():
    r = run("train", *LLAMA405_16K, "--tp", "4", "--pp", "64", "--cp", "4", "--virtual-stages", "4")
    assert r.exit_code == 2 and r.stdout == ""
    (line,) = r.stderr.strip().splitlines()
    assert "n_layers=126" in line and "64 x 4 = 256" in line and "x 1 " not in line


@pytest.mark.parametrize("command", ["train", "plan"])
def test_plot_path_problems_are_one_line_naming_plot(tmp_path, command):
    args = ("train", *GPT3, "--tp", "8", "--pp", "8") if command == "train" else ("plan", *GPT3, "--top", "1")
    # a missing folder is created, as `aifabric fabric --plot` does
    deep = tmp_path / "new" / "dir" / "step.svg"
    r = run(*args, "--plot", str(deep))
    assert r.exit_code == 0, r.stderr
    assert deep.exists() and b"<svg" in deep.read_bytes()[:500]
    assert f"plot: {deep}" in " ".join(r.stdout.split()) or str(deep) in r.stdout
    for target, needles in (
        (tmp_path, ("--plot", "is a directory")),
        (tmp_path / "x.txt", ("--plot", "png, pdf, svg", ".txt")),
        (tmp_path / "noext", ("--plot", "no extension", "png, pdf, svg")),
    ):
        r = run(*args, "--plot", str(target))
        assert r.exit_code == 2, (target, r.stdout)
        assert r.stdout == ""
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: --plot: "), r.stderr
        assert all(n in lines[0] for n in needles), lines[0]
        assert "Traceback" not in r.stderr
    assert not (tmp_path.parent / f"{tmp_path.name}.png").exists()  # no "dir.png" beside the directory


def test_plot_title_is_not_clipped(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from aifabric.cluster.presets import preset
    from aifabric.report.step_plot import plot_step_breakdown
    from aifabric.training import ParallelLayout, get_model, step_time

    # the report's case: one bar, "llama3-405b on 16384 GPUs of dgx-h100-superpod" was cut at both ends
    lay = ParallelLayout(tp=4, pp=16, dp=32, cp=8, virtual_pipeline_stages=4, sequence_parallel=True,
                         zero_stage=1, global_batch_size=1536, recompute="selective")  # fmt: skip
    st = step_time(get_model("llama3-405b"), lay, preset("dgx-h100-superpod", nodes=2048))
    figures = []
    close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig=None: figures.append(fig))  # keep the figure to measure it
    plot_step_breakdown([st], tmp_path / "one.png")
    (fig,) = figures
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    title = fig.axes[0].title
    box, page = title.get_window_extent(renderer), fig.bbox
    text = title.get_text()
    close(fig)
    assert box.x0 >= page.x0 and box.x1 <= page.x1 and box.y1 <= page.y1
    assert "llama3-405b" in text and "dgx-h100-superpod" in text


def test_plan_text_pp_wording_and_no_repeated_comparison():
    # --top 2: the runner-up (v=6 instead of v=3) differs from the winner by its PP traffic. One GEMM
    # efficiency for all shapes: by shape, recompute none edges out selective and is the runner-up instead.
    # TP 4 forced: in the H100's 81,559 MiB (85.5 GB) TP 2 without recomputation fits too (84 GB) and wins.
    r = run("plan", *GPT3, "--top", "2", "--pp", "16", "--tp", "4", "--no-gemm-shapes")
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    assert "PP group of 2 ranks" not in out
    assert "PP send/recv between adjacent stages (pp=16)" in out
    r = run("plan", *LLAMA405_16K, "--top", "3")
    assert r.exit_code == 0, r.stderr
    bodies = [line.split(": ", 1)[1] for line in r.stdout.splitlines()
              if line.startswith(("Runner-up: ", "Best other "))]  # fmt: skip
    assert bodies and len(bodies) == len(set(bodies))


def test_no_feasible_layout_says_how_far_off():
    r = run("plan", "--model", "gpt3-175b", "--nodes", "1", "--global-batch", "8")
    assert r.exit_code == 2 and r.stdout == ""
    (line,) = r.stderr.strip().splitlines()
    assert "no feasible layout" in line and "smallest memory need seen is" in line
    assert "85.5 GB of HBM" in line  # 81,559 MiB (nvidia-smi, NVIDIA/nccl #1264)
    need = float(line.split("smallest memory need seen is ")[1].split(" GB")[0])
    assert need > 80


def test_train_help_says_how_to_compare_with_the_megatron_paper():
    r = run("train", "--help")
    assert r.exit_code == 0
    text = " ".join(r.stdout.split())
    assert "Table 1" in text and "--recompute full --zero 0 --no-flash-attention --no-sp" in text
    # the options named there exist and reproduce the paper's 39.1B row (published 138, the model 133.1)
    r = run("train", "--model", "megatron-gpt-39.1b", "--cluster", "megatron-a100", "--nodes", "64",
            "--tp", "8", "--pp", "2", "--microbatch", "4", "--global-batch", "1536", "--recompute", "full",
            "--zero", "0", "--no-flash-attention", "--no-sp", "--no-overlap-grad-reduce",
            "--json")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["achieved_flops_per_gpu"] / 1e12 == pytest.approx(133.1, abs=0.1)


def test_gemm_efficiency_and_its_source_in_one_line_with_a_caution_for_mamf():
    a100 = run("train", "--model", "megatron-gpt-1.7b", "--cluster", "megatron-a100", "--nodes", "4",
               "--tp", "1", "--pp", "1", "--global-batch", "512", "--microbatch", "16")  # fmt: skip
    assert a100.exit_code == 0, a100.stderr
    assert "compute at 73.7% of peak (A100 GEMM, Mu Li transformers-benchmarks)" in a100.stdout
    assert "caution" not in a100.stdout.lower()
    # One efficiency for every GEMM (--no-gemm-shapes): the H100's MAMF figure, an upper bound, with a caution
    h100 = run("train", *GPT3, "--tp", "8", "--pp", "8", "--no-gemm-shapes")
    assert h100.exit_code == 0, h100.stderr
    assert "compute at 80.3% of peak (H100 GEMM, MAMF search" in h100.stdout
    assert "caution: the H100 GEMM efficiency comes from a max-over-shapes search (MAMF)" in h100.stdout
    assert "optimistic" in h100.stdout
    plan = run("plan", *GPT3, "--top", "1", "--no-gemm-shapes")
    assert plan.exit_code == 0, plan.stderr
    assert "Compute at 80.3% of peak (H100 GEMM" in plan.stdout and "upper bound" in plan.stdout
    data = json.loads(run("train", *GPT3, "--tp", "8", "--pp", "8", "--json", "--no-gemm-shapes").stdout)
    assert data["compute_profile"]["upper_bound"] is True
    assert data["compute_profile"]["summary"].startswith("compute at 80.3% of peak")
    assert data["compute_profile"]["gemm_table"] is None
    # By default the H100's weight GEMMs run at their shapes' measured throughput: no MAMF caution
    h100 = run("train", *GPT3, "--tp", "8", "--pp", "8")
    assert h100.exit_code == 0, h100.stderr
    assert "weight GEMMs by shape (measured table gemm_h100_sm90.csv)" in h100.stdout
    assert "caution" not in h100.stdout.lower()
    data = json.loads(run("train", *GPT3, "--tp", "8", "--pp", "8", "--json").stdout)
    assert data["compute_profile"]["gemm_table"] == "gemm_h100_sm90.csv"


def test_gemm_shapes_refused_on_a_gpu_without_a_measured_table():
    r = run("train", "--model", "megatron-gpt-1.7b", "--cluster", "megatron-a100", "--nodes", "4",
            "--tp", "1", "--pp", "1", "--global-batch", "512", "--gemm-shapes")  # fmt: skip
    assert r.exit_code == 2 and r.stdout == ""
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("error: gemm_shapes: no measured GEMM table for 'a100-sxm-80gb'")


def test_train_runs_llama3_table4_layout_with_its_embedding_chunks():
    # Llama 3 paper Table 4, 16,384 H100: TP8 PP16 DP128, 41 % BF16 MFU; Sec. 3.3.2's one-layer chunks (V = 8)
    # with the embedding and the output layer in chunks of their own. The same row is asserted in
    # test_training_public.py (model 0.425); the flag is what makes v = 8 valid for 126 layers.
    layout = ("--tp", "8", "--pp", "16", "--virtual-stages", "8", "--zero", "2", "-b", "1", "--global-batch",
              "2048", "--recompute", "none", "--tp-comm-overlap", "--json")  # fmt: skip
    r = run("train", *LLAMA405_16K, *layout, "--embedding-chunks")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["mfu"] == pytest.approx(0.41, rel=0.15)
    r = run("train", *LLAMA405_16K, *layout)
    assert r.exit_code == 2 and "is fewer than pp x --virtual-stages = 16 x 8 = 128" in r.stderr


def test_train_elementwise_choice_is_the_registrys():
    r = run("train", *GPT3, "--tp", "8", "--pp", "8", "--global-batch", "1536", "--elementwise", "eager")
    text = " ".join(r.stderr.replace("│", " ").split())
    assert (
        r.exit_code == 2
        and "'--elementwise': Value error, 'eager' is not one of 'fused', 'llama-eager'" in text
    )


def test_elementwise_choices_are_the_kernel_registry():
    assert [c.value for c in ElementwiseChoice] == list(ELEMENTWISE_KERNELS)


def test_dispatcher_choices_are_the_dispatcher_registry():
    assert [c.value for c in DispatcherChoice] == list(MOE_DISPATCHERS)


def test_train_moe_dispatcher_sets_the_kernels_the_step_charges():
    # Mixtral 8x7B with EP 4 holds 2 of the 8 experts per GPU. Per token and layer (k = 2, h elements of 2
    # bytes, TP 2 with sequence parallelism: the dispatcher on half the tokens, the sort by local expert on
    # all the slots the TP group gathered): Megatron-Core's eager alltoall dispatcher (5k + 3) / 2 + 4k =
    # 14.5, the fused one (2k + 3) / 2 + 4k = 11.5, flex (DeepEP, HybridEP) (4k + 1) / 2 = 4.5. Only the
    # memory-bound part of the step changes, in that order; a dense model refuses the option.
    mixtral = ("--model", "mixtral-8x7b", "--cluster", "dgx-h100-superpod", "--nodes", "4", "--tp", "2",
               "--ep", "4", "--seq-len", "4096", "--recompute", "full", "--global-batch", "64",
               "--json")  # fmt: skip
    runs = [
        run("train", *mixtral, *(("--moe-dispatcher", d.value) if d else ()))
        for d in (None, DispatcherChoice.alltoall, DispatcherChoice.alltoall_fused, DispatcherChoice.flex)
    ]
    assert all(r.exit_code == 0 for r in runs), [r.stderr for r in runs]
    default, eager, fused, flex = (json.loads(r.stdout)["breakdown_s"] for r in runs)
    assert default == eager
    assert eager["memory-bound"] > fused["memory-bound"] > flex["memory-bound"]
    assert eager["compute"] == fused["compute"] == flex["compute"]
    dense = run("train", *GPT3, "--tp", "8", "--pp", "8", "--moe-dispatcher", "flex")
    assert dense.exit_code == 2 and "--moe-dispatcher: model 'gpt3-175b' has no experts" in dense.stderr


def test_train_einsum_dispatcher_runs_on_a_torus_with_a_capacity():
    # MaxText's dropping MoE on a v6e-256 slice: GShard's dispatch and combine einsums add matrix products
    # (compute) and no permutation kernel; without --capacity-factor there are no slots: one line, exit 2.
    mixtral = ("--model", "mixtral-8x7b", "--cluster", "tpu-v6e-pod", "--zero", "3", "--seq-len", "4096",
               "--recompute", "full", "--global-batch", "256", "--json")  # fmt: skip
    capacity = ("--capacity-factor", "1.25")
    plain, ein = (
        run("train", *mixtral, *capacity),
        run("train", *mixtral, *capacity, "--moe-dispatcher", "einsum"),
    )
    assert plain.exit_code == 0 and ein.exit_code == 0, plain.stderr + ein.stderr
    p, e = json.loads(plain.stdout)["breakdown_s"], json.loads(ein.stdout)["breakdown_s"]
    assert e["compute"] > p["compute"] and e["memory-bound"] < p["memory-bound"]
    without = run("train", *mixtral, "--moe-dispatcher", "einsum")
    assert without.exit_code == 2 and without.stderr.count("\n") == 1
    assert "moe_dispatcher 'einsum' fills capacity slots" in without.stderr


def test_train_ep_comm_overlap_hides_the_expert_all_to_alls():
    # Mixtral 8x7B at 4,096 tokens on 4 DGX H100 nodes, TP 2 and EP 8 (two nodes per EP group): the flag moves
    # the all-to-alls off the critical path (DualPipe, Megatron-Core's EP overlap): less of them shows.
    mixtral = ("--model", "mixtral-8x7b", "--cluster", "dgx-h100-superpod", "--nodes", "4", "--tp", "2",
               "--ep", "8", "--seq-len", "4096", "--recompute", "full", "--global-batch", "256",
               "--json")  # fmt: skip
    alone, hidden = run("train", *mixtral), run("train", *mixtral, "--ep-comm-overlap")
    assert alone.exit_code == 0 and hidden.exit_code == 0, alone.stderr + hidden.stderr
    a, h = json.loads(alone.stdout), json.loads(hidden.stdout)
    assert h["breakdown_s"]["ep"] < a["breakdown_s"]["ep"] and h["step_s"] < a["step_s"]


@pytest.mark.parametrize(
    "args,message",
    [
        (("--model", "gpt3-175b", "--tp", "8", "--pp", "8"),
         "--ep-comm-overlap: model 'gpt3-175b' has no experts"),
        (("--model", "mixtral-8x7b", "--tp", "8"),
         "--ep-comm-overlap: overlaps the expert all-to-alls, and --ep 1 has none"),
    ],
)  # fmt: skip
def test_train_refuses_ep_comm_overlap_without_an_all_to_all(args, message):
    r = run("train", *args, "--nodes", "16", "--global-batch", "256", "--ep-comm-overlap")
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.strip() == f"error: {message}"


MIXTRAL_EP = ("--model", "mixtral-8x7b", "--cluster", "dgx-h100-superpod", "--nodes", "4", "--tp", "2",
              "--ep", "8", "--seq-len", "4096", "--global-batch", "256", "--json")  # fmt: skip


def test_train_ep_overlap_schedule_selects_megatrons_combined_1f1b():
    # The choices are the registry's; combined-1f1b leaves the unpaired first forward and last backward (1 of
    # the 16 microbatches) exposed: more shows than under DualPipe's pairing of every microbatch, less than
    # with the all-to-alls on the critical path.
    assert [c.value for c in EpScheduleChoice] == list(EP_OVERLAP_SCHEDULES)
    combined = ("--ep-comm-overlap", "--ep-overlap-schedule", "combined-1f1b")
    runs = [run("train", *MIXTRAL_EP, *extra) for extra in ((), ("--ep-comm-overlap",), combined)]
    assert all(r.exit_code == 0 for r in runs), [r.stderr for r in runs]
    alone, dualpipe, merged = (json.loads(r.stdout)["breakdown_s"]["ep"] for r in runs)
    assert dualpipe < merged < alone


COMBINED = ("--ep-comm-overlap", "--ep-overlap-schedule", "combined-1f1b")


@pytest.mark.parametrize(
    "command,args,message",
    [
        ("train", ("--model", "gpt3-175b", "--tp", "8", "--pp", "8", "--global-batch", "256",
                   "--ep-overlap-schedule", "combined-1f1b"),
         "--ep-overlap-schedule: model 'gpt3-175b' has no experts"),
        ("train", (*MIXTRAL_EP[:-1], "--ep-overlap-schedule", "combined-1f1b"),
         "--ep-overlap-schedule combined-1f1b: schedules --ep-comm-overlap, which is off"),
        ("train", (*MIXTRAL_EP[:-1], *COMBINED, "--pp", "2"),
         "ep_overlap_schedule='combined-1f1b' with pp=2 needs --virtual-stages > 1 (Megatron-Core)"),
        # plan refuses as train does (one rule, _refuse_ep_overlap): a dense model, --ep 1, no overlap
        ("plan", ("--model", "gpt3-175b", "--nodes", "16", "--global-batch", "256", *COMBINED),
         "--ep-overlap-schedule: model 'gpt3-175b' has no experts"),
        ("plan", ("--model", "mixtral-8x7b", "--nodes", "4", "--ep", "1", "--global-batch", "256", *COMBINED),
         "--ep-comm-overlap: overlaps the expert all-to-alls, and --ep 1 has none"),
        ("plan", (*MIXTRAL_EP[:-1], "--ep-overlap-schedule", "dualpipe"),
         "--ep-overlap-schedule dualpipe: schedules --ep-comm-overlap, which is off"),
    ],
)  # fmt: skip
def test_the_ep_overlap_schedule_is_refused_where_it_cannot_run(command, args, message):
    r = run(command, *args)
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.strip() == f"error: {message}"


def test_plan_takes_the_ep_overlap_schedule_as_train_does():
    # The planner's best Mixtral layout at EP 8 under the combined 1F1B schedule is timed by train with the
    # same option to the same step; under DualPipe's pairing of every microbatch less EP shows (the option
    # reaches the planner's step model, it is not dropped).
    r = run("plan", *MIXTRAL_EP, "--top", "1", *COMBINED)
    assert r.exit_code == 0, r.stderr
    best = json.loads(r.stdout)["ranked"][0]
    lay = best["layout"]
    assert lay["ep"] == 8
    r = run("train", *MIXTRAL_EP, "--pp", str(lay["pp"]), "--dp", str(lay["dp"]), "--cp", str(lay["cp"]),
            "--virtual-stages", str(lay["virtual_pipeline_stages"]),
            "--microbatch", str(lay["microbatch_size"]), "--zero", str(lay["zero_stage"]),
            "--recompute", lay["recompute"], *COMBINED)  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["step_s"] == pytest.approx(best["step_s"], rel=1e-9)
    dualpipe = run("plan", *MIXTRAL_EP, "--top", "1", "--ep-comm-overlap")
    assert json.loads(dualpipe.stdout)["ranked"][0]["breakdown_s"]["ep"] < best["breakdown_s"]["ep"]


def test_train_refuses_llama_eager_kernels_on_a_layernorm_model():
    # --elementwise llama-eager counts the Llama code's RMSNorm operator by operator; GPT-3 has LayerNorm.
    r = run(
        "train", *GPT3, "--tp", "8", "--pp", "8", "--global-batch", "1536", "--elementwise", "llama-eager"
    )
    assert r.exit_code == 2 and r.stdout == ""
    (line,) = r.stderr.strip().splitlines()
    assert (
        line.startswith("error: --elementwise: 'llama-eager' counts") and "'gpt3-175b' has layernorm" in line
    )


def test_train_expert_tp_1_folds_ep_inside_a_node():
    # Mixtral 8x7B on 4 DGX H100 nodes, TP 2, EP 8: carved from DP, an EP group strides over TP (ranks 0, 2,
    # ..., 14: two nodes, its all-to-all on InfiniBand); --expert-tp 1 folds it over TP x DP, ranks 0-7, one
    # NVLink domain: less EP time.
    mixtral = ("--model", "mixtral-8x7b", "--cluster", "dgx-h100-superpod", "--nodes", "4", "--tp", "2",
               "--ep", "8", "--seq-len", "4096", "--recompute", "full", "--global-batch", "256",
               "--json")  # fmt: skip
    carved, folded = run("train", *mixtral), run("train", *mixtral, "--expert-tp", "1")
    assert carved.exit_code == 0 and folded.exit_code == 0, carved.stderr + folded.stderr
    c, f = json.loads(carved.stdout), json.loads(folded.stdout)
    assert f["breakdown_s"]["ep"] < c["breakdown_s"]["ep"]


def test_train_refuses_an_expert_tp_that_does_not_fit_in_one_line():
    r = run("train", "--model", "mixtral-8x7b", "--nodes", "4", "--tp", "2", "--ep", "8", "--expert-tp", "3",
            "--global-batch", "256")  # fmt: skip
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.strip() == (
        "error: expert_tp=3 does not divide the experts' ffn width 14336 of model 'mixtral-8x7b'"
    )


def test_plan_takes_elementwise_and_embedding_chunks_as_train_does():
    # Llama 3's pipeline (paper Sec. 3.3.2: embedding and output layer in layer places) and Meta's eager
    # kernels: the planner's figure for its best layout is train's figure for the same layout.
    small = ("--model", "llama3-8b", "--cluster", "h100-ib-2node", "--global-batch", "64")
    opts = ("--elementwise", "llama-eager", "--embedding-chunks")
    r = run("plan", *small, "--pp", "2", "--top", "1", "--json", *opts)
    assert r.exit_code == 0, r.stderr
    best = json.loads(r.stdout)["ranked"][0]
    lay = best["layout"]
    r = run("train", *small, "--tp", str(lay["tp"]), "--pp", str(lay["pp"]), "--cp", str(lay["cp"]),
            "--virtual-stages", str(lay["virtual_pipeline_stages"]),
            "--microbatch", str(lay["microbatch_size"]),
            "--zero", str(lay["zero_stage"]), "--recompute", lay["recompute"], "--json", *opts)  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["step_s"] == pytest.approx(best["step_s"], rel=1e-9)
    plain = run("plan", *small, "--pp", "2", "--top", "1", "--json")
    assert json.loads(plain.stdout)["ranked"][0]["step_s"] != pytest.approx(best["step_s"], rel=1e-6)
    bad = run("plan", *small, "--pp", "1", "--embedding-chunks")
    assert bad.exit_code == 2 and "--embedding-chunks" in bad.stderr and "--pp 1" in bad.stderr
    bad = run("plan", *small, "--elementwise", "eager")
    assert bad.exit_code == 2


def test_framework_choices_are_the_registry():
    assert [c.value for c in FrameworkChoice] == list(FRAMEWORKS)


LLAMA8_2NODE = ("--model", "llama3-8b", "--cluster", "h100-ib-2node", "--global-batch", "64")


def test_train_framework_prices_torchtitans_selective_recompute():
    # Llama 3 8B, ZeRO-2 over 16 H100s, selective recompute: torchtitan repeats wk, wo, w3 and the
    # element-wise operators where Megatron repeats the attention core; its loss holds 12 bytes per logit.
    layout = ("--dp", "16", "--zero", "2", "--recompute", "selective", "--json")
    mega = run("train", *LLAMA8_2NODE, *layout)
    titan = run("train", *LLAMA8_2NODE, *layout, "--framework", "torchtitan")
    assert mega.exit_code == 0 and titan.exit_code == 0, mega.stderr + titan.stderr
    m, t = json.loads(mega.stdout), json.loads(titan.stdout)
    assert t["breakdown_s"]["memory-bound"] > m["breakdown_s"]["memory-bound"]
    # memory as the memory model counts it for that framework (op-level checkpointing keeps less here)
    lay = ParallelLayout(dp=16, zero_stage=2, recompute="selective", global_batch_size=64)
    for data, framework in ((m, "megatron"), (t, "torchtitan")):
        mb = memory_breakdown(get_model("llama3-8b"), lay, flash_attention=True, framework=framework)
        assert data["memory_bytes_per_gpu"] == pytest.approx(mb.total_bytes, rel=1e-9)


@pytest.mark.parametrize("command", ["train", "plan"])
def test_unknown_framework_is_one_line_naming_the_option(command):
    r = run(command, *LLAMA8_2NODE, "--framework", "deepspeed")
    text = " ".join(r.stderr.replace("│", " ").split())
    assert r.exit_code == 2 and r.stdout == ""
    assert "'--framework': Value error, 'deepspeed' is not one of 'megatron', 'torchtitan'" in text


def test_plan_takes_the_framework_as_train_does():
    r = run("plan", *LLAMA8_2NODE, "--top", "1", "--json", "--framework", "torchtitan")
    assert r.exit_code == 0, r.stderr
    best = json.loads(r.stdout)["ranked"][0]
    lay = best["layout"]
    r = run("train", *LLAMA8_2NODE, "--tp", str(lay["tp"]), "--pp", str(lay["pp"]), "--cp", str(lay["cp"]),
            "--virtual-stages", str(lay["virtual_pipeline_stages"]),
            "--microbatch", str(lay["microbatch_size"]), "--zero", str(lay["zero_stage"]),
            "--recompute", lay["recompute"], "--framework", "torchtitan", "--json")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["step_s"] == pytest.approx(best["step_s"], rel=1e-9)
