"""Input defects a new-user trial found (trial 12, #6-#10 and the minor ones): each test runs one command,
its docstring holds the command, what it printed and what it does now."""

import json

import pytest
from tests.cli.refusal import refused
from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py


# -- #8, #9: a --fail that names nothing; a model file that is no model file --------------------------------


def test_an_empty_failure_is_refused():
    """``aifabric fabric all_reduce --nodes 16 --fail ''`` exited 0 and ran with no failure, where
    ``--fail foo:1`` is refused. Now: exit 2, one line naming --fail and the empty value."""
    refused(["fabric", "all_reduce", "--nodes", "16", "--fail", ""], "--fail")


def test_a_model_file_that_is_not_yaml_or_json_is_named_as_a_file(tmp_path):
    """``aifabric train -m empty.txt`` (an existing file) printed ``model: no preset named 'empty.txt';
    presets: ...`` (a 400-character list of presets). Now: exit 2, one line saying the file exists but a
    model file is .yaml/.yml or a config.json, naming the file."""
    path = tmp_path / "model.txt"
    path.write_text("")
    line = refused(["train", "-m", str(path)], "model.txt")
    assert "no preset named" not in line


# -- #6, #7, #10: values that overflow or lose their sign ---------------------------------------------------


def test_checkpoint_bytes_per_parameter_that_overflow_are_refused():
    """``aifabric checkpoint --nodes 16 -m llama3-70b --storage ddn-ai400x2-turbo --storage-units 4
    --weight-bytes 1e308 --optimizer-bytes 1e308`` exited 0 and printed ``checkpoint inf PB = 70.55 B params
    x inf B/param`` and ``write (sync) inf s``: each is finite, their sum is not. Now: exit 2, one line
    naming --weight-bytes/--optimizer-bytes."""
    args = ["checkpoint", "--nodes", "16", "-m", "llama3-70b", "--storage", "ddn-ai400x2-turbo"]
    args += ["--storage-units", "4", "--weight-bytes", "1e308", "--optimizer-bytes", "1e308"]
    refused(args, "bytes")


def test_checkpoint_nan_weight_bytes_is_not_called_negative():
    """``aifabric checkpoint --nodes 16 -m llama3-70b --weight-bytes nan`` printed ``Invalid value for
    '--weight-bytes': Input should be greater than or equal to 0``: nan is not below 0. Now: exit 2, one
    line saying the value is not a finite number (as ``--weight-bytes inf`` does)."""
    line = refused(
        ["checkpoint", "--nodes", "16", "-m", "llama3-70b", "--weight-bytes", "nan"], "--weight-bytes"
    )
    assert "finite" in line


def test_announcement_keeps_the_sign_of_a_figure():
    """``aifabric announcement '72 GPUs with -130 TB/s of NVLink'`` exited 0 with ``130 TB/s | matches``: the
    minus sign was dropped and a negative bandwidth verified. Now: exit 2 naming '-130 TB/s', or no claim of
    130 TB/s reported as matching."""
    r = runner.invoke(app, ["announcement", "72 GPUs with -130 TB/s of NVLink", "--json"])
    if r.exit_code == 2:
        return
    claims = json.loads(r.stdout)
    assert not [c for c in claims if "TB/s" in c["claim"] and c["status"] == "matches"], claims


# -- minor: checkpoint's one rule per option --------------------------------------------------------------

CKPT = ["checkpoint", "--nodes", "16", "-m", "llama3-70b", "--storage", "ddn-ai400x2-turbo"]
CKPT += ["--storage-units", "4"]


def test_checkpoint_overflowing_size_names_its_inputs():
    """``--params 1e300 --weight-bytes 1e10``: both finite, the size 1e310 B is not. The refusal names the
    options the figure comes from."""
    args = ["checkpoint", "--nodes", "16", "--params", "1e300", "--weight-bytes", "1e10"]
    refused([*args, "--storage", "ddn-ai400x2-turbo", "--storage-units", "4"], "--params", "--weight-bytes")


def test_checkpoint_a_tiny_step_time_names_step_time():
    """``--step-time 1e-320s``: the drain over a step is not finite; the refusal names --step-time."""
    refused([*CKPT, "--step-time", "1e-320s"], "--step-time", "not a finite number")


@pytest.mark.parametrize("value", ["-1s", "0s", "-2 h"])
@pytest.mark.parametrize("option", ["--step-time", "--mtbf"])
def test_checkpoint_a_duration_that_is_not_positive_gets_one_rule(option, value):
    """``--step-time -1s`` said ``duration must be >= 0`` while ``--step-time 0s`` said ``must be > 0``: one
    rule now, ``> 0``, for both and for --mtbf."""
    line = refused([*CKPT, option, value], option, "> 0", value)
    assert ">= 0" not in line


def test_checkpoint_negative_weight_bytes_says_at_least_zero():
    """``--weight-bytes -1``: still refused as below 0, by the same check that refuses nan and inf."""
    refused([*CKPT, "--weight-bytes", "-1"], "--weight-bytes", ">= 0")


def test_checkpoint_nodes_and_gpus_are_one_or_the_other():
    """``checkpoint --nodes 16 --gpus 7`` said ``gpus=7 does not fill whole nodes``: it took --gpus and
    dropped --nodes. Both resize the cluster; now: only one may be given."""
    refused([*CKPT, "--gpus", "7"], "--nodes", "--gpus", "only one")


# -- #8: one reading of --fail for the fabric and the management network ----------------------------------


@pytest.mark.parametrize(
    ("value", "needle"),
    [("", "empty value"), ("spine:1,", "empty item"), ("spine", "KIND:ARG"), ("router:1", "unknown")],
)
@pytest.mark.parametrize("command", [["fabric", "all_reduce", "--nodes", "16"], ["cluster", "mgmt"]])
def test_fail_is_read_the_same_by_fabric_and_mgmt(command, value, needle):
    """``fabric --fail ''`` ran with no failure while ``cluster mgmt --fail ''`` was refused. Both read
    --fail with one parser now (:func:`aifabric.cluster.fail_items.fail_items`) and refuse the same way."""
    refused([*command, "--fail", value], "--fail", needle)


def test_fail_items_are_comma_separated_or_repeated_in_both():
    """``--fail a,b`` and ``--fail a --fail b`` are the same failures, in the fabric and in mgmt."""
    mgmt = ["cluster", "mgmt", "--nodes", "16", "--json"]
    one = runner.invoke(app, [*mgmt, "--fail", "mgmt-rack:0,mgmt-rack:1"])
    two = runner.invoke(app, [*mgmt, "--fail", "mgmt-rack:0", "--fail", "mgmt-rack:1"])
    assert one.exit_code == two.exit_code == 0, (one.stderr, two.stderr)
    assert one.stdout == two.stdout
    fab = ["fabric", "all_reduce", "--nodes", "16", "--size", "64MiB", "--json"]
    one = runner.invoke(app, [*fab, "--fail", "spine:0,fabric:5%"])
    two = runner.invoke(app, [*fab, "--fail", "spine:0", "--fail", "fabric:5%"])
    assert one.exit_code == two.exit_code == 0, (one.stderr, two.stderr)
    assert json.loads(one.stdout)["failed_links"] == json.loads(two.stdout)["failed_links"] > 0


def test_a_model_folder_is_named_as_a_folder(tmp_path):
    """``train -m DIR``: an existing folder is not looked up among the presets either."""
    line = refused(["train", "-m", str(tmp_path)], "is a folder", "config.json")
    assert "no preset named" not in line


def test_a_preset_name_wins_over_a_file_of_that_name(tmp_path, monkeypatch):
    """A file named ``llama3-8b`` in the working folder does not hide the preset of that name."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "llama3-8b").write_text("")
    r = runner.invoke(app, ["train", "-m", "llama3-8b", "--nodes", "16", "--json"])
    assert "not a model file" not in r.stderr


# -- minor: train's refusals name its options -------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "needles", "fields"),
    [
        (["-B", "1"], ["-B/--global-batch=1", "-b/--microbatch"], ["global_batch_size", "microbatch_size"]),
        (["--nodes", "1", "--dp", "3"], ["--nodes"], ["n_gpus"]),
        (["--nodes", "1", "--virtual-stages", "2"], ["--virtual-stages"], ["virtual_pipeline_stages"]),
    ],
)
def test_train_refusals_name_the_options(args, needles, fields):
    """``train -B 1`` said ``global_batch_size=1 is not divisible by microbatch_size x dp``, ``--dp 3``
    said ``but n_gpus = 8``: fields of the layout, not options of the command. Now the options."""
    line = refused(["train", *args], *needles)
    assert not [f for f in fields if f in line], line


# -- minor: the collectives a reduced two-rank table may be -----------------------------------------------

TWO_GPU_SUM_LOG = """\
# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1
#
# Using devices
#  Rank  0 Group  0 Pid  1 on node1 device  0 [0x1b] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  2 on node1 device  1 [0x1b] NVIDIA H100 80GB HBM3
#
#                                                     out-of-place                       in-place
#    size       count   type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#     (B)  (elements)                            (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
 1073741824  268435456  float    sum      -1   5822.0  184.43  184.43      0   5822.0  184.43  184.43      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 184
"""


def test_a_two_rank_sum_table_names_only_the_collectives_it_fits(tmp_path):
    """A 2-GPU table of ``sum -1`` rows with count = size / 4 (float): all_reduce or sendrecv (nccl-tests
    prints count = size / word for both). The trial saw all_gather/alltoall named as lookalikes; those print
    redop ``none`` and count = size / (ranks x word). Pinned: the refusal names the two it fits, not them."""
    path = tmp_path / "nt2.log"
    path.write_text(TWO_GPU_SUM_LOG)
    line = refused(["nccl-tests", "compare", str(path)], "all_reduce", "sendrecv", "--collective")
    assert "all_gather" not in line and "alltoall" not in line
