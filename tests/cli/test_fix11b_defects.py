"""Input defects of a re-trial (fix11b): message sizes a GPU's HBM cannot hold, and the names refusals give
(the option as typed; what the cluster file lacks). Each refusal is exit code 2 and one line."""

from pathlib import Path

import pytest
from tests.cli.refusal import refused
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.collectives.buffers import out_of_place_bytes
from aifabric.engines.api import collective_time
from aifabric.engines.formula import formula_collective
from aifabric.errors import ConfigError

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py


def tpu_file(tmp_path: Path, scale_up: str, scale_out: str = "null") -> str:
    """A 128-chip tpu-v5p cluster file ``t.yaml`` with the ``scale_up`` line given ("" for none)."""
    p = tmp_path / "t.yaml"
    p.write_text(
        f"name: t\naccelerator: tpu-v5p\ngpus_per_node: 4\ngpus: 128\n{scale_up}scale_out: {scale_out}\n"
    )
    return str(p)


# -- 1. a message must fit one GPU's HBM (h100-sxm: 80 GiB less the driver's reserve, nvidia-smi 81,559 MiB =
# 85.52 GB, NVIDIA/nccl #1264) -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["all_reduce", "-s", "500GB"], "--size: 500 GB is more than the 85.52 GB HBM of one h100-sxm GPU"),
        (["all_gather", "--min", "1GiB", "--max", "1TiB"], "--max: 1.1 TB is more than the 85.52 GB HBM"),
        (["all_gather", "--min", "86GB", "--max", "100GB"], "--max: 86 GB is more than the 85.52 GB HBM"),
    ],
)
def test_a_size_no_gpu_buffer_holds_even_in_place_is_refused(args, said):
    line = refused(["collective", *args, "-c", "h100-ib-2node"], said, "even in place", "out of place")
    assert ("whole receive buffer" in line) == (
        args[0] == "all_gather"
    )  # all_gather's in-place buffer: receive


def test_a_size_that_fits_only_in_place_runs():
    """79 GB all_reduce: 158 GB out of place (send and receive, nccl-tests), 79 GB in place: it runs."""
    r = runner.invoke(app, ["collective", "all_reduce", "-c", "h100-ib-2node", "-s", "79GB", "--json"])
    assert r.exit_code == 0, r.stderr
    assert out_of_place_bytes("all_reduce", 79e9, 16) == 158e9 > 80e9


def test_a_min_above_the_default_top_says_so():
    refused(
        ["collective", "-c", "h100-ib-2node", "--min", "81GB"], "--min: '81GB' is above the sweep's default"
    )


def test_the_default_sweep_stops_at_16_gib_on_an_80_gb_gpu():
    r = runner.invoke(app, ["collective", "all_gather", "-c", "h100-ib-2node", "--json"])
    assert r.exit_code == 0, r.stderr
    assert '"message_bytes": 17179869184.0' in r.stdout  # 16 GiB, the nccl-tests-like default top


def test_the_api_refuses_what_the_cli_refuses():
    spec = preset("h100-ib-2node")
    for call in (
        lambda: formula_collective("all_reduce", 500e9, spec),
        lambda: collective_time("all_reduce", 500e9, spec),
        lambda: collective_time("all_gather", 1 << 40, spec, engine="links"),
    ):
        with pytest.raises(ConfigError, match=r"^size: .* is more than the 85.52 GB HBM of one h100-sxm GPU"):
            call()
    assert formula_collective("all_reduce", 500e9, spec, hbm_check=False).time_s > 0  # a logical message


@pytest.mark.parametrize(
    ("op", "n", "expected"),
    [("all_reduce", 8, 2.0), ("all_gather", 8, 1.125), ("reduce_scatter", 4, 1.25), ("send_recv", 2, 2.0)],
)
def test_out_of_place_buffers_follow_nccl_tests(op, n, expected):
    """nccl-tests 2.19.6 *GetCollByteCount: all_gather send S/n receive S; reduce_scatter send S receive
    S/n; all_reduce and send_recv S each."""
    assert out_of_place_bytes(op, 1.0, n) == pytest.approx(expected)


# -- 3. names in messages --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--slice", "4x4x4", "--twisted"], "--twisted: the 4x4x4 slice cannot be twisted"),
        (["--engine", "links"], "--engine: the links and flow engines do not wire a torus"),
        (["--ranks", "7"], "--ranks: 7 chips make no tpu-v5p slice"),
        (["--ranks", "100000"], "--ranks: 100000 ranks at stride 1 need 100000 GPUs"),
    ],
)
def test_tpu_refusals_name_the_option_typed(args, said):
    refused(["collective", "all_reduce", "-c", "tpu-v5p-pod", "-s", "1GB", *args], said)


def test_a_bad_cluster_names_the_option():
    refused(["collective", "-c", "nope", "-s", "1GB"], "--cluster: 'nope' is neither a preset")


def test_a_twist_from_the_file_keeps_the_field(tmp_path):
    path = tpu_file(tmp_path, "scale_up: {kind: torus, gpus: 128, torus_dims: [4, 4, 8], twisted: true}\n")
    refused(["collective", "-c", path, "-s", "1GB", "--slice", "4x4x4"], "scale_up.twisted: the 4x4x4 slice")


@pytest.mark.parametrize(
    ("scale_up", "said"),
    [("", "(scale_up missing)"), ("scale_up: {gpus: 128}\n", "(scale_up.kind missing)"),
     ("scale_up: {kind: nvswitch}\n", "(got nvswitch)")],
)  # fmt: skip
def test_a_tpu_file_says_what_its_scale_up_lacks(tmp_path, scale_up, said):
    path = tpu_file(tmp_path, scale_up)
    refused(["collective", "-c", path, "-s", "1GB"], "t.yaml: scale_up.kind: tpu-v5p is a TPU", said)


def test_a_slice_bigger_than_the_domain_says_to_set_the_pod(tmp_path):
    """scale_up.gpus defaults to gpus_per_node (4 chips: a 1x2x2 torus): 4x4x8 cannot be cut from it."""
    ib = "{nic: connectx-7, fabric: infiniband, switch: quantum-2-qm9700, tiers: 2}"
    path = tpu_file(tmp_path, "scale_up: {kind: torus}\n", ib)
    refused(
        ["collective", "-c", path, "-s", "1GB", "--slice", "4x4x8"],
        "--slice: 4x4x8 does not fit the 1x2x2 torus of one scale-up domain (4 chips)",
        "scale_up.gpus",
        "scale_up.torus_dims",
    )
