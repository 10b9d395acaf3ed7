"""Input and message defects a new-user trial found (issue 10): each refusal is exit code 2 and one line that
names the option as typed, or the field and the file; names with control characters print as ``\\xNN`` at
every output edge (terminal, HTML, figures)."""

import textwrap
import warnings
from pathlib import Path

import pytest
from tests.cli.refusal import refused
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.errors import ConfigError
from aifabric.report.figures import cluster_drawing

runner = CliRunner()

H100 = "name: trial\naccelerator: h100-sxm\ngpus_per_node: 8\nnodes: 2\n"


pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py


def write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return str(p)


def collective(path: str, *more: str) -> list[str]:
    return ["collective", "-c", path, "-s", "1GiB", *more]


# -- 1. integers: YAML booleans and floats are not counts --------------------------------------------------


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (H100.replace("nodes: 2", "nodes: true"), "nodes: expected an integer, got true"),
        (H100.replace("nodes: 2", "nodes: 2.5"), "nodes: expected an integer, got 2.5"),
        (H100.replace("nodes: 2", "nodes: 2.0"), "nodes: expected an integer, got 2.0"),
        (
            H100.replace("gpus_per_node: 8", "gpus_per_node: true"),
            "gpus_per_node: expected an integer, got true",
        ),
        (H100 + "scale_out: {tiers: true}\n", "scale_out.tiers: expected an integer, got true"),
        (H100 + "scale_out: {nics_per_gpu: true}\n", "scale_out.nics_per_gpu: expected an integer, got true"),
        (H100 + "scale_out: {rails: false}\n", "scale_out.rails: expected an integer, got false"),
    ],
)
def test_yaml_booleans_and_floats_are_not_integers(tmp_path, text, said):
    path = write(tmp_path, "c.yaml", text)
    line = refused(collective(path), said, "c.yaml")
    assert "(got" not in line  # the value is said once


def test_torus_dims_refuse_a_boolean():
    with pytest.raises(ConfigError, match=r"scale_up.torus_dims.2: expected an integer, got true"):
        ClusterSpec.from_dict(
            {
                "accelerator": "tpu-v5p",
                "gpus_per_node": 4,
                "gpus": 64,
                "scale_up": {"kind": "torus", "gpus": 64, "torus_dims": [4, 4, True]},
                "scale_out": None,
            }
        )


def test_catalogue_part_refuses_a_boolean_count(tmp_path):
    parts = write(
        tmp_path,
        "parts.yaml",
        """
        nics:
          n1:
            name: user NIC
            speed: 400 Gb/s
            ports: true
            power: 20 W
            payload_efficiency: 0.95
            latency: 2 us
            source: "test part: the user's own datasheet"
        """,
    )
    line = refused(["--catalog", parts, *collective("h100-ib-2node")], "parts.yaml", "nics.n1: ports")
    assert line.endswith("expected an integer, got true")


# -- 2. a TPU needs its torus; a GPU has none --------------------------------------------------------------


def test_tpu_without_a_torus_is_refused(tmp_path):
    path = write(tmp_path, "t.yaml", "name: t\naccelerator: tpu-v5p\ngpus_per_node: 4\nnodes: 2\n")
    refused(collective(path), "t.yaml: scale_up.kind: tpu-v5p is a TPU", "kind: torus", "(scale_up missing)")


def test_gpu_in_a_torus_is_refused(tmp_path):
    path = write(tmp_path, "g.yaml", H100 + "scale_up: {kind: torus}\nscale_out: null\n")
    refused(collective(path), "g.yaml: scale_up.kind: torus is a TPU's ICI; h100-sxm is a GPU")


# -- 3. NCCL-only options on a TPU torus -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--no-nvls",), "--no-nvls: a TPU torus (tpu-v5p-pod) runs XLA collectives, not NCCL"),
        (("--nccl-version", "2.21.5"), "--nccl-version: a TPU torus (tpu-v5p-pod) runs XLA collectives"),
        (("--calibration", "/nonexist.yaml"), "--calibration: a TPU torus (tpu-v5p-pod)"),
        (("--env", "NCCL_ALGO=Ring"), "NCCL variables do not apply"),
    ],
)
def test_nccl_options_on_a_tpu_torus_are_refused(args, said):
    refused(collective("tpu-v5p-pod", *args), said)


# -- 4. a forced algorithm that does not apply, on the links and flow engines ------------------------------


@pytest.mark.parametrize(("algo", "engine"), [("hierarchical", "links"), ("flat_ring", "flow")])
def test_links_and_flow_engines_refuse_an_algorithm_that_does_not_apply(algo, engine):
    # v100-pcie-4gpu: one PCIe domain of 4 GPUs; hierarchical and flat_ring need several domains.
    line = refused(
        collective("v100-pcie-4gpu", "--algo", algo, "--engine", engine),
        f"--algo: '{algo}' does not apply to all_reduce",
        "possible: ring",
    )
    assert "link_bytes_per_s" not in line


# -- 5. rails that do not divide a node's NIC ports --------------------------------------------------------


def test_rails_that_do_not_divide_the_node_are_named_with_the_file(tmp_path):
    path = write(tmp_path, "r.yaml", H100 + "scale_out: {nic: connectx-7, rails: 3}\n")
    line = refused(collective(path), "r.yaml: scale_out.rails: 3 does not divide the 8 NIC ports")
    assert "oversubscription" not in line


# -- 6. the option as typed, the file named ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (("--nccl-version", "abc"), "error: --nccl-version: 'abc' is not a version"),
        (("--calibration", "/nonexist.yaml"), "error: --calibration: "),
        (("--engine", "flow", "--transport", "bogus"), "error: --transport: unknown 'bogus'"),
    ],
)
def test_errors_name_the_option_as_typed(args, start):
    line = refused(collective("h100-ib-2node", *args))
    assert line.startswith(start), line


def test_nccl_tests_compare_names_calibration():
    log = str(
        Path(__file__).parents[1] / "robustness" / "data" / "case_01_dgx_h100_allreduce_single_node.txt"
    )
    refused(["nccl-tests", "compare", log, "--calibration", "/nonexist.yaml"], "--calibration: ")


def test_bad_link_reference_in_a_user_catalogue_names_the_file(tmp_path):
    parts = write(
        tmp_path,
        "acc.yaml",
        """
        accelerators:
          acc1:
            name: user GPU
            arch: hopper
            peak_bf16_flops: 900e12
            hbm_capacity: 80 GB
            hbm_bandwidth: 3000 GB/s
            nvlink: nvlink-bogus
            source: "test part: the user's own datasheet"
        """,
    )
    refused(["--catalog", parts, *collective("h100-ib-2node")], "acc.yaml: accelerators.acc1: nvlink")


# -- 7. algorithms the stated release lacks; NCCL_ALGO named as NCCL_ALGO ----------------------------------


def test_pat_on_a_release_before_2_23_names_the_release(tmp_path):
    # nccl_releases.yaml: pat first costed in 2.23.4 (pat_bw_factor null before 2.23).
    path = write(tmp_path, "one.yaml", "name: one\naccelerator: h100-sxm\ngpus_per_node: 1\nnodes: 4\n")
    line = refused(
        ["collective", "all_gather", "-c", path, "-s", "1GiB", "--nccl-version", "2.21.5", "--algo", "pat"],
        "--algo: NCCL 2.21.5 has no pat all_gather (NCCL runs it from 2.23.4 on)",
    )
    assert "no algorithm/protocol left" not in line


def test_nccl_algo_that_leaves_nothing_is_named_as_nccl_algo():
    line = refused(
        ["collective", "all_gather", "-c", "h100-ib-2node", "--nodes", "1", "-s", "1GiB"]
        + ["--env", "NCCL_ALGO=Tree"],
        "NCCL_ALGO=Tree: no algorithm it enables runs all_gather here",
    )
    assert "--algo" not in line


# -- 8. control characters at every output edge ------------------------------------------------------------


def test_escape_in_a_name_is_shown_on_the_terminal_and_in_html(tmp_path):
    path = write(tmp_path, "e.yaml", H100.replace("name: trial", 'name: "x\\e[31m"'))
    html = tmp_path / "r.html"
    r = runner.invoke(app, [*collective(path), "--html", str(html)])
    assert r.exit_code == 0, r.stderr
    assert "x\\x1b[31m" in r.stdout and "\x1b" not in r.stdout
    page = html.read_text()
    assert "\x1b" not in page
    assert "<title>aifabric collective: all_reduce on 16 ranks of x\\x1b[31m" in page
    assert "Glyph" not in r.stderr


def test_figures_show_control_characters_without_a_glyph_warning():
    spec = preset("h100-ib-2node").with_changes(name="x\x1b[31m")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib's "Glyph 27 missing" would raise
        svg = cluster_drawing(spec, None)
    assert "\x1b" not in svg and "x\\x1b[31m" in svg


# -- 9. usability ------------------------------------------------------------------------------------------


def test_send_recv_on_many_ranks_runs_the_ring_of_sends():
    # nccl-tests sendrecv on 16 ranks: ranks 7 and 15 send 1 GiB over their own 400 Gb/s NIC, the slowest
    # hop: busbw = one NIC's NCCL figure (49.15 GB/s, as a pair across nodes), not a refusal
    r = runner.invoke(app, ["collective", "send_recv", "-c", "h100-ib-2node", "-s", "1GiB"])
    assert r.exit_code == 0, r.output
    assert "16 ranks each send to the next" in r.stdout and "busbw 49.1" in r.stdout


def test_env_help_lists_every_variable_at_80_columns():
    r = runner.invoke(app, ["collective", "--help"], env={"COLUMNS": "80", "TERMINAL_WIDTH": "80"})
    assert r.exit_code == 0
    assert "IB_QPS_PER_CONNECTION" in r.stdout and "…" not in r.stdout.split("--env")[1].split("--trace")[0]
