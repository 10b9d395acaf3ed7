"""Trial 8's command-line defects (issue 8): each bad input exits 2 with one line naming the option as typed
and the value."""

import pytest
from tests.cli.refusal import refused
from typer.testing import CliRunner

from aifabric.catalog.nccl import check_release_has_arch, nccl_release
from aifabric.cli.app import app
from aifabric.errors import ConfigError

runner = CliRunner()

B200 = """\
name: b200x2
accelerator: b200
gpus_per_node: 8
nodes: 2
scale_up: {kind: nvswitch}
scale_out: {nic: connectx-7, nic_speed: 400 Gb/s}
"""


@pytest.mark.parametrize("version", ["2.18.1", "2.24.3", "2.24"])
def test_a_release_older_than_blackwell_is_refused_for_b200(tmp_path, version):
    # nccl_releases.yaml: tuning.cc has a blackwell row from v2.25.1 (none at v2.24.3-1 and before)
    cluster = tmp_path / "b200.yaml"
    cluster.write_text(B200)
    args = ["collective", "-c", str(cluster), "--ranks", "8", "-s", "64MiB", "--nccl-version", version]
    refused(args, "--nccl-version", repr(version), "'b200'", "2.25.1")


def test_the_first_blackwell_release_and_hopper_on_the_oldest_are_accepted(tmp_path):
    cluster = tmp_path / "b200.yaml"
    cluster.write_text(B200)
    ok = runner.invoke(app, ["collective", "-c", str(cluster), "-s", "64MiB", "--nccl-version", "2.25.1"])
    assert ok.exit_code == 0, ok.stderr
    hopper = runner.invoke(app, ["collective", "-s", "64MiB", "--nccl-version", "2.18.1"])  # DGX H100
    assert hopper.exit_code == 0, hopper.stderr


def test_rubin_uses_the_blackwell_row_and_amd_is_not_checked():
    with pytest.raises(ConfigError, match="blackwell row from 2.25.1"):
        check_release_has_arch("2.20", nccl_release("2.20"), "rubin", "vr200")
    check_release_has_arch("2.18.1", nccl_release("2.18.1"), "cdna3", "mi300x")  # RCCL: not NCCL's tables
    check_release_has_arch(None, nccl_release(None), "blackwell", "b200")  # the newest is never refused


@pytest.mark.parametrize("size", ["-5", "0", "-1KiB"])
def test_a_size_at_or_below_zero_says_more_than_zero(size):
    refused(["collective", "-s", size], "--size", "> 0 bytes", repr(size))


def test_seed_says_spray_is_the_default_routing():
    refused(["collective", "--engine", "links", "--seed", "3", "-s", "1GiB"], "--seed", "spray (the default)")
